// All-reduce on one GPU: rank r reduces share r of the count from every rank's send buffer and
// writes it to share r of every rank's receive buffer. Each byte is read once and written once
// (per destination): the bandwidth bound of an all-reduce on one memory.
#include "cuda/device_direct.h"
#include "reduce/reduce.h"

namespace weft::device {

Status allReduceDirect(const DirectContext& context) {
  const CollArgs& call = context.call;
  const int n = context.comm->nranks;
  const Share share = shareOf(call.count, typeSize(call.type), n, context.comm->rank);
  std::vector<const void*> srcs;
  std::vector<void*> dsts;
  for (int peer = 0; peer < n; ++peer) {
    srcs.push_back(elementsIn(context, context.buffers.send[peer], share.first));
    dsts.push_back(elementsIn(context, context.buffers.recv[peer], share.first));
  }
  return reduceOnGpu(context, dsts, srcs, share.count, call.op);
}

}  // namespace weft::device
