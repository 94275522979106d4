// The stream-ordered entry points (weft*OnStream): the same checks as the other calls, then
// queued behind the caller's stream (api/submit.h, cuda/stream_order.h).
#include "api/arg_check.h"
#include "api/handles.h"
#include "api/submit.h"

namespace weft::api {
namespace {

weftResult_t issueOnStream(const char* fn, weftComm_t comm, const RawCall& call, void* stream) {
  return issueChecked(fn, comm, call, [fn, stream](weftComm* live, const CollArgs& args) {
    return submitOnStream(live, fn, args, stream);
  });
}

}  // namespace
}  // namespace weft::api

using weft::CollType;
using weft::api::issueOnStream;
constexpr auto call = weft::api::rawCall;

extern "C" {

weftResult_t weftAllReduceOnStream(const void* sendbuff, void* recvbuff, size_t count,
                                   weftDataType_t datatype, weftRedOp_t op, weftComm_t comm,
                                   void* stream) {
  return issueOnStream("weftAllReduceOnStream", comm,
                       call(CollType::kAllReduce, sendbuff, recvbuff, count, datatype, op, 0),
                       stream);
}

weftResult_t weftBroadcastOnStream(const void* sendbuff, void* recvbuff, size_t count,
                                   weftDataType_t datatype, int root, weftComm_t comm,
                                   void* stream) {
  return issueOnStream(
      "weftBroadcastOnStream", comm,
      call(CollType::kBroadcast, sendbuff, recvbuff, count, datatype, weftSum, root), stream);
}

weftResult_t weftReduceOnStream(const void* sendbuff, void* recvbuff, size_t count,
                                weftDataType_t datatype, weftRedOp_t op, int root, weftComm_t comm,
                                void* stream) {
  return issueOnStream("weftReduceOnStream", comm,
                       call(CollType::kReduce, sendbuff, recvbuff, count, datatype, op, root),
                       stream);
}

weftResult_t weftAllGatherOnStream(const void* sendbuff, void* recvbuff, size_t sendcount,
                                   weftDataType_t datatype, weftComm_t comm, void* stream) {
  return issueOnStream(
      "weftAllGatherOnStream", comm,
      call(CollType::kAllGather, sendbuff, recvbuff, sendcount, datatype, weftSum, 0), stream);
}

weftResult_t weftReduceScatterOnStream(const void* sendbuff, void* recvbuff, size_t recvcount,
                                       weftDataType_t datatype, weftRedOp_t op, weftComm_t comm,
                                       void* stream) {
  return issueOnStream(
      "weftReduceScatterOnStream", comm,
      call(CollType::kReduceScatter, sendbuff, recvbuff, recvcount, datatype, op, 0), stream);
}

weftResult_t weftAlltoAllOnStream(const void* sendbuff, void* recvbuff, size_t count,
                                  weftDataType_t datatype, weftComm_t comm, void* stream) {
  return issueOnStream("weftAlltoAllOnStream", comm,
                       call(CollType::kAlltoAll, sendbuff, recvbuff, count, datatype, weftSum, 0),
                       stream);
}

weftResult_t weftGatherOnStream(const void* sendbuff, void* recvbuff, size_t sendcount,
                                weftDataType_t datatype, int root, weftComm_t comm, void* stream) {
  return issueOnStream(
      "weftGatherOnStream", comm,
      call(CollType::kGather, sendbuff, recvbuff, sendcount, datatype, weftSum, root), stream);
}

weftResult_t weftScatterOnStream(const void* sendbuff, void* recvbuff, size_t recvcount,
                                 weftDataType_t datatype, int root, weftComm_t comm, void* stream) {
  return issueOnStream(
      "weftScatterOnStream", comm,
      call(CollType::kScatter, sendbuff, recvbuff, recvcount, datatype, weftSum, root), stream);
}

weftResult_t weftBarrierOnStream(weftComm_t comm, void* stream) {
  return issueOnStream("weftBarrierOnStream", comm,
                       call(CollType::kBarrier, nullptr, nullptr, 0, weftUint8, weftSum, 0),
                       stream);
}

weftResult_t weftSendOnStream(const void* sendbuff, size_t count, weftDataType_t datatype, int peer,
                              weftComm_t comm, void* stream) {
  return issueOnStream("weftSendOnStream", comm,
                       call(CollType::kSend, sendbuff, nullptr, count, datatype, weftSum, peer),
                       stream);
}

weftResult_t weftRecvOnStream(void* recvbuff, size_t count, weftDataType_t datatype, int peer,
                              weftComm_t comm, void* stream) {
  return issueOnStream("weftRecvOnStream", comm,
                       call(CollType::kRecv, nullptr, recvbuff, count, datatype, weftSum, peer),
                       stream);
}

}  // extern "C"
