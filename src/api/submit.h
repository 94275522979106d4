// Issuing checked calls: blocking, queued with a request, or deferred into a group.
#pragma once

#include <memory>

#include "core/completion.h"
#include "core/comm.h"
#include "core/op.h"

// A request keeps its executor alive, so that waiting on it can help run the queue even while
// the communicator is being destroyed (destroy drains the queue first, so nothing runs on a freed
// communicator).
struct weftRequestImpl {
  std::shared_ptr<weft::Completion> completion;
  std::shared_ptr<weft::Executor> executor;
};

namespace weft::api {

weftResult_t submit(weftComm* comm, const CollArgs& args, weftRequest_t* request);
weftResult_t groupStart();
weftResult_t groupEnd();

}  // namespace weft::api
