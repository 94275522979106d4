// Broadcast on one GPU: rank r copies share r of the root's send buffer into share r of every
// rank's receive buffer (one kernel, one source, every rank a destination).
#include "cuda/device_direct.h"
#include "reduce/reduce.h"

namespace weft::device {

Status broadcastDirect(const DirectContext& context) {
  const CollArgs& call = context.call;
  const int n = context.comm->nranks;
  const Share share = shareOf(call.count, typeSize(call.type), n, context.comm->rank);
  std::vector<void*> dsts;
  for (int peer = 0; peer < n; ++peer) {
    dsts.push_back(elementsIn(context, context.buffers.recv[peer], share.first));
  }
  const void* src = elementsIn(context, context.buffers.send[call.root], share.first);
  return reduceOnGpu(context, dsts, {src}, share.count, weftSum);
}

}  // namespace weft::device
