// A launcher's key-value store, as much of it as weft's rendezvous needs. MPICH's Hydra serves
// one over PMI-1 (bootstrap/pmi1_client.h); Open MPI's mpirun and srun --mpi=pmix over PMIx
// (bootstrap/pmix_client.h). What goes through it stays inside the job: that is how rank 0's
// unique id, secret included, reaches the others with nothing exported by hand.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "base/deadline.h"
#include "base/status.h"

namespace weft::bootstrap {

// Which store, if any, a launcher's environment offers (bootstrap/launch_env.h).
enum class JobStoreKind { none, pmi1, pmix };

class JobStore {
 public:
  virtual ~JobStore() = default;

  virtual const char* name() const = 0;  // "PMI-1", "PMIx": for messages
  virtual int rank() const = 0;
  virtual int size() const = 0;

  // Publishes bytes under key; the others see them after the next fence. Put each key once.
  virtual Status put(std::string_view key, std::span<const uint8_t> bytes, Deadline deadline) = 0;
  // Collective over every process of the job, in the same order on all of them.
  virtual Status fence(Deadline deadline) = 0;
  // What rank `owner` put under key before the last fence.
  virtual Status get(int owner, std::string_view key, std::vector<uint8_t>* bytes,
                     Deadline deadline) = 0;
};

// The process's store of that kind: connected and initialised on first use, shared by every
// communicator of the process, finalized at exit. Never destroyed.
Status processJobStore(JobStoreKind kind, Deadline deadline, JobStore** out);

}  // namespace weft::bootstrap
