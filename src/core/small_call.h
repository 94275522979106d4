// The fast path of the smallest blocking calls. A blocking all-reduce or broadcast whose message
// fits in a shared-memory flag's cache line, or a barrier, among ranks that all share this
// host's windows, costs little more than two cache-line transfers; the general path (an Op for
// the executor, its run function, the operation's resources) would cost as much again. This
// path claims the idle communicator and runs the shared-memory algorithm itself.
#pragma once

#include "base/call.h"
#include "base/status.h"

struct weftComm;

namespace weft {

// Runs `args` (checked and classified) on this thread when it qualifies: a blocking all-reduce
// or broadcast of host buffers of at most SharedWindows::kFlagPayloadBytes, or a blocking
// barrier, on a communicator that is idle, not failed, has every rank on this host's windows,
// and whose plan for the call is the shared-memory one (shm_flat; shm_direct for a broadcast;
// no forced algorithm, tuning table or online trial chooses otherwise; no WEFT_CHECK).
// Returns false, having changed nothing, when it does not; *result is then untouched.
bool runSmallCall(weftComm* comm, const CollArgs& args, Status* result);

}  // namespace weft
