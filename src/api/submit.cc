#include "api/submit.h"

#include <vector>

#include "api/handles.h"

namespace weft::api {
namespace {

// Calls collected between GroupStart and GroupEnd on this thread, per communicator.
struct GroupedCalls {
  weftComm* comm;
  std::vector<CollArgs> calls;
  std::shared_ptr<Completion> completion;
  bool someoneBlocks = false;
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
  tGroup.comms.push_back(GroupedCalls{comm, {}, std::make_shared<Completion>()});
  return tGroup.comms.back();
}

weftRequest_t makeRequest(std::shared_ptr<Completion> completion) {
  return new weftRequestImpl{std::move(completion)};
}

}  // namespace

weftResult_t submit(weftComm* comm, const CollArgs& args, weftRequest_t* request) {
  if (tGroup.depth > 0) {
    GroupedCalls& grouped = groupFor(comm);
    grouped.calls.push_back(args);
    if (request != nullptr) {
      *request = makeRequest(grouped.completion);
    } else {
      grouped.someoneBlocks = true;
    }
    return weftSuccess;
  }
  if (comm->failed.load()) return report(comm, commFailure(comm));
  if (request == nullptr) return report(comm, comm->executor->runBlocking(Op{{args}, nullptr}));
  auto completion = std::make_shared<Completion>();
  *request = makeRequest(completion);
  comm->executor->enqueue(Op{{args}, completion});
  return weftSuccess;
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
  // A lone communicator that someone waits for runs on this thread, as a blocking call would.
  if (comms.size() == 1 && comms[0].someoneBlocks) {
    GroupedCalls& grouped = comms[0];
    CommGuard guard(grouped.comm);
    Status result = guard.valid() ? grouped.comm->executor->runBlocking(
                                        Op{std::move(grouped.calls), nullptr})
                                  : invalidArgument("weftGroupEnd: a communicator was destroyed");
    grouped.completion->complete(result);
    return report(guard.valid() ? grouped.comm : nullptr, result);
  }
  for (GroupedCalls& grouped : comms) {
    CommGuard guard(grouped.comm);
    if (!guard.valid()) {
      Status gone = invalidArgument("weftGroupEnd: a communicator was destroyed inside the group");
      grouped.completion->complete(gone);
      note(nullptr, gone);
      continue;
    }
    grouped.comm->executor->enqueue(Op{std::move(grouped.calls), grouped.completion});
  }
  for (GroupedCalls& grouped : comms) {
    if (!grouped.someoneBlocks) continue;
    grouped.completion->waitFor(-1);
    note(grouped.comm, grouped.completion->result());
  }
  return report(firstComm, first);
}

}  // namespace weft::api
