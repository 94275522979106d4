// Issuing checked calls: blocking, queued with a request, or deferred into a group.
#pragma once

#include <memory>

#include "api/arg_check.h"
#include "api/handles.h"
#include "base/call.h"
#include "core/comm.h"
#include "core/completion.h"

// A request keeps its executor alive, so that waiting on it can help run the queue even while
// the communicator is being destroyed (destroy drains the queue first, so nothing runs on a freed
// communicator).
struct weftRequestImpl {
  std::shared_ptr<weft::Completion> completion;
  std::shared_ptr<weft::Executor> executor;
};

namespace weft::api {

weftResult_t submit(weftComm* comm, const CollArgs& args, weftRequest_t* request);
// A stream-ordered call (weft*OnStream): queued at once behind the stream's work; in a group, at
// GroupEnd with the group's other calls.
weftResult_t submitOnStream(weftComm* comm, const char* fn, const CollArgs& args, void* stream);
weftResult_t groupStart();
// Whether this thread is between weftGroupStart and weftGroupEnd.
bool inGroup();

// An entry point's whole path: pin the communicator, check the call (checkAndClassify), then
// hand the checked call to submitChecked(comm, args).
template <typename SubmitChecked>
weftResult_t issueChecked(const char* fn, weftComm_t comm, const RawCall& call,
                          SubmitChecked&& submitChecked) {
  CommGuard guard(comm);
  if (!guard.valid()) {
    return report(nullptr,
                  invalidArgument(std::string(fn) + ": comm is not a live communicator (NULL, "
                                                    "destroyed or aborted)"));
  }
  CollArgs args;
  Status checked = checkAndClassify(fn, comm, call, &args);
  if (!checked.isOk()) return report(comm, checked);
  return submitChecked(comm, args);
}
weftResult_t groupEnd();

}  // namespace weft::api
