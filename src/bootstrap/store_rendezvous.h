// The rendezvous through a launcher's key-value store (bootstrap/job_store.h): rank 0 makes a
// unique id (its rendezvous address and a fresh secret) and publishes it; the others read it
// after a fence. The secret travels only through the launcher's store, so nothing needs to be
// exported by hand, on one host or many.
#pragma once

#include "base/deadline.h"
#include "base/status.h"
#include "bootstrap/job_store.h"
#include "weft/weft.h"

namespace weft::bootstrap {

struct StoreRendezvous {
  int rank = -1;
  int nranks = 0;
  weftUniqueId id{};
};

// Collective over the job's processes: each call must be made by every process, in the same
// order (each call's id has a key of its own).
Status rendezvousOverStore(JobStore& store, Deadline deadline, StoreRendezvous* out);

}  // namespace weft::bootstrap
