// Shared-memory barrier: every rank raises its flag for the round and waits until all flags are
// up. One round of flags, where the dissemination barrier takes ceil(log2 n) rounds of messages
// through the transport. A rank that raises flag r has finished with every earlier round (the
// windows' invariant, algos/shm_window.h), and the barrier writes no data, so it needs no area.
#include "algos/algorithms.h"
#include "algos/shm_window.h"

namespace weft {

Status barrierShmFlat(AlgoContext& ctx) {
  const uint64_t round = ctx.nextWindowRound();
  return ctx.publishAndWait(window::arrived(round), round);
}

}  // namespace weft
