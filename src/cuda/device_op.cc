#include "cuda/device_op.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "base/datatype.h"
#include "base/log.h"
#include "cuda/buffer_kind.h"
#include "cuda/device_direct.h"
#include "cuda/device_scope.h"
#include "cuda/gpu_state.h"
#include "cuda/staged_pipeline.h"
#include "cuda/staging_plan.h"
#include "tune/device_paths.h"
#include "tune/select.h"

namespace weft::device {
namespace {

const char* opName(const Op& op) {
  return op.group.empty() ? collName(op.single.coll) : "group";
}

Status copyAll(DeviceApi* api, const StagingPlan& plan,
               const std::vector<StagingPlan::Copy>& copies, char* base, bool toHost,
               Stream stream) {
  for (const StagingPlan::Copy& copy : copies) {
    char* staged = plan.staged(copy.device, base);
    void* dst = toHost ? static_cast<void*>(staged) : const_cast<char*>(copy.device);
    const void* src = toHost ? static_cast<const void*>(copy.device) : staged;
    WEFT_TRY(api->memcpyAsync(dst, src, copy.bytes, stream));
  }
  return Status::ok();
}

Status runStaged(DeviceScope& scope, const Op& op, const StagingPlan& plan,
                 const HostRunner& runHost) {
  DeviceApi* api = scope.gpu()->api();
  char* base = nullptr;
  WEFT_TRY(scope.gpu()->staging(plan.bytes(), &base));
  const std::string name = opName(op);
  WEFT_TRY(copyAll(api, plan, plan.copiesIn(), base, true, scope.stream()));
  WEFT_TRY(scope.finish(scope.stream(), name + ": copying the inputs from the GPU"));
  WEFT_TRY(runHost(plan.hostOp(op, base)));
  WEFT_TRY(copyAll(api, plan, plan.copiesOut(), base, false, scope.stream()));
  return scope.finish(scope.stream(), name + ": copying the results to the GPU");
}

// "allreduce of 4096 bytes (float32) on device buffers: direct on one GPU (...), predicted
// 31.2 us; staged 410.0", once per call shape and path, at INFO on rank 0: what was chosen,
// why, and what the model predicted for each path it compared.
void logPath(weftComm* comm, const Op& op, const std::string& path,
             const std::vector<tune::DeviceCandidate>& ranked) {
  if (comm->rank != 0 || log::level() < log::Level::kInfo) return;
  const CollArgs& call = op.calls().front();
  const uint64_t key =
      std::hash<std::string>{}(path) ^ callShapeKey(call) ^ (op.group.empty() ? 0 : 1ull << 55);
  if (!gpuOf(comm)->firstTime(key)) return;
  std::string predicted;
  char number[48];
  for (size_t i = 0; i < ranked.size(); ++i) {
    if (i == 0) {
      std::snprintf(number, sizeof(number), ", predicted %.1f us", ranked[i].micros);
    } else {
      std::snprintf(number, sizeof(number), "%s %s %.1f", i == 1 ? ";" : ",",
                    tune::devicePathName(ranked[i].path), ranked[i].micros);
    }
    predicted += number;
  }
  const std::string what = op.group.empty() ? std::string(collName(call.coll)) : "group";
  WEFT_INFO("%s of %zu bytes (%s) on device buffers: %s%s", what.c_str(),
            callSizes(call, comm->nranks).block, typeName(call.type), path.c_str(),
            predicted.c_str());
}

// The tuner's ranking of the paths for op (tune/device_paths.h), computed once per call shape:
// it depends on the shape and the communicator's layout alone.
const std::vector<tune::DeviceCandidate>& rankPaths(weftComm* comm, const Op& op,
                                                    bool directAllowed) {
  tune::DeviceCall device;
  device.call = op.calls().front();
  device.grouped = !op.group.empty();
  device.directForm = directFormOf(device.call.coll) != nullptr;
  device.directAllowed = directAllowed;
  const uint64_t key = callShapeKey(device.call) ^ (device.grouped ? 1ull << 55 : 0) ^
                       (directAllowed ? 1ull << 54 : 0);
  auto& cache = gpuOf(comm)->pathCache();
  if (auto found = cache.find(key); found != cache.end()) return found->second;
  if (cache.size() >= 4096) cache.clear();
  const Plan host =
      choosePlan(device.call, comm->layout, comm->config.algos, comm->config.sliceBytes);
  return cache.emplace(key, tune::rankDevicePaths(device, comm->layout, host)).first->second;
}

Status runStagedPath(weftComm* comm, DeviceScope& scope, const Op& op, const StagingPlan& plan,
                     const HostRunner& runHost, const std::string& why) {
  const std::vector<tune::DeviceCandidate>& ranked = rankPaths(comm, op, false);
  if (ranked.front().path == tune::DevicePath::kStagedChunked) {
    logPath(comm, op, "staged through pinned memory in 4 MiB chunks (" + why + ")", ranked);
    return runPipelined(comm, scope, op, plan, runHost);
  }
  logPath(comm, op, "staged through pinned memory (" + why + ")", ranked);
  return runStaged(scope, op, plan, runHost);
}

Status runOnDevice(weftComm* comm, const Op& op, const StagingPlan& plan, const Deadline& deadline,
                   const HostRunner& runHost) {
  DeviceScope scope(comm, deadline);
  WEFT_TRY(scope.enter());
  const std::vector<tune::DeviceCandidate>& ranked = rankPaths(comm, op, true);
  const bool directOffered = std::any_of(ranked.begin(), ranked.end(), [](const auto& c) {
    return c.path == tune::DevicePath::kDirect;
  });
  if (ranked.front().path != tune::DevicePath::kDirect) {
    const std::string why = directOffered ? "the model prefers staging" : whyNotDirect(comm, op);
    return runStagedPath(comm, scope, op, plan, runHost, why);
  }
  bool ran = false;
  std::string why;
  StreamWaiter waiter = [&scope](Stream stream, const std::string& what) {
    return scope.finish(stream, what);
  };
  WEFT_TRY(runDirect(comm, op.single, directFormOf(op.single.coll), scope.stream(), waiter, runHost,
                     &ran, &why));
  if (!ran) return runStagedPath(comm, scope, op, plan, runHost, why);
  logPath(comm, op,
          "direct on one GPU (" + std::to_string(comm->nranks) + " ranks, one kernel each)",
          ranked);
  return Status::ok();
}

}  // namespace

Status runDeviceOp(weftComm* comm, const Op& op, const HostRunner& runHost) {
  const Deadline deadline = Deadline::after(comm->config.timeoutMs);
  StreamOrder* order = op.streamOrder.get();
  if (order != nullptr) {
    for (Event ready : order->inputsReady) {
      WEFT_TRY(waitForEvent(comm, order->api, ready, deadline,
                            std::string(opName(op)) + ": waiting for the caller's stream"));
    }
  }
  const StagingPlan plan(op, comm->nranks, comm->rank);
  Status result = plan.empty() ? runHost(op) : runOnDevice(comm, op, plan, deadline, runHost);
  // The results are in place (or the call failed and they never will be): the streams go on.
  // A failure is recorded first, so that a caller who synchronises the stream and then asks
  // weftCommGetAsyncError already sees it.
  if (!result.isOk()) markFailed(comm, result);
  if (order != nullptr) order->release();
  return result;
}

Status GpuState::run(weftComm* comm, const Op& op, const HostRunner& runHost) {
  return runDeviceOp(comm, op, runHost);
}

}  // namespace weft::device
