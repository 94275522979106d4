// Check mode (WEFT_CHECK=1, or config.checkMode): before an operation's collectives run, every
// rank tells every other what it is about to call, and all compare. Ranks that disagree (a
// different collective, count, datatype, op or root, or one rank a call ahead) would otherwise
// hang or corrupt memory; here every rank gets weftInvalidUsage with both sides' calls, before
// anything was sent, so the communicator stays usable.
#pragma once

#include "core/comm.h"
#include "core/executor.h"

namespace weft {

// *mismatch tells a disagreement (the communicator is intact) from a failed exchange (it is not).
Status checkCallsMatch(weftComm* comm, const Op& op, bool* mismatch);

}  // namespace weft
