// All-reduce of device buffers among ranks that share one GPU, without leaving the GPU.
//
// The ranks first exchange, through a small host all-gather, where their buffers are: the GPU's
// identity, the process, the raw pointers, and IPC handles for ranks of other processes. The
// all-gather is also the starting line: a rank joins it only once its inputs are ready. Then
// rank r reduces share r of the count from every rank's send buffer (one kernel, nranks
// sources) and writes it to share r of every rank's receive buffer (nranks destinations), and a
// host barrier holds everyone until all shares are written, so that no rank reuses its buffers
// while a peer still reads or writes them. Each GPU byte is read once and written once: the
// bandwidth bound of an all-reduce on one memory.
//
// In place works as is: a rank reads and writes only its own share of each buffer, and reads it
// before writing it.
#include "cuda/allreduce_device_direct.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/log.h"
#include "cuda/gpu_state.h"
#include "reduce/reduce.h"

namespace weft::device {
namespace {

// One rank's part of the exchange. Fixed layout: the all-gather copies it byte for byte.
struct BufferRecord {
  std::array<uint8_t, 16> gpu{};  // the GPU's UUID
  uint64_t pid = 0;
  uint64_t send = 0;  // raw device addresses, usable by ranks of the same process
  uint64_t recv = 0;
  IpcHandle sendHandle;  // for ranks of other processes
  IpcHandle recvHandle;
  uint32_t handlesValid = 0;
  uint32_t eligible = 0;  // this rank can take part (device buffers, a known GPU)
};

Status exchangeRecords(const BufferRecord& mine, int nranks, const HostRunner& runHost,
                       std::vector<BufferRecord>* all) {
  all->assign(static_cast<size_t>(nranks), BufferRecord{});
  CollArgs gather;
  gather.coll = CollType::kAllGather;
  gather.send = &mine;
  gather.recv = all->data();
  gather.count = sizeof(BufferRecord);
  gather.type = weftUint8;
  return runHost(Op::call(gather));
}

Status barrier(const HostRunner& runHost) {
  CollArgs call;
  call.coll = CollType::kBarrier;
  return runHost(Op::call(call));
}

// Where peer's buffer `raw` (with its handle) is in this process.
Status reach(GpuState* gpu, const BufferRecord& peer, uint64_t raw, const IpcHandle& handle,
             void** out) {
  if (peer.pid == static_cast<uint64_t>(getpid())) {
    *out = reinterpret_cast<void*>(raw);
    return Status::ok();
  }
  return gpu->ipc().map(handle, out);
}

}  // namespace

bool directAllReduceApplies(const weftComm* comm, const Op& op) {
  if (!op.group.empty() || op.single.coll != CollType::kAllReduce) return false;
  const CollArgs& call = op.single;
  return call.deviceBuffers && call.count > 0 && comm->nodes == 1 && comm->nranks > 1 &&
         comm->nranks <= kMaxReduceSources;
}

Status runDirectAllReduce(weftComm* comm, const CollArgs& call, const StreamWaiter& waitFor,
                          const HostRunner& runHost, bool* ran) {
  *ran = false;
  GpuState* gpu = comm->gpu.get();
  DeviceApi* api = gpu->api();

  BufferRecord mine;
  mine.pid = static_cast<uint64_t>(getpid());
  mine.send = reinterpret_cast<uint64_t>(call.send);
  mine.recv = reinterpret_cast<uint64_t>(call.recv);
  mine.eligible = api->deviceUuid(gpu->device(), &mine.gpu).isOk() ? 1 : 0;
  mine.handlesValid = api->ipcGetHandle(call.send, &mine.sendHandle).isOk() &&
                      api->ipcGetHandle(call.recv, &mine.recvHandle).isOk();
  std::vector<BufferRecord> all;
  WEFT_TRY(exchangeRecords(mine, comm->nranks, runHost, &all));

  // Every rank decides from the same records, so all take the same path: one GPU, and either
  // one process or IPC handles from everyone.
  bool oneGpu = true;
  bool oneProcess = true;
  bool allHandles = true;
  for (const BufferRecord& peer : all) {
    oneGpu = oneGpu && peer.eligible && peer.gpu == all[0].gpu;
    oneProcess = oneProcess && peer.pid == all[0].pid;
    allHandles = allHandles && peer.handlesValid;
  }
  if (!oneGpu || !(oneProcess || allHandles)) return Status::ok();
  *ran = true;

  const int n = comm->nranks;
  const size_t typeSize = reduce::typeSize(call.type);
  // Shares start on 64-byte boundaries, so that aligned buffers give aligned shares (the kernel
  // then moves 16 bytes per access).
  const size_t unit = 64 / typeSize;
  const size_t units = (call.count + unit - 1) / unit;
  const size_t rank = static_cast<size_t>(comm->rank);
  const size_t perRank = units / static_cast<size_t>(n);
  const size_t extra = units % static_cast<size_t>(n);
  const size_t firstUnit = perRank * rank + std::min(rank, extra);
  const size_t shareUnits = perRank + (rank < extra ? 1 : 0);
  const size_t first = std::min(call.count, firstUnit * unit);
  const size_t share = std::min(call.count, (firstUnit + shareUnits) * unit) - first;

  std::vector<const void*> srcs(static_cast<size_t>(n));
  std::vector<void*> dsts(static_cast<size_t>(n));
  for (int peer = 0; peer < n; ++peer) {
    void* send = nullptr;
    void* recv = nullptr;
    const BufferRecord& record = all[static_cast<size_t>(peer)];
    WEFT_TRY(reach(gpu, record, record.send, record.sendHandle, &send)
                 .withContext("mapping rank " + std::to_string(peer) + "'s send buffer"));
    WEFT_TRY(reach(gpu, record, record.recv, record.recvHandle, &recv)
                 .withContext("mapping rank " + std::to_string(peer) + "'s receive buffer"));
    srcs[static_cast<size_t>(peer)] = static_cast<const char*>(send) + first * typeSize;
    dsts[static_cast<size_t>(peer)] = static_cast<char*>(recv) + first * typeSize;
  }
  if (share > 0) {
    Stream stream = nullptr;
    WEFT_TRY(gpu->workStream(&stream));
    DeviceApi::Reduction reduction{dsts.data(), n,         srcs.data(), n,
                                   share,       call.type, call.op,     call.op == weftAvg ? n : 1};
    WEFT_TRY(api->reduceAsync(reduction, stream));
    WEFT_TRY(waitFor(stream, "allreduce: reducing on the GPU"));
  }
  return barrier(runHost);
}

}  // namespace weft::device
