// Reading a launcher's environment: weftrun, torchrun, Open MPI, MPICH's Hydra, MVAPICH, Slurm.
#pragma once

#include <string>

#include "base/status.h"
#include "bootstrap/job_store.h"
#include "net/address.h"
#include "net/auth.h"

namespace weft::bootstrap {

struct LaunchInfo {
  std::string launcher;  // "weftrun", "torchrun", "openmpi", "slurm"
  int rank = -1;
  int nranks = 0;
  int localRank = -1;       // -1 when the launcher does not say
  int localNranks = 0;      // 0 when the launcher does not say
  net::SocketAddress root;  // rank 0 listens here for the rendezvous
  net::Secret secret{};
  bool secretFromEnv = false;  // false: derived from the job's identity (warn across hosts)
  // Under a launcher that serves a key-value store (PMI-1: MPICH's Hydra; PMIx: Open MPI's
  // mpirun, srun --mpi=pmix) and without WEFT_ROOT_ADDR, the rendezvous goes through that store
  // (store_rendezvous.h), which also says the rank and size; root and secret are unset then.
  // rank and nranks keep what the launcher's variables say (-1 and 0 when none do), to be
  // checked against the store's.
  JobStoreKind store = JobStoreKind::none;
};

// Reads the first launcher whose variables are present, in the order weftrun, torchrun, Open MPI,
// Slurm. Errors name the missing or malformed variable. Without WEFT_ROOT_ADDR, Slurm ranks
// across hosts (srun --mpi=none) meet at the first node of SLURM_STEP_NODELIST, on a port
// derived from the job and step ids.
Status readLaunchEnvironment(LaunchInfo* out);
// How to give every rank of a job started by `launcher` (LaunchInfo::launcher) the same
// WEFT_SECRET, for the warning about a derived secret across hosts: a shell command line.
std::string secretAdvice(const std::string& launcher);
// Whether any supported launcher's variables are present at all.
bool launcherDetected();

}  // namespace weft::bootstrap
