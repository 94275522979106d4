#include "cuda/device_op.h"

#include <string>
#include <vector>

#include "cuda/device_direct.h"
#include "cuda/device_scope.h"
#include "cuda/gpu_state.h"
#include "cuda/staged_pipeline.h"
#include "cuda/staging_plan.h"

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

Status runOnDevice(weftComm* comm, const Op& op, const StagingPlan& plan, const Deadline& deadline,
                   const HostRunner& runHost) {
  DeviceScope scope(comm, deadline);
  WEFT_TRY(scope.enter());
  if (DirectFn direct = directAlgorithmFor(comm, op)) {
    bool ran = false;
    StreamWaiter waiter = [&scope](Stream stream, const std::string& what) {
      return scope.finish(stream, what);
    };
    WEFT_TRY(runDirect(comm, op.single, direct, scope.stream(), waiter, runHost, &ran));
    if (ran) return Status::ok();
  }
  if (pipelineApplies(op)) return runPipelined(comm, scope, op, plan, runHost);
  return runStaged(scope, op, plan, runHost);
}

}  // namespace

bool needsDevice(const Op& op) {
  if (op.streamOrder) return true;
  for (const CollArgs& call : op.calls()) {
    if (call.deviceBuffers) return true;
  }
  return false;
}

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
  if (order != nullptr) order->release();
  return result;
}

}  // namespace weft::device
