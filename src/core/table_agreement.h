// Every rank of a communicator must plan with the same tuning table, or ranks would run
// different algorithms for the same call and wait on each other until the deadline. At init the
// ranks compare their table's hash (0: none) and fail together, naming who differs.
#pragma once

#include "base/deadline.h"
#include "base/status.h"

struct weftComm;

namespace weft {

// Collective over the new communicator's fabric: log2(n) rounds of 16 bytes when the tables
// agree; on a mismatch one bootstrap allgather to name the ranks, then an error on every rank.
Status agreeOnTuningTable(weftComm* comm, Deadline deadline);

}  // namespace weft
