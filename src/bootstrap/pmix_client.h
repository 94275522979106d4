// weft as a PMIx client, for Open MPI's mpirun (4.x runs a PMIx server in every orted, 5.x in
// PRRTE) and srun --mpi=pmix. libpmix is loaded with dlopen on first use (WEFT_PMIX_LIB, default
// libpmix.so.2), as libibverbs is: weft has no link-time dependency on it, and a build without
// the PMIx headers simply has no PMIx.
//
// The client is the process's one: PMIx_Init once, shared by every communicator of the process,
// PMIx_Finalize at exit (a process that leaves without it may count as failed to its launcher).
// An MPI library in the same process initialises the same libpmix; PMIx counts the inits.
//
// Deadlines: every blocking call carries PMIX_TIMEOUT, the seconds left before the deadline.
// A server that ignores it still ends the job when one of its processes dies, which is what
// releases a fence that waits for a dead rank.
#pragma once

#include <string>

#include "bootstrap/job_store.h"

namespace weft::bootstrap {

// Whether the launcher says it serves PMIx (PMIX_NAMESPACE and PMIX_RANK are set).
bool pmixDetected();

// Whether this build speaks PMIx and the library loads; *why says why not.
bool pmixAvailable(std::string* why);

// The process's PMIx client, initialised on first use; the first call's error stands for every
// later call.
Status processPmixClient(Deadline deadline, JobStore** out);

}  // namespace weft::bootstrap
