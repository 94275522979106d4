// The rendezvous under a PMI-1 launcher (MPICH's Hydra, Intel MPI): rank 0 makes a unique id (its
// rendezvous address and a fresh secret) and publishes it in the job's key-value store; the
// others read it after a barrier. The secret travels only through the launcher's store, so
// nothing needs to be exported by hand, on one host or many.
#pragma once

#include "base/deadline.h"
#include "base/status.h"
#include "weft/weft.h"

namespace weft::bootstrap {

struct PmiRendezvous {
  int rank = -1;
  int nranks = 0;
  weftUniqueId id{};
};

// Collective over the job's processes: each call must be made by every process, in the same
// order (each call's id has a key of its own). The process's one PMI-1 client carries it.
Status rendezvousOverPmi1(Deadline deadline, PmiRendezvous* out);

}  // namespace weft::bootstrap
