// Reduce on one GPU: rank r reduces share r of the count from every rank's send buffer into
// share r of the root's receive buffer.
#include "cuda/device_direct.h"
#include "reduce/reduce.h"

namespace weft::device {

Status reduceDirect(const DirectContext& context) {
  const CollArgs& call = context.call;
  const int n = context.comm->nranks;
  const Share share = shareOf(call.count, typeSize(call.type), n, context.comm->rank);
  std::vector<const void*> srcs;
  for (int peer = 0; peer < n; ++peer) {
    srcs.push_back(elementsIn(context, context.buffers.send[peer], share.first));
  }
  void* dst = elementsIn(context, context.buffers.recv[call.root], share.first);
  return reduceOnGpu(context, {dst}, srcs, share.count, call.op);
}

}  // namespace weft::device
