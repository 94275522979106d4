// Issuing checked calls: blocking, queued with a request, or deferred into a group.
#pragma once

#include <memory>

#include "core/completion.h"
#include "core/comm.h"
#include "core/op.h"

struct weftRequestImpl {
  std::shared_ptr<weft::Completion> completion;
};

namespace weft::api {

weftResult_t submit(weftComm* comm, const CollArgs& args, weftRequest_t* request);
weftResult_t groupStart();
weftResult_t groupEnd();

}  // namespace weft::api
