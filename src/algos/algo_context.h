// What an algorithm sees: its rank, the call, the Plan, and a handful of primitives over the
// communicator's Fabric (post a send or receive, wait), plus reusable staging memory. Messages
// are tagged with the operation's sequence number and a per-peer message index, so a rank that
// runs a different operation than its peer is caught at the first message.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <vector>

#include "algos/plan.h"
#include "base/call.h"
#include "fabric/fabric.h"
#include "mem/peer_mappings.h"
#include "reduce/reduce.h"
#include "topo/node_layout.h"

namespace weft {

// Staging memory that grows on demand and is kept for later operations, 64-byte aligned.
class Staging {
 public:
  // At least `bytes`; contents are not preserved when it grows. `freed` is called with the old
  // memory just before it is freed.
  void* atLeast(size_t bytes, const std::function<void(const void*, size_t)>& freed);

 private:
  struct AlignedFree {
    void operator()(std::byte* p) const;
  };
  std::unique_ptr<std::byte, AlignedFree> memory_;
  size_t bytes_ = 0;
};

// Per-communicator memory reused by every operation, so the hot path allocates nothing once
// warmed up.
class OpResources {
 public:
  explicit OpResources(int nranks);
  // Staging memory of at least `bytes`, 64-byte aligned; contents are not preserved.
  void* scratch(size_t bytes) { return scratch_.atLeast(bytes, scratchFreed_); }
  // The same for an algorithm that holds staging across the sub-calls it runs, which use
  // scratch() (two-level reduce).
  void* heldScratch(size_t bytes) { return held_.atLeast(bytes, scratchFreed_); }
  // Called with old staging memory (either kind) just before it is freed (the fabric's
  // transports may hold registrations of it).
  void onScratchFreed(std::function<void(const void*, size_t)> hook) {
    scratchFreed_ = std::move(hook);
  }
  // Starts an operation (one call or a group): recycles its transfers.
  void beginOp();
  // Starts a collective within it: message indices restart under a new tag base.
  void setTagBase(uint64_t tagBase) { tagBase_ = tagBase; }
  Xfer* nextXfer();
  std::vector<Xfer*>& posted() { return posted_; }
  uint32_t nextIndex(std::vector<std::pair<uint64_t, uint32_t>>& counters, int peer);
  uint64_t tagBase() const { return tagBase_; }

  uint64_t windowRound = 0;        // see AlgoContext::nextWindowRound
  mem::PeerMappings peerMappings;  // the host's peers' weftMemAlloc memory (algos/shared_buffers.h)
  std::vector<std::pair<uint64_t, uint32_t>> sendCounters;  // (tagBase, next index) per peer
  std::vector<std::pair<uint64_t, uint32_t>> recvCounters;

 private:
  Staging scratch_;
  Staging held_;
  std::function<void(const void*, size_t)> scratchFreed_;
  std::deque<Xfer> pool_;
  size_t used_ = 0;
  std::vector<Xfer*> posted_;
  uint64_t tagBase_ = 0;
};

class AlgoContext {
 public:
  AlgoContext(Fabric& fabric, OpResources& resources, const topo::NodeLayout& nodes, int rank,
              int nranks, const CollArgs& args, const Plan& plan);
  // A view of a sub-group for composed (two-level) algorithms: `members` lists communicator
  // ranks, and the view's rank i is members[i]. The caller's rank must be a member; `args` and
  // `plan` must outlive the view. A sub-group has the shared windows only when its members are
  // exactly the host's local ranks, in their order (windowsCover): a node's ranks.
  AlgoContext(const AlgoContext& whole, std::vector<int> members, const CollArgs& args,
              const Plan& plan);

  int rank() const { return rank_; }
  int nranks() const { return nranks_; }
  const CollArgs& args() const { return args_; }
  const Plan& plan() const { return plan_; }
  size_t typeSize() const { return typeSize_; }
  // The call's count in bytes (base/call.h's CallSizes::block), computed once per view.
  size_t blockBytes() const { return blockBytes_; }
  // Which communicator ranks share a node (only meaningful on the whole communicator's view).
  const topo::NodeLayout& nodes() const { return nodes_; }
  // The communicator rank behind this view's rank.
  int commRank(int rank) const { return members_.empty() ? rank : members_[rank]; }

  Xfer* send(int peer, const void* buf, size_t bytes);
  Xfer* recv(int peer, void* buf, size_t bytes);
  Status wait(Xfer* xfer) { return fabric_.wait(xfer); }
  // Waits for every transfer this collective has posted.
  Status waitAll();
  // Transfers this collective has posted, numbered from 0 in posting order; an algorithm notes
  // the count before a phase and can later wait for that phase's transfers alone.
  size_t postedCount() const { return resources_.posted().size() - firstPosted_; }
  Xfer* posted(size_t index) const { return resources_.posted()[firstPosted_ + index]; }
  Status waitPosted(size_t begin, size_t end);
  // Sends `sendBytes` to `peer` and receives `recvBytes` from it, each only when not empty (the
  // peer computes the same sizes), and waits for both: what was sent may be overwritten next.
  Status exchange(int peer, const void* send, size_t sendBytes, void* recv, size_t recvBytes);

  void* scratch(size_t bytes) { return resources_.scratch(bytes); }
  // Staging that stays valid across sub-calls run with two_level::runOn (they use scratch()).
  void* heldScratch(size_t bytes) { return resources_.heldScratch(bytes); }

  // Shared memory of the ranks of this host (nullptr without the shm transport, and in a
  // sub-group that is not exactly this host's ranks). The direct algorithms use it only when
  // every rank of the view shares it (window::available).
  SharedWindows* windows() const { return hasWindows_ ? fabric_.windows() : nullptr; }
  // Whether `windows` are shared by exactly `members` (communicator ranks), local index i
  // being members[i].
  static bool windowsCover(const SharedWindows* windows, const std::vector<int>& members);
  mem::PeerMappings& peerMappings() { return resources_.peerMappings; }
  // A new round of window use: every local rank numbers its rounds alike, since all run the
  // same operations in the same order.
  uint64_t nextWindowRound() { return ++resources_.windowRound; }
  // Publishes this rank's flag `which` = round and waits until every local rank has published
  // that flag with a value >= round.
  Status publishAndWait(int which, uint64_t round);
  // Waits until local rank `only` (or, with -1, every local rank) has published flag `which`
  // with a value >= round. With -1 this rank must have published its own already (every
  // algorithm publishes before it waits); its own flag is not looked at.
  Status waitForFlags(int which, uint64_t round, int only = -1);
  // dst = a (op) b over count elements of the call's datatype.
  void reduce(void* dst, const void* a, const void* b, size_t count) const {
    if (count > 0) reducer_(dst, a, b, count);
  }
  // Completes weftAvg on a fully reduced range; a no-op for other ops.
  void finish(void* buf, size_t count) const;

 private:
  Xfer* post(Xfer::Kind kind, int peer, void* buf, size_t bytes);

  Fabric& fabric_;
  OpResources& resources_;
  const topo::NodeLayout& nodes_;
  std::vector<int> members_;  // empty: the whole communicator
  bool hasWindows_;           // windows() gives the fabric's windows
  int rank_;
  int nranks_;
  const CollArgs& args_;
  const Plan& plan_;
  size_t typeSize_;
  size_t blockBytes_;
  reduce::ReduceFn reducer_;
  size_t firstPosted_;  // this collective's transfers start here in resources_.posted()
};

}  // namespace weft
