// The collective and point-to-point entry points: check, then submit.
#include "api/arg_check.h"
#include "api/handles.h"
#include "api/submit.h"

namespace weft::api {
namespace {

weftResult_t issue(const char* fn, weftComm_t comm, const RawCall& call, weftRequest_t* request) {
  if (request != nullptr) *request = nullptr;
  return issueChecked(fn, comm, call, [request](weftComm* live, const CollArgs& args) {
    return submit(live, args, request);
  });
}

}  // namespace
}  // namespace weft::api

using weft::CollType;
constexpr auto call = weft::api::rawCall;
using weft::api::issue;

extern "C" {

weftResult_t weftAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                           weftDataType_t datatype, weftRedOp_t op, weftComm_t comm,
                           weftRequest_t* request) {
  return issue("weftAllReduce", comm,
               call(CollType::kAllReduce, sendbuff, recvbuff, count, datatype, op, 0), request);
}

weftResult_t weftBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                           weftDataType_t datatype, int root, weftComm_t comm,
                           weftRequest_t* request) {
  return issue("weftBroadcast", comm,
               call(CollType::kBroadcast, sendbuff, recvbuff, count, datatype, weftSum, root),
               request);
}

weftResult_t weftReduce(const void* sendbuff, void* recvbuff, size_t count, weftDataType_t datatype,
                        weftRedOp_t op, int root, weftComm_t comm, weftRequest_t* request) {
  return issue("weftReduce", comm,
               call(CollType::kReduce, sendbuff, recvbuff, count, datatype, op, root), request);
}

weftResult_t weftAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                           weftDataType_t datatype, weftComm_t comm, weftRequest_t* request) {
  return issue("weftAllGather", comm,
               call(CollType::kAllGather, sendbuff, recvbuff, sendcount, datatype, weftSum, 0),
               request);
}

weftResult_t weftReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                               weftDataType_t datatype, weftRedOp_t op, weftComm_t comm,
                               weftRequest_t* request) {
  return issue("weftReduceScatter", comm,
               call(CollType::kReduceScatter, sendbuff, recvbuff, recvcount, datatype, op, 0),
               request);
}

weftResult_t weftAlltoAll(const void* sendbuff, void* recvbuff, size_t count,
                          weftDataType_t datatype, weftComm_t comm, weftRequest_t* request) {
  return issue("weftAlltoAll", comm,
               call(CollType::kAlltoAll, sendbuff, recvbuff, count, datatype, weftSum, 0), request);
}

weftResult_t weftGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                        weftDataType_t datatype, int root, weftComm_t comm,
                        weftRequest_t* request) {
  return issue("weftGather", comm,
               call(CollType::kGather, sendbuff, recvbuff, sendcount, datatype, weftSum, root),
               request);
}

weftResult_t weftScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                         weftDataType_t datatype, int root, weftComm_t comm,
                         weftRequest_t* request) {
  return issue("weftScatter", comm,
               call(CollType::kScatter, sendbuff, recvbuff, recvcount, datatype, weftSum, root),
               request);
}

weftResult_t weftBarrier(weftComm_t comm, weftRequest_t* request) {
  return issue("weftBarrier", comm,
               call(CollType::kBarrier, nullptr, nullptr, 0, weftUint8, weftSum, 0), request);
}

weftResult_t weftSend(const void* sendbuff, size_t count, weftDataType_t datatype, int peer,
                      weftComm_t comm, weftRequest_t* request) {
  return issue("weftSend", comm,
               call(CollType::kSend, sendbuff, nullptr, count, datatype, weftSum, peer), request);
}

weftResult_t weftRecv(void* recvbuff, size_t count, weftDataType_t datatype, int peer,
                      weftComm_t comm, weftRequest_t* request) {
  return issue("weftRecv", comm,
               call(CollType::kRecv, nullptr, recvbuff, count, datatype, weftSum, peer), request);
}

weftResult_t weftGroupStart(void) {
  return weft::api::groupStart();
}
weftResult_t weftGroupEnd(void) {
  return weft::api::groupEnd();
}

}  // extern "C"
