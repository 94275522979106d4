#include "cuda/device_direct.h"

#include <unistd.h>

#include <algorithm>

#include "cuda/buffer_kind.h"
#include "cuda/gpu_state.h"
#include "reduce/reduce.h"
#include "tune/device_paths.h"

namespace weft::device {
namespace {

// One rank's part of the exchange. Fixed layout: the all-gather copies it byte for byte.
struct BufferRecord {
  std::array<uint8_t, 16> gpu{};  // the GPU's UUID
  uint64_t pid = 0;
  uint64_t send = 0;  // raw device addresses (0: unused), usable by ranks of the same process
  uint64_t recv = 0;
  IpcHandle sendHandle;  // for ranks of other processes
  IpcHandle recvHandle;
  uint32_t handlesValid = 0;  // a handle for every buffer the rank uses
  uint32_t eligible = 0;      // the rank's GPU is known
};

Status runHostCall(const HostRunner& runHost, CollType coll, const void* send, void* recv,
                   size_t count) {
  CollArgs call;
  call.coll = coll;
  call.send = send;
  call.recv = recv;
  call.count = count;
  call.type = weftUint8;
  return runHost(Op::call(call));
}

BufferRecord describeMine(weftComm* comm, const CollArgs& call) {
  GpuState* gpu = gpuOf(comm);
  DeviceApi* api = gpu->api();
  const CallExtents extents = callExtents(call, comm->nranks, comm->rank);
  BufferRecord mine;
  mine.pid = static_cast<uint64_t>(getpid());
  mine.eligible = api->deviceUuid(gpu->device(), &mine.gpu).isOk() ? 1 : 0;
  bool handles = true;
  if (extents.sendBytes > 0) {
    mine.send = reinterpret_cast<uint64_t>(call.send);
    handles = handles && api->ipcGetHandle(call.send, &mine.sendHandle).isOk();
  }
  if (extents.recvBytes > 0) {
    mine.recv = reinterpret_cast<uint64_t>(call.recv);
    handles = handles && api->ipcGetHandle(call.recv, &mine.recvHandle).isOk();
  }
  mine.handlesValid = handles ? 1 : 0;
  return mine;
}

// One GPU, and either one process or IPC handles from everyone; else why not.
bool directPossible(const std::vector<BufferRecord>& all, std::string* why) {
  bool oneGpu = true;
  bool oneProcess = true;
  bool allHandles = true;
  for (const BufferRecord& peer : all) {
    oneGpu = oneGpu && peer.eligible && peer.gpu == all[0].gpu;
    oneProcess = oneProcess && peer.pid == all[0].pid;
    allHandles = allHandles && peer.handlesValid;
  }
  if (!oneGpu) {
    *why = "the ranks' buffers are on different GPUs";
  } else if (!oneProcess && !allHandles) {
    *why = "some buffers have no CUDA IPC handle (not cudaMalloc memory?)";
  }
  return oneGpu && (oneProcess || allHandles);
}

// Where peer's buffer `raw` (with its handle) is in this process.
Status reach(GpuState* gpu, const BufferRecord& peer, uint64_t raw, const IpcHandle& handle,
             void** out) {
  *out = nullptr;
  if (raw == 0) return Status::ok();
  if (peer.pid == static_cast<uint64_t>(getpid())) {
    *out = reinterpret_cast<void*>(raw);
    return Status::ok();
  }
  return gpu->ipc().map(handle, out);
}

Status mapAll(GpuState* gpu, const std::vector<BufferRecord>& all, DirectBuffers* out) {
  out->send.assign(all.size(), nullptr);
  out->recv.assign(all.size(), nullptr);
  for (size_t peer = 0; peer < all.size(); ++peer) {
    const BufferRecord& record = all[peer];
    void* send = nullptr;
    WEFT_TRY(reach(gpu, record, record.send, record.sendHandle, &send)
                 .withContext("mapping rank " + std::to_string(peer) + "'s send buffer"));
    WEFT_TRY(reach(gpu, record, record.recv, record.recvHandle, &out->recv[peer])
                 .withContext("mapping rank " + std::to_string(peer) + "'s receive buffer"));
    out->send[peer] = send;
  }
  return Status::ok();
}

}  // namespace

static_assert(tune::kMaxDirectRanks == kMaxReduceSources,
              "the tuner offers direct paths to as many ranks as the kernel combines");

DirectFn directFormOf(CollType coll) {
  switch (coll) {
    case CollType::kAllReduce:
      return allReduceDirect;
    case CollType::kBroadcast:
      return broadcastDirect;
    case CollType::kReduce:
      return reduceDirect;
    case CollType::kAllGather:
      return allGatherDirect;
    case CollType::kReduceScatter:
      return reduceScatterDirect;
    default:
      return nullptr;
  }
}

std::string whyNotDirect(const weftComm* comm, const Op& op) {
  if (!op.group.empty()) return "a group";
  if (comm->nranks < 2) return "one rank";
  if (comm->nodes != 1) return "ranks on " + std::to_string(comm->nodes) + " hosts";
  if (comm->nranks > kMaxReduceSources) {
    return "more than " + std::to_string(kMaxReduceSources) + " ranks";
  }
  return std::string(collName(op.single.coll)) + " has no direct form";
}

Status runDirect(weftComm* comm, const CollArgs& call, DirectFn run, Stream stream,
                 const StreamWaiter& waitFor, const HostRunner& runHost, bool* ran,
                 std::string* why) {
  *ran = false;
  const BufferRecord mine = describeMine(comm, call);
  std::vector<BufferRecord> all(static_cast<size_t>(comm->nranks));
  WEFT_TRY(runHostCall(runHost, CollType::kAllGather, &mine, all.data(), sizeof(BufferRecord)));
  if (!directPossible(all, why)) return Status::ok();
  *ran = true;
  DirectBuffers buffers;
  WEFT_TRY(mapAll(gpuOf(comm), all, &buffers));
  WEFT_TRY(run(DirectContext{comm, call, buffers, stream, waitFor}));
  return runHostCall(runHost, CollType::kBarrier, nullptr, nullptr, 0);
}

Share shareOf(size_t total, size_t typeSize, int nranks, int rank) {
  const size_t unit = 64 / typeSize;
  const size_t units = (total + unit - 1) / unit;
  const size_t r = static_cast<size_t>(rank);
  const size_t perRank = units / static_cast<size_t>(nranks);
  const size_t extra = units % static_cast<size_t>(nranks);
  const size_t firstUnit = perRank * r + std::min(r, extra);
  const size_t shareUnits = perRank + (r < extra ? 1 : 0);
  const size_t first = std::min(total, firstUnit * unit);
  return {first, std::min(total, (firstUnit + shareUnits) * unit) - first};
}

Status reduceOnGpu(const DirectContext& context, const std::vector<void*>& dsts,
                   const std::vector<const void*>& srcs, size_t count, weftRedOp_t op) {
  if (count == 0) return Status::ok();
  const int ranks = context.comm->nranks;
  DeviceApi::Reduction reduction{dsts.data(), static_cast<int>(dsts.size()),
                                 srcs.data(), static_cast<int>(srcs.size()),
                                 count,       context.call.type,
                                 op,          op == weftAvg ? ranks : 1};
  WEFT_TRY(gpuOf(context.comm)->api()->reduceAsync(reduction, context.stream));
  return context.waitFor(context.stream,
                         std::string(collName(context.call.coll)) + ": the GPU kernel");
}

const void* elementsIn(const DirectContext& context, const void* ptr, size_t elements) {
  if (ptr == nullptr) return nullptr;
  return static_cast<const char*>(ptr) + elements * typeSize(context.call.type);
}

void* elementsIn(const DirectContext& context, void* ptr, size_t elements) {
  return const_cast<void*>(elementsIn(context, static_cast<const void*>(ptr), elements));
}

}  // namespace weft::device
