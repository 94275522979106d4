// All-gather on one GPU: rank r writes its send buffer into block r of every rank's receive
// buffer (one kernel, one source, every rank a destination).
#include "cuda/device_direct.h"

namespace weft::device {

Status allGatherDirect(const DirectContext& context) {
  const CollArgs& call = context.call;
  const int n = context.comm->nranks;
  const size_t block = call.count * static_cast<size_t>(context.comm->rank);
  std::vector<void*> dsts;
  for (int peer = 0; peer < n; ++peer) {
    dsts.push_back(elementsIn(context, context.buffers.recv[peer], block));
  }
  return reduceOnGpu(context, dsts, {context.buffers.send[context.comm->rank]}, call.count,
                     weftSum);
}

}  // namespace weft::device
