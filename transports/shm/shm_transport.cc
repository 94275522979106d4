// The shm data path. Sends are copied into the receiver's ring slot by slot (or, from the
// single-copy threshold up, announced in one slot that the receiver reads straight from the
// sender's memory); receives copy out of this rank's rings. Progress touches only shared memory;
// the only system calls are eventfd writes to a peer that announced it sleeps, and the
// process_vm_readv of single-copy messages.
#include <sys/epoll.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <new>

#include "base/log.h"
#include "transports/message_mismatch.h"
#include "transports/shm/shm_internal.h"

namespace weft::shm {
namespace {

// A single-copy read is split into pieces of this size, so that one large message does not hold
// up the other peers' rings for long.
constexpr size_t kCrossMemoryPiece = 4 << 20;

}  // namespace

ShmTransport::ShmTransport(const ShmOptions& options) : options_(options) {}

ShmTransport::~ShmTransport() {
  close(false);
}

std::unique_ptr<Transport> createShmTransport(const ShmOptions& options) {
  return std::make_unique<ShmTransport>(options);
}

void ShmTransport::post(Xfer* xfer) {
  LocalPeer* peer = peerOf(xfer->peer);
  if (peer == nullptr || peer->dead) {
    xfer->complete(
        remoteError(peerNames_[xfer->peer] + " is unreachable after an earlier failure"));
    return;
  }
  auto* state = new (xfer->scratch) XferState();
  state->xfer = xfer;
  activate(*peer);
  if (xfer->kind == Xfer::Kind::kSend) {
    peer->sends.push(state);
    // Writing at once saves a progress round for the common small message.
    if (pushSends(*peer)) {
      std::atomic_thread_fence(std::memory_order_seq_cst);
      wake(*peer);
    }
  } else {
    peer->recvs.push(state);
  }
}

// Progress visits only the peers with transfers queued: a host of a thousand ranks would
// otherwise cost every progress round a thousand cache misses.
void ShmTransport::activate(LocalPeer& peer) {
  if (peer.active) return;
  peer.active = true;
  active_.push_back(peer.index);
}

// Pairs with prepareToSleep(): the peer sets `sleeping` and then re-checks its rings and flags;
// this side publishes, then (after a full fence, which the caller provides) reads `sleeping`.
// So at least one of them sees the other's write, and no wake-up is lost. publish() also calls
// it before its fence: a peer seen sleeping then is woken at once, and settleWakes() looks again
// after the fence.
void ShmTransport::wake(LocalPeer& peer) {
  if (peer.view.header().sleeping.load(std::memory_order_seq_cst) != 0) {
    uint64_t one = 1;
    [[maybe_unused]] ssize_t ignored = write(peer.endpoint->wakeFd, &one, sizeof(one));
  }
}

// Producer side: fills free slots of the peer's ring with the queued sends, in order. Returns
// whether anything was published (the caller then wakes the peer if it sleeps).
bool ShmTransport::pushSends(LocalPeer& peer) {
  RingControl& ring = peer.view.ring(myIndex_);
  const uint64_t start = peer.head;
  uint64_t tail = ring.tail.load(std::memory_order_acquire);
  while (!peer.sends.empty()) {
    if (peer.head - tail >= peer.view.layout.slots) {
      tail = ring.tail.load(std::memory_order_acquire);
      if (peer.head - tail >= peer.view.layout.slots)
        break;  // full: the consumer's progress wakes us
    }
    XferState* state = peer.sends.front();
    Xfer* xfer = state->xfer;
    char* slot = peer.view.slot(myIndex_, peer.head);
    auto* header = reinterpret_cast<SlotHeader*>(slot);
    header->tag = xfer->tag;
    header->totalBytes = xfer->bytes;
    header->offset = state->done;
    // Decided at a message's first slot: the receiver may record that it can read this rank
    // while a message is under way, and a message must not change form halfway.
    if (state->done == 0) {
      state->singleCopy = options_.crossMemoryMinBytes > 0 &&
                          xfer->bytes >= options_.crossMemoryMinBytes &&
                          peer.view.readable(myIndex_).load(std::memory_order_relaxed) == 1;
    }
    const bool singleCopy = state->singleCopy;
    if (singleCopy) {
      header->kind = SlotKind::kCrossMemory;
      header->address = reinterpret_cast<uint64_t>(xfer->buf);
      header->bytes = 0;
      state->slot = peer.head;
      state->done = xfer->bytes;
    } else {
      size_t chunk = std::min(kSlotPayload, xfer->bytes - state->done);
      header->kind = SlotKind::kInline;
      header->bytes = static_cast<uint32_t>(chunk);
      if (chunk > 0) {
        std::memcpy(slot + kSlotHeaderBytes, static_cast<const char*>(xfer->buf) + state->done,
                    chunk);
      }
      state->done += chunk;
    }
    ++peer.head;
    ring.head.store(peer.head, std::memory_order_release);
    if (state->done == xfer->bytes) {
      peer.sends.pop();
      if (singleCopy) {
        peer.awaitingRead.push(state);  // complete once the receiver has read it
      } else {
        xfer->complete();
      }
    }
  }
  return peer.head != start;
}

// Cross-memory sends complete when the receiver consumed their slot (it has read the buffer).
bool ShmTransport::retireReads(LocalPeer& peer) {
  if (peer.awaitingRead.empty()) return false;
  const uint64_t tail = peer.view.ring(myIndex_).tail.load(std::memory_order_acquire);
  bool retired = false;
  while (!peer.awaitingRead.empty() && peer.awaitingRead.front()->slot < tail) {
    peer.awaitingRead.pop()->xfer->complete();
    retired = true;
  }
  return retired;
}

// Consumer side: copies messages out of this rank's ring from `peer` into the posted receives.
Status ShmTransport::pullRecvs(LocalPeer& peer, bool* consumed) {
  LocalPeer& me = locals_[myIndex_];
  RingControl& ring = me.view.ring(peer.index);
  const uint64_t start = peer.tail;
  uint64_t head = ring.head.load(std::memory_order_acquire);
  while (!peer.recvs.empty() && peer.tail < head) {
    XferState* state = peer.recvs.front();
    Xfer* xfer = state->xfer;
    const char* slot = me.view.slot(peer.index, peer.tail);
    const auto* header = reinterpret_cast<const SlotHeader*>(slot);
    // A single-copy slot stays at the tail while its pieces are read, so its offset stays 0.
    const uint64_t expectedOffset = header->kind == SlotKind::kCrossMemory ? 0 : state->done;
    if (header->tag != xfer->tag || header->totalBytes != xfer->bytes ||
        header->offset != expectedOffset) {
      return messageMismatch(xfer->tag, xfer->bytes, header->tag, header->totalBytes);
    }
    if (header->kind == SlotKind::kCrossMemory) {
      // Read in pieces; the slot is consumed (releasing the sender's buffer) after the last one.
      size_t piece = std::min(kCrossMemoryPiece, xfer->bytes - state->done);
      iovec local{static_cast<char*>(xfer->buf) + state->done, piece};
      iovec remote{reinterpret_cast<void*>(header->address + state->done), piece};
      ssize_t got = process_vm_readv(peer.pid, &local, 1, &remote, 1, 0);
      if (got <= 0) {
        return remoteError(std::string("process_vm_readv failed: ") +
                           (got < 0 ? std::strerror(errno) : "nothing read") +
                           " (the peer process probably died)");
      }
      state->done += static_cast<size_t>(got);
      if (state->done < xfer->bytes) break;  // more next round; other peers get their turn
    } else {
      if (header->bytes > 0)
        std::memcpy(static_cast<char*>(xfer->buf) + state->done, slot + kSlotHeaderBytes,
                    header->bytes);
      state->done += header->bytes;
    }
    ++peer.tail;
    ring.tail.store(peer.tail, std::memory_order_release);
    if (state->done == xfer->bytes) {
      peer.recvs.pop();
      xfer->complete();
    }
  }
  *consumed = peer.tail != start;
  return Status::ok();
}

Status ShmTransport::failPeer(LocalPeer& peer, const Status& why, bool notice, int culprit) {
  Status failure = failures_.peerFailed("shm with ", peerNames_, peer.rank, why, notice, culprit);
  if (!peer.dead) {
    peer.dead = true;
    WEFT_WARN("%s", failure.message().c_str());
  }
  for (XferQueue* queue : {&peer.sends, &peer.awaitingRead, &peer.recvs}) {
    while (!queue->empty()) {
      Xfer* xfer = queue->pop()->xfer;
      if (!xfer->done) xfer->complete(failure);
    }
  }
  return failure;
}

// The eventfd only wakes us (its count is drained); the news word says whether a peer changed
// its state; a readable pidfd says that a peer process exited.
Status ShmTransport::collectEvents() {
  Status failure;
  epoll_event events[16];
  int count = epoll_wait(epollFd_, events, 16, 0);
  for (int i = 0; i < count; ++i) {
    const uint64_t what = events[i].data.u64;
    if (what == kWakeEvent) {
      uint64_t drained;
      [[maybe_unused]] ssize_t ignored = read(wakeFd_, &drained, sizeof(drained));
      continue;
    }
    const ProcessWatch& watch = *watches_[what - kWatchEvent];
    epoll_ctl(epollFd_, EPOLL_CTL_DEL, watch.fd, nullptr);
    Status exited = processExited(watch.pid);
    if (failure.isOk()) failure = exited;
  }
  Status states = readPeerStates();
  return failure.isOk() ? states : failure;
}

Status ShmTransport::readPeerStates() {
  const uint64_t news = locals_[myIndex_].view.header().news.load(std::memory_order_acquire);
  if (news == seenNews_) return Status::ok();
  seenNews_ = news;
  Status failure;
  for (LocalPeer& peer : locals_) {
    if (peer.index == myIndex_ || peer.dead || peer.departed || peer.view.base == nullptr) {
      continue;
    }
    const auto state =
        static_cast<OwnerState>(peer.view.header().state.load(std::memory_order_seq_cst));
    Status failed = failWithState(peer, state);
    if (failure.isOk()) failure = failed;
  }
  return failure;
}

Status ShmTransport::failWithState(LocalPeer& peer, OwnerState state) {
  switch (state) {
    case OwnerState::kRunning:
      return Status::ok();
    case OwnerState::kDeparted:
      // Messages it sent before leaving are still in this rank's ring; progress() fails only
      // what can no longer complete.
      peer.departed = true;
      activate(peer);
      return Status::ok();
    case OwnerState::kFailed:
      return failPeer(peer,
                      remoteError("it stopped after a failure of its own (a timeout or an abort)"),
                      true, peer.view.header().culprit.load(std::memory_order_seq_cst));
    case OwnerState::kClosed:
      break;
  }
  return failPeer(peer, remoteError("the peer died or aborted (it closed its communicator "
                                    "without a goodbye)"));
}

// A rank whose state says more (it left, or failed first) is judged by that; the others died
// with their process.
Status ShmTransport::processExited(pid_t pid) {
  Status failure;
  for (LocalPeer& peer : locals_) {
    if (peer.index == myIndex_ || peer.pid != pid || peer.dead || peer.departed) continue;
    const auto state =
        static_cast<OwnerState>(peer.view.header().state.load(std::memory_order_seq_cst));
    Status failed = state != OwnerState::kRunning
                        ? failWithState(peer, state)
                        : failPeer(peer, remoteError("the peer process died (pid " +
                                                     std::to_string(pid) + " exited)"));
    if (failure.isOk()) failure = failed;
  }
  return failure;
}

Status ShmTransport::progress(bool woken) {
  constexpr unsigned kPollsBeforeSettling = 16;
  if (wakesOwed_ && ++pollsOwingWakes_ >= kPollsBeforeSettling) settleWakes();
  Status failure = std::move(pendingFailure_);
  pendingFailure_ = Status::ok();
  // A peer's news costs a polling rank one load of its own header; a readable pidfd is noticed
  // when woken (the eventfd a peer writes with its news wakes a sleeping rank too).
  Status events = woken ? collectEvents() : readPeerStates();
  if (failure.isOk()) failure = events;
  for (size_t next = 0; next < active_.size();) {
    LocalPeer& peer = locals_[active_[next]];
    Status step = progressPeer(peer);
    if (failure.isOk()) failure = step;
    if (peer.dead || (peer.sends.empty() && peer.awaitingRead.empty() && peer.recvs.empty())) {
      peer.active = false;
      active_[next] = active_.back();
      active_.pop_back();
    } else {
      ++next;
    }
  }
  return failure;
}

Status ShmTransport::progressPeer(LocalPeer& peer) {
  if (peer.dead) return Status::ok();
  bool published = pushSends(peer);
  retireReads(peer);
  bool consumed = false;
  Status pulled = pullRecvs(peer, &consumed);
  if (!pulled.isOk()) {
    // A failed read usually means the peer exited after a failure elsewhere: its notice, or
    // its process's exit, names the origin better, so read those first.
    Status events = collectEvents();
    Status failed = peer.dead ? Status::ok() : failPeer(peer, pulled);
    return events.isOk() ? failed : events;
  }
  if (peer.departed) {
    const bool drained = locals_[myIndex_].view.ring(peer.index).head.load() == peer.tail;
    if (!peer.sends.empty() || !peer.awaitingRead.empty() || (!peer.recvs.empty() && drained)) {
      return failPeer(peer, remoteError("the peer destroyed its communicator while this rank "
                                        "still had transfers with it"));
    }
    return Status::ok();
  }
  // The peer may sleep waiting for ring space, a read to finish, or this message.
  if (published || consumed) {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    wake(peer);
  }
  return Status::ok();
}

// True when something can move without waiting for a peer.
bool ShmTransport::hasWork(LocalPeer& peer) {
  if (!peer.recvs.empty() &&
      locals_[myIndex_].view.ring(peer.index).head.load(std::memory_order_seq_cst) > peer.tail) {
    return true;
  }
  RingControl& theirs = peer.view.ring(myIndex_);
  uint64_t tail = theirs.tail.load(std::memory_order_seq_cst);
  if (!peer.sends.empty() && peer.head - tail < peer.view.layout.slots) return true;
  if (!peer.awaitingRead.empty() && peer.awaitingRead.front()->slot < tail) return true;
  return false;
}

bool ShmTransport::prepareToSleep() {
  locals_[myIndex_].view.header().sleeping.store(1, std::memory_order_seq_cst);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  settleWakes();  // no peer may be left asleep on this rank's flags while it sleeps
  for (int index : active_) {
    LocalPeer& peer = locals_[index];
    if (!peer.dead && hasWork(peer)) {
      finishSleep();
      return false;
    }
  }
  return true;
}

void ShmTransport::finishSleep() {
  locals_[myIndex_].view.header().sleeping.store(0, std::memory_order_seq_cst);
}

// A fence right after the store would wait for the flag's cache line to come back from the
// peers polling it, before this rank can look at theirs: for a barrier on two ranks that wait
// was most of the call (0.58 us per barrier with it, 0.41 without, on an AMD EPYC). So the
// store is a release and the fence comes later: a peer seen sleeping now is woken now; one that
// went to sleep just as the flag was stored, and may not have seen it, is woken once this rank
// fences (settleWakes()): within a few polls of its own next wait, before it sleeps itself, and
// at the end of the operation at the latest.
void ShmTransport::publish(int which, uint64_t value) {
  locals_[myIndex_].view.flag(which).value.store(value, std::memory_order_release);
  wakeSleepingPeers();
  wakesOwed_ = true;
  pollsOwingWakes_ = 0;
}

void ShmTransport::settleWakes() {
  if (!wakesOwed_) return;
  wakesOwed_ = false;
  std::atomic_thread_fence(std::memory_order_seq_cst);
  wakeSleepingPeers();
}

void ShmTransport::wakeSleepingPeers() {
  for (LocalPeer& peer : locals_) {
    if (peer.index != myIndex_ && !peer.dead) wake(peer);
  }
}

int ShmTransport::findCulprit() {
  if (!locals_.empty()) [[maybe_unused]]
    Status ignored = collectEvents();
  return failures_.culprit();
}

void ShmTransport::announce(OwnerState state, int culprit) {
  SegmentHeader& mine = locals_[myIndex_].view.header();
  mine.culprit.store(culprit, std::memory_order_seq_cst);
  mine.state.store(static_cast<uint32_t>(state), std::memory_order_seq_cst);
  for (LocalPeer& peer : locals_) {
    if (peer.index == myIndex_ || peer.view.base == nullptr) continue;  // set-up cut short
    peer.view.header().news.fetch_add(1, std::memory_order_seq_cst);
    uint64_t one = 1;
    [[maybe_unused]] ssize_t ignored = write(peer.endpoint->wakeFd, &one, sizeof(one));
  }
}

// Failed peers are told too: a protocol error (a message mismatch) leaves a peer running, and it
// may be waiting for this rank.
void ShmTransport::announceFailure(int culprit) {
  if (myIndex_ < 0 || locals_.empty()) return;
  announce(OwnerState::kFailed, culprit);
}

void ShmTransport::close(bool graceful) {
  const bool connected =
      myIndex_ >= 0 && myIndex_ < localSize() && locals_[myIndex_].endpoint != nullptr;
  if (connected) {
    const auto state = static_cast<OwnerState>(
        locals_[myIndex_].view.header().state.load(std::memory_order_seq_cst));
    if (state == OwnerState::kRunning) {
      announce(graceful ? OwnerState::kDeparted : OwnerState::kClosed, -1);
    }
  }
  // Peers of this process keep what they use of this rank's endpoint (its eventfd included).
  locals_.clear();
  byRank_.clear();
  active_.clear();
  watches_.clear();
  listener_.close();
  if (epollFd_ >= 0) ::close(epollFd_);
  if (wakeFd_ >= 0 && !wakeFdHandedOver_) ::close(wakeFd_);
  epollFd_ = wakeFd_ = -1;
}

// Every rank's readable words, as each wrote them after probing its peers at set-up.
bool ShmTransport::everyRankReadsEveryOther() const {
  if (allReadable_) return true;
  for (const LocalPeer& reader : locals_) {
    if (reader.view.base == nullptr) return false;
    for (const LocalPeer& owner : locals_) {
      if (owner.index != reader.index &&
          reader.view.readable(owner.index).load(std::memory_order_acquire) == 0) {
        return false;
      }
    }
  }
  allReadable_ = true;
  return true;
}

}  // namespace weft::shm
