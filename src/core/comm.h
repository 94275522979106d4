// The communicator: its layout, its connections and its executor. `struct weftComm` is the type
// behind the public opaque handle.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "base/status.h"
#include "bootstrap/bootstrap.h"
#include "bootstrap/peer_info.h"
#include "core/config.h"
#include "core/device_layer.h"
#include "core/executor.h"
#include "core/online_tuning.h"
#include "core/outstanding.h"
#include "fabric/fabric.h"
#include "tune/select.h"

namespace weft {
class OpResources;

// A weftCommRegister registration; its address is the handle.
struct Registration {
  void* buff;
  size_t size;
};
}  // namespace weft

// A window of weftCommWindowRegister: this rank's buffer of it.
struct weftWindow {
  void* buff;
  size_t size;
  int flags;
};

struct weftComm {
  int rank = 0;
  int nranks = 0;
  weft::CommConfig config;
  std::vector<weft::PeerInfo> peers;
  int nodes = 1;                         // distinct host identities
  std::string networkTransport = "tcp";  // what carries the peers of other hosts: tcp or rdma
  int localRanks = 1;           // ranks on this rank's host that it reaches through shared memory
  weft::Layout layout;          // what the tuner's choices depend on
  std::string tuneFingerprint;  // the layout as tuning tables name it (tune/tuning_table.h)

  // Declared before the fabric, so that the transfers it may still hold outlive it. Owned by
  // the executing thread.
  weft::OutstandingTransfers outstanding;
  std::unique_ptr<weft::bootstrap::Bootstrap> bootstrap;
  std::unique_ptr<weft::Fabric> fabric;
  std::unique_ptr<weft::OpResources> resources;
  std::shared_ptr<weft::Executor> executor;  // shared with outstanding requests

  // Owned by whichever thread is executing (the executor guarantees there is one at a time).
  uint64_t collectiveSeq = 0;
  std::vector<uint32_t> p2pSent;      // messages sent to each peer by Send
  std::vector<uint32_t> p2pReceived;  // messages received from each peer by Recv
  std::string opLabel;
  // Plans already chosen, by (collective, datatype, count): the choice is computed and logged
  // once per distinct call shape.
  std::unordered_map<uint64_t, weft::Plan> plans;
  // Online refinement (core/online_tuning.h): shapes whose candidates are being tried, shapes
  // found to need no trial, and whether the trial's agreement is running.
  std::unordered_map<uint64_t, weft::OnlineTrial> trials;
  std::unordered_set<uint64_t> decidedWithoutTrial;
  bool agreeingOnTrial = false;

  // The GPU side, made by the first call with device buffers or a stream (the GPU layer's
  // GpuState); a communicator that never sees either never touches a GPU runtime.
  std::mutex gpuMutex;
  std::unique_ptr<weft::DeviceLayer> gpu;

  // Registrations (weftCommRegister) and windows (weftCommWindowRegister), guarded by
  // memoryMutex; symmetricWindows counts the symmetric windows for the executor's choices.
  std::mutex memoryMutex;
  std::vector<std::unique_ptr<weft::Registration>> registrations;
  std::vector<std::unique_ptr<weftWindow>> windows;
  std::atomic<int> symmetricWindows{0};
  // Registrations made or dropped since the last operation, handed to the transports by the
  // executing thread before the next one (the transports are not thread-safe).
  struct RegistrationChange {
    const void* buff;
    size_t size;
    bool registered;
  };
  std::vector<RegistrationChange> registrationChanges;
  // Set with a change queued (under memoryMutex), so that an operation with none to apply takes
  // no lock: the smallest call pays for every step on its path.
  std::atomic<bool> registrationChangesPending{false};

  // Set once an operation fails for a reason that leaves the connections unusable.
  std::mutex failureMutex;
  weft::Status failure;
  std::atomic<bool> failed{false};
  std::string lastError;  // guarded by failureMutex
};

namespace weft {

// Creates a communicator; `id` comes from a weftUniqueId or the launcher's environment.
Status createComm(int nranks, const bootstrap::UniqueIdContents& id, int rank,
                  const CommConfig& config, weftComm** out);
// Runs an operation (one call or a group's calls) on the executing thread.
// A non-blocking Send or Recv may return with its transfer in flight (core/outstanding.h).
Status executeOp(weftComm* comm, Op& op);
// Runs one collective of an operation on the executing thread.
Status runCollective(weftComm* comm, const CollArgs& args);
// The plan for a call of this shape: chosen (and logged) the first time, then remembered. On the
// executing thread only.
const Plan& planFor(weftComm* comm, const CollArgs& call);
// Replaces the forced algorithms (WEFT_ALGO) and forgets the plans chosen so far, so that
// `weft_tune measure` can time every candidate on one communicator. Only between calls: nothing
// may be in flight. Every rank must pass the same overrides.
Status replaceAlgoOverrides(weftComm* comm, const AlgoOverrides& overrides);
// A failure that ends the communicator (timeout, dead peer, abort, protocol mismatch).
void markFailed(weftComm* comm, const Status& why);
Status commFailure(weftComm* comm);
// Collective over comm: see weftCommSplit.
Status splitComm(weftComm* comm, int color, int key, const CommConfig& config, weftComm** newcomm);
// Frees everything; graceful tells peers this rank leaves on purpose.
void releaseComm(weftComm* comm, bool graceful);

}  // namespace weft
