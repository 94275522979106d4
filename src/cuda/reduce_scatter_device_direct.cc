// Reduce-scatter on one GPU: rank r reduces block r of every rank's send buffer into its own
// receive buffer.
#include "cuda/device_direct.h"

namespace weft::device {

Status reduceScatterDirect(const DirectContext& context) {
  const CollArgs& call = context.call;
  const int n = context.comm->nranks;
  const size_t block = call.count * static_cast<size_t>(context.comm->rank);
  std::vector<const void*> srcs;
  for (int peer = 0; peer < n; ++peer) {
    srcs.push_back(elementsIn(context, context.buffers.send[peer], block));
  }
  return reduceOnGpu(context, {context.buffers.recv[context.comm->rank]}, srcs, call.count,
                     call.op);
}

}  // namespace weft::device
