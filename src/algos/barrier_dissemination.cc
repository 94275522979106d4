// Dissemination barrier: in round k every rank signals rank + 2^k and waits for rank - 2^k;
// after ceil(log2 n) rounds every rank has (transitively) heard from every other.
#include "algos/algorithms.h"
#include "algos/ring_math.h"

namespace weft {

Status barrierDissemination(AlgoContext& ctx) {
  const int n = ctx.nranks();
  const int rank = ctx.rank();
  for (int distance = 1; distance < n; distance <<= 1) {
    ctx.send(ring::mod(rank + distance, n), nullptr, 0);
    ctx.recv(ring::mod(rank - distance, n), nullptr, 0);
    WEFT_TRY(ctx.waitAll());
  }
  return Status::ok();
}

}  // namespace weft
