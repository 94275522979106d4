#include "algos/algo_context.h"

#include <algorithm>
#include <cstdlib>
#include <new>

namespace weft {

void Staging::AlignedFree::operator()(std::byte* p) const {
  std::free(p);
}

void* Staging::atLeast(size_t bytes, const std::function<void(const void*, size_t)>& freed) {
  if (bytes > bytes_) {
    size_t rounded = (bytes + 4095) & ~size_t{4095};
    void* memory = std::aligned_alloc(64, rounded);
    if (memory == nullptr) throw std::bad_alloc();
    if (memory_ && freed) freed(memory_.get(), bytes_);
    memory_.reset(static_cast<std::byte*>(memory));
    bytes_ = rounded;
  }
  return memory_.get();
}

OpResources::OpResources(int nranks) : sendCounters(nranks), recvCounters(nranks) {}

void OpResources::beginOp() {
  used_ = 0;
  posted_.clear();
  peerMappings.beginCall();
}

Xfer* OpResources::nextXfer() {
  if (used_ == pool_.size()) pool_.emplace_back();
  return &pool_[used_++];
}

// Counters reset lazily when a new operation first talks to a peer, so starting an operation
// costs nothing per peer.
uint32_t OpResources::nextIndex(std::vector<std::pair<uint64_t, uint32_t>>& counters, int peer) {
  auto& [base, next] = counters[peer];
  if (base != tagBase_) {
    base = tagBase_;
    next = 0;
  }
  return next++;
}

AlgoContext::AlgoContext(Fabric& fabric, OpResources& resources, const topo::NodeLayout& nodes,
                         int rank, int nranks, const CollArgs& args, const Plan& plan)
    : fabric_(fabric),
      resources_(resources),
      nodes_(nodes),
      hasWindows_(true),
      rank_(rank),
      nranks_(nranks),
      args_(args),
      plan_(plan),
      typeSize_(weft::typeSize(args.type)),
      blockBytes_(callSizes(args, nranks_).block),
      reducer_(reduce::kernelFor(args.type, args.op)),
      firstPosted_(resources.posted().size()) {}

AlgoContext::AlgoContext(const AlgoContext& whole, std::vector<int> members, const CollArgs& args,
                         const Plan& plan)
    : fabric_(whole.fabric_),
      resources_(whole.resources_),
      nodes_(whole.nodes_),
      members_(std::move(members)),
      hasWindows_(windowsCover(fabric_.windows(), members_)),
      rank_(static_cast<int>(
          std::find(members_.begin(), members_.end(), whole.commRank(whole.rank_)) -
          members_.begin())),
      nranks_(static_cast<int>(members_.size())),
      args_(args),
      plan_(plan),
      typeSize_(weft::typeSize(args.type)),
      blockBytes_(callSizes(args, nranks_).block),
      reducer_(reduce::kernelFor(args.type, args.op)),
      firstPosted_(resources_.posted().size()) {}

bool AlgoContext::windowsCover(const SharedWindows* windows, const std::vector<int>& members) {
  if (windows == nullptr || windows->localSize() != static_cast<int>(members.size())) return false;
  for (int index = 0; index < windows->localSize(); ++index) {
    if (windows->rankOf(index) != members[index]) return false;
  }
  return true;
}

Xfer* AlgoContext::post(Xfer::Kind kind, int peer, void* buf, size_t bytes) {
  peer = commRank(peer);
  Xfer* xfer = resources_.nextXfer();
  auto& counters = kind == Xfer::Kind::kSend ? resources_.sendCounters : resources_.recvCounters;
  xfer->kind = kind;
  xfer->peer = peer;
  xfer->buf = buf;
  xfer->bytes = bytes;
  xfer->tag = resources_.tagBase() | resources_.nextIndex(counters, peer);
  resources_.posted().push_back(xfer);
  fabric_.post(xfer);
  return xfer;
}

Xfer* AlgoContext::send(int peer, const void* buf, size_t bytes) {
  return post(Xfer::Kind::kSend, peer, const_cast<void*>(buf), bytes);
}

Xfer* AlgoContext::recv(int peer, void* buf, size_t bytes) {
  return post(Xfer::Kind::kRecv, peer, buf, bytes);
}

Status AlgoContext::waitAll() {
  auto& posted = resources_.posted();
  return fabric_.waitAll(posted.data() + firstPosted_, posted.size() - firstPosted_);
}

Status AlgoContext::waitPosted(size_t begin, size_t end) {
  auto& posted = resources_.posted();
  return fabric_.waitAll(posted.data() + firstPosted_ + begin, end - begin);
}

Status AlgoContext::exchange(int peer, const void* send, size_t sendBytes, void* recv,
                             size_t recvBytes) {
  const size_t first = postedCount();
  if (sendBytes > 0) this->send(peer, send, sendBytes);
  if (recvBytes > 0) this->recv(peer, recv, recvBytes);
  return waitPosted(first, postedCount());
}

Status AlgoContext::waitForFlags(int which, uint64_t round, int only) {
  SharedWindows& shared = *windows();
  const int size = only < 0 ? shared.localSize() : only + 1;
  int checked = only < 0 ? 0 : only;  // local ranks before it are known to have published
  // This rank's own flag is not read: it has published it (see the header), and once a peer has
  // read the line, reading it back costs a cache miss on the critical path (measured on an AMD
  // EPYC: the 2-rank 8-byte all-reduce took 0.51 us with the look, 0.42 without).
  const int me = only < 0 ? shared.localIndex() : -1;
  return fabric_.waitUntil(
      [&](Status*) {
        while (checked < size &&
               (checked == me ||
                shared.flag(checked, which).load(std::memory_order_acquire) >= round)) {
          ++checked;
        }
        return checked == size;
      },
      [&](int* awaited) {
        *awaited = shared.rankOf(checked);
        return fabric_.peerName(shared.rankOf(checked)) + " to reach round " +
               std::to_string(round) + " (shared-memory flag " + std::to_string(which) + ")";
      });
}

Status AlgoContext::publishAndWait(int which, uint64_t round) {
  windows()->publish(which, round);
  return waitForFlags(which, round);
}

void AlgoContext::finish(void* buf, size_t count) const {
  if (args_.op == weftAvg && count > 0) reduce::finishAvg(buf, count, args_.type, nranks_);
}

}  // namespace weft
