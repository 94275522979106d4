// Reading a launcher's environment: weftrun, torchrun, Open MPI, MPICH's Hydra, MVAPICH, Slurm.
#pragma once

#include <string>

#include "base/status.h"
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
  // Under a PMI-1 launcher without WEFT_ROOT_ADDR: the rendezvous goes through its key-value
  // store (pmi1_rendezvous.h), which also says the rank and size; root and secret are unset.
  bool viaPmi = false;
};

// Reads the first launcher whose variables are present, in the order weftrun, torchrun, Open MPI,
// Slurm. Errors name the missing or malformed variable.
Status readLaunchEnvironment(LaunchInfo* out);
// Whether any supported launcher's variables are present at all.
bool launcherDetected();

}  // namespace weft::bootstrap
