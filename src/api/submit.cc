#include "api/submit.h"

#include <vector>

#include "api/handles.h"
#include "core/small_call.h"
#include "cuda/buffer_kind.h"
#include "cuda/stream_order.h"

namespace weft::api {
namespace {

// Calls collected between GroupStart and GroupEnd on this thread, per communicator.
struct GroupedCalls {
  weftComm* comm = nullptr;
  std::vector<CollArgs> calls;
  std::shared_ptr<Completion> completion;
  bool someoneBlocks = false;
  std::shared_ptr<Executor> executor;  // set when issued; outlives a concurrent destroy
  // Stream-ordered calls of the group: their streams and the inputs-ready events recorded on
  // them; the group is released on all of them together.
  device::GpuState* gpu = nullptr;
  std::vector<device::Stream> streams;
  std::vector<device::Event> inputs;
};

struct GroupState {
  int depth = 0;
  std::vector<GroupedCalls> comms;
};

thread_local GroupState tGroup;

GroupedCalls& groupFor(weftComm* comm) {
  for (GroupedCalls& grouped : tGroup.comms) {
    if (grouped.comm == comm) return grouped;
  }
  GroupedCalls grouped;
  grouped.comm = comm;
  grouped.completion = std::make_shared<Completion>();
  tGroup.comms.push_back(std::move(grouped));
  return tGroup.comms.back();
}

weftRequest_t makeRequest(std::shared_ptr<Completion> completion, weftComm* comm) {
  return new weftRequestImpl{std::move(completion), comm->executor};
}

}  // namespace

weftResult_t submit(weftComm* comm, const CollArgs& args, weftRequest_t* request) {
  if (tGroup.depth > 0) {
    GroupedCalls& grouped = groupFor(comm);
    grouped.calls.push_back(args);
    if (request != nullptr) {
      *request = makeRequest(grouped.completion, comm);
    } else {
      grouped.someoneBlocks = true;
    }
    return weftSuccess;
  }
  if (comm->failed.load()) return report(comm, commFailure(comm));
  if (request == nullptr) {
    Status ran;
    if (runSmallCall(comm, args, &ran)) return report(comm, ran);
    return report(comm, comm->executor->runBlocking(Op::call(args)));
  }
  auto completion = std::make_shared<Completion>();
  *request = makeRequest(completion, comm);
  Op op = Op::call(args);
  op.completion = std::move(completion);
  op.mayLeaveOutstanding = isPointToPoint(args.coll);
  // A send or receive is only posted here: on an idle communicator that takes no hand-off.
  if (op.mayLeaveOutstanding && comm->executor->tryRunInline(op)) return weftSuccess;
  comm->executor->enqueue(std::move(op));
  return weftSuccess;
}

weftResult_t submitOnStream(weftComm* comm, const char* fn, const CollArgs& args, void* stream) {
  device::GpuState* gpu = nullptr;
  Status status = device::gpuStateFor(comm, fn, &gpu);
  device::Event inputs = nullptr;
  if (status.isOk()) status = device::recordInputs(gpu, stream, fn, &inputs);
  if (!status.isOk()) return report(comm, status);
  if (tGroup.depth > 0) {
    GroupedCalls& grouped = groupFor(comm);
    grouped.calls.push_back(args);
    grouped.gpu = gpu;
    grouped.streams.push_back(stream);
    grouped.inputs.push_back(inputs);
    return weftSuccess;
  }
  if (comm->failed.load()) {
    gpu->api()->eventDestroy(inputs);
    return report(comm, commFailure(comm));
  }
  return report(comm, device::enqueueOrdered(comm, gpu, Op::call(args), {stream}, {inputs}));
}

weftResult_t groupStart() {
  ++tGroup.depth;
  return weftSuccess;
}

weftResult_t groupEnd() {
  if (tGroup.depth == 0) {
    return report(nullptr, invalidUsage("weftGroupEnd without a matching weftGroupStart"));
  }
  if (--tGroup.depth > 0) return weftSuccess;
  std::vector<GroupedCalls> comms;
  comms.swap(tGroup.comms);

  Status first;
  weftComm* firstComm = nullptr;
  auto note = [&](weftComm* comm, const Status& status) {
    if (first.isOk() && !status.isOk()) {
      first = status;
      firstComm = comm;
    }
  };
  // Every communicator's calls are queued before anyone waits, so that calls on several
  // communicators progress together; waiting then runs them on this thread when it can.
  for (GroupedCalls& grouped : comms) {
    CommGuard guard(grouped.comm);
    if (!guard.valid()) {
      Status gone = invalidArgument("weftGroupEnd: a communicator was destroyed inside the group");
      for (device::Event event : grouped.inputs) device::deviceApi()->eventDestroy(event);
      grouped.completion->complete(gone);
      note(nullptr, gone);
      continue;
    }
    grouped.executor = grouped.comm->executor;
    Op op = Op::grouped(std::move(grouped.calls), grouped.completion);
    if (grouped.gpu == nullptr) {
      grouped.executor->enqueue(std::move(op));
      continue;
    }
    Status ordered = device::enqueueOrdered(grouped.comm, grouped.gpu, std::move(op),
                                            grouped.streams, std::move(grouped.inputs));
    note(grouped.comm, ordered);
  }
  for (GroupedCalls& grouped : comms) {
    if (!grouped.someoneBlocks || !grouped.executor) continue;
    grouped.executor->waitFor(*grouped.completion, -1);
    note(grouped.comm, grouped.completion->result());
  }
  return report(firstComm, first);
}

bool inGroup() {
  return tGroup.depth > 0;
}

}  // namespace weft::api
