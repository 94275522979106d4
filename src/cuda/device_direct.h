// Collectives of ranks that share one GPU, run on the GPU without staging (one file each:
// allreduce_device_direct.cc, broadcast_, reduce_, allgather_, reduce_scatter_).
//
// Every one starts the same way: through a small host all-gather, the ranks tell each other
// where their buffers are (the GPU's identity, the process, the raw pointers, and IPC handles for
// ranks of other processes). The all-gather is also the starting line: a rank joins it only once
// its inputs are ready. Then each rank runs one kernel (DeviceApi::reduceAsync: up to 8 sources
// combined, the result written to up to 8 destinations) over its part of the work, reading and
// writing its peers' buffers directly, and a host barrier holds everyone until all parts are
// written, so that no rank reuses its buffers while a peer still reads or writes them.
//
// Each rank reads and writes only its own part of each buffer, and reads it before writing it,
// so every in-place form works as is.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/comm.h"
#include "core/executor.h"
#include "cuda/device_api.h"

namespace weft::device {

// Runs a host operation on the communicator (the exchanges and barriers around the kernels).
using HostRunner = std::function<Status(const Op&)>;
// Waits, within the operation's deadline, until the work queued on stream so far has finished.
using StreamWaiter = std::function<Status(Stream, const std::string& what)>;

// Every rank's buffers of one call, as this process reaches them (nullptr where unused).
struct DirectBuffers {
  std::vector<const void*> send;
  std::vector<void*> recv;
};

// What a direct collective needs.
struct DirectContext {
  weftComm* comm;
  const CollArgs& call;
  const DirectBuffers& buffers;
  Stream stream;
  const StreamWaiter& waitFor;
};
using DirectFn = Status (*)(const DirectContext& context);

// The direct form of a collective, or nullptr where it has none. Whether it runs is the tuner's
// choice (tune/device_paths.h).
DirectFn directFormOf(CollType coll);
// Why the tuner offered no direct path for op, for the log ("ranks on 2 hosts").
std::string whyNotDirect(const weftComm* comm, const Op& op);

// Exchanges the ranks' buffer locations; when all are on one GPU and reachable, runs `run` and
// then the closing barrier, and sets *ran. Otherwise returns with *ran false and *why set (the
// caller stages the call); every rank comes to the same decision from the same records.
Status runDirect(weftComm* comm, const CollArgs& call, DirectFn run, Stream stream,
                 const StreamWaiter& waitFor, const HostRunner& runHost, bool* ran,
                 std::string* why);

// The elements [first, first + count) of `total` that rank `rank` of `nranks` handles, split on
// 64-byte boundaries (aligned buffers give aligned parts, which the kernel moves 16 bytes at a
// time).
struct Share {
  size_t first;
  size_t count;
};
Share shareOf(size_t total, size_t typeSize, int nranks, int rank);

// One kernel on the context's stream, waited for: dsts[i] = srcs[0] (op) srcs[1] ... over
// `count` elements of the call's type (weftAvg divides by the number of ranks), then a wait.
Status reduceOnGpu(const DirectContext& context, const std::vector<void*>& dsts,
                   const std::vector<const void*>& srcs, size_t count, weftRedOp_t op);

// `ptr` advanced by `elements` of the call's type (nullptr stays nullptr).
const void* elementsIn(const DirectContext& context, const void* ptr, size_t elements);
void* elementsIn(const DirectContext& context, void* ptr, size_t elements);

// The algorithms (one file each).
Status allReduceDirect(const DirectContext& context);
Status broadcastDirect(const DirectContext& context);
Status reduceDirect(const DirectContext& context);
Status allGatherDirect(const DirectContext& context);
Status reduceScatterDirect(const DirectContext& context);

}  // namespace weft::device
