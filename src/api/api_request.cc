// Completing non-blocking calls.
#include "api/handles.h"
#include "api/submit.h"

using weft::api::report;

extern "C" {

weftResult_t weftTest(weftRequest_t* request, int* done) {
  if (request == nullptr || *request == nullptr) {
    return report(nullptr, weft::invalidArgument("weftTest: request is NULL"));
  }
  if (done == nullptr) return report(nullptr, weft::invalidArgument("weftTest: done is NULL"));
  weftRequestImpl* impl = *request;
  if (!impl->completion->isDone()) {
    *done = 0;
    return weftSuccess;
  }
  *done = 1;
  weft::Status result = impl->completion->result();
  delete impl;
  *request = nullptr;
  return report(nullptr, result);
}

weftResult_t weftWait(weftRequest_t* request, int timeoutMs) {
  if (request == nullptr || *request == nullptr) {
    return report(nullptr, weft::invalidArgument("weftWait: request is NULL"));
  }
  weftRequestImpl* impl = *request;
  if (!impl->executor->waitFor(*impl->completion, timeoutMs < 0 ? -1 : timeoutMs)) {
    return report(nullptr, weft::timeoutError("weftWait: the call did not complete within " +
                                              std::to_string(timeoutMs) + " ms"));
  }
  weft::Status result = impl->completion->result();
  delete impl;
  *request = nullptr;
  return report(nullptr, result);
}

}  // extern "C"
