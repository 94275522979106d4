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
#include "transports/shm/shm_internal.h"
#include "transports/side_link.h"

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

// Pairs with prepareToSleep(): the peer sets `sleeping` and then re-checks its rings and flags;
// this side publishes, then (after a full fence, which the caller provides) reads `sleeping`.
// So at least one of them sees the other's write, and no wake-up is lost.
void ShmTransport::wake(LocalPeer& peer) {
  if (peer.view.header().sleeping.load(std::memory_order_seq_cst) != 0) {
    uint64_t one = 1;
    [[maybe_unused]] ssize_t ignored = write(peer.wakeFd, &one, sizeof(one));
  }
}

// Producer side: fills free slots of the peer's ring with the queued sends, in order. Returns
// whether anything was published (the caller then wakes the peer if it sleeps).
bool ShmTransport::pushSends(LocalPeer& peer) {
  RingControl& ring = peer.view.ring(myIndex_);
  const uint64_t start = peer.head;
  uint64_t tail = ring.tail.load(std::memory_order_acquire);
  while (!peer.sends.empty()) {
    if (peer.head - tail >= kSlots) {
      tail = ring.tail.load(std::memory_order_acquire);
      if (peer.head - tail >= kSlots) break;  // full: the consumer's progress wakes us
    }
    XferState* state = peer.sends.front();
    Xfer* xfer = state->xfer;
    char* slot = peer.view.slot(myIndex_, peer.head);
    auto* header = reinterpret_cast<SlotHeader*>(slot);
    header->tag = xfer->tag;
    header->totalBytes = xfer->bytes;
    header->offset = state->done;
    const bool singleCopy = peer.peerCanReadMe && options_.crossMemoryMinBytes > 0 &&
                            xfer->bytes >= options_.crossMemoryMinBytes;
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
      return invalidUsage("message mismatch: expected tag " + std::to_string(xfer->tag >> 32) +
                          "/" + std::to_string(xfer->tag & 0xffffffffu) + " with " +
                          std::to_string(xfer->bytes) + " bytes, received tag " +
                          std::to_string(header->tag >> 32) + "/" +
                          std::to_string(header->tag & 0xffffffffu) + " with " +
                          std::to_string(header->totalBytes) +
                          " bytes (ranks called different operations, counts or datatypes)");
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

// Reads the sockets' news (transports/side_link.h). The eventfd only wakes us; its count is
// drained.
Status ShmTransport::collectEvents() {
  Status failure;
  epoll_event events[16];
  int count = epoll_wait(epollFd_, events, 16, 0);
  for (int i = 0; i < count; ++i) {
    if (events[i].data.u64 == ~0ull) {
      uint64_t drained;
      [[maybe_unused]] ssize_t ignored = read(wakeFd_, &drained, sizeof(drained));
      continue;
    }
    LocalPeer& peer = locals_[events[i].data.u64];
    if (peer.dead || peer.departed) continue;
    const SideNews news = readSideNews(peer.link.fd());
    Status failed;
    switch (news.kind) {
      case SideNews::Kind::kNothing:
        continue;
      case SideNews::Kind::kGoodbye:
        // Messages it sent before leaving are still in this rank's ring; progress() fails only
        // what can no longer complete.
        peer.departed = true;
        break;
      case SideNews::Kind::kFailureNotice:
        failed = failPeer(
            peer, remoteError("it stopped after a failure of its own (a timeout or an abort)"),
            true, news.culprit);
        break;
      case SideNews::Kind::kClosed:
        failed = failPeer(peer, remoteError("the peer process died or aborted (its socket closed "
                                            "without a goodbye)"));
        break;
    }
    epoll_ctl(epollFd_, EPOLL_CTL_DEL, peer.link.fd(), nullptr);
    if (failure.isOk()) failure = failed;
  }
  return failure;
}

Status ShmTransport::progress(bool woken) {
  Status failure = std::move(pendingFailure_);
  pendingFailure_ = Status::ok();
  if (woken) {
    Status events = collectEvents();
    if (failure.isOk()) failure = events;
  }
  for (LocalPeer& peer : locals_) {
    if (peer.index == myIndex_ || peer.dead) continue;
    bool published = pushSends(peer);
    retireReads(peer);
    bool consumed = false;
    Status pulled = pullRecvs(peer, &consumed);
    if (!pulled.isOk()) {
      // A failed read usually means the peer exited after a failure elsewhere: its notice, or
      // the culprit's own hang-up, names the origin better, so read the sockets first.
      Status events = collectEvents();
      Status failed = peer.dead ? Status::ok() : failPeer(peer, pulled);
      if (failure.isOk()) failure = events.isOk() ? failed : events;
      continue;
    }
    if (peer.departed) {
      const bool drained = locals_[myIndex_].view.ring(peer.index).head.load() == peer.tail;
      if (!peer.sends.empty() || !peer.awaitingRead.empty() || (!peer.recvs.empty() && drained)) {
        Status left =
            failPeer(peer, remoteError("the peer destroyed its communicator while this rank "
                                       "still had transfers with it"));
        if (failure.isOk()) failure = left;
      }
      continue;
    }
    // The peer may sleep waiting for ring space, a read to finish, or this message.
    if (published || consumed) {
      std::atomic_thread_fence(std::memory_order_seq_cst);
      wake(peer);
    }
  }
  return failure;
}

// True when something can move without waiting for a peer.
bool ShmTransport::hasWork(LocalPeer& peer) {
  if (!peer.recvs.empty() &&
      locals_[myIndex_].view.ring(peer.index).head.load(std::memory_order_seq_cst) > peer.tail) {
    return true;
  }
  RingControl& theirs = peer.view.ring(myIndex_);
  uint64_t tail = theirs.tail.load(std::memory_order_seq_cst);
  if (!peer.sends.empty() && peer.head - tail < kSlots) return true;
  if (!peer.awaitingRead.empty() && peer.awaitingRead.front()->slot < tail) return true;
  return false;
}

bool ShmTransport::prepareToSleep() {
  locals_[myIndex_].view.header().sleeping.store(1, std::memory_order_seq_cst);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  for (LocalPeer& peer : locals_) {
    if (peer.index != myIndex_ && !peer.dead && hasWork(peer)) {
      finishSleep();
      return false;
    }
  }
  return true;
}

void ShmTransport::finishSleep() {
  locals_[myIndex_].view.header().sleeping.store(0, std::memory_order_seq_cst);
}

void ShmTransport::publish(int which, uint64_t value) {
  // A sequentially consistent store is a full fence on its own (see wake()).
  locals_[myIndex_].view.flag(which).value.store(value, std::memory_order_seq_cst);
  for (LocalPeer& peer : locals_) {
    if (peer.index != myIndex_ && !peer.dead) wake(peer);
  }
}

int ShmTransport::findCulprit() {
  [[maybe_unused]] Status ignored = collectEvents();  // reads notices and hang-ups
  return failures_.culprit();
}

void ShmTransport::announceFailure(int culprit) {
  // Failed peers too: a protocol error (a message mismatch) leaves the link up, and that peer may
  // be waiting for this rank; on a closed link the send just fails.
  for (LocalPeer& peer : locals_) {
    if (peer.index == myIndex_ || peer.departed || !peer.link.isOpen()) continue;
    sendFailureNotice(peer.link.fd(), culprit);
  }
}

void ShmTransport::close(bool graceful) {
  for (LocalPeer& peer : locals_) {
    if (peer.index == myIndex_) continue;
    if (graceful && !peer.dead && peer.link.isOpen()) sendGoodbye(peer.link.fd());
    peer.link.close();
    if (peer.wakeFd >= 0) ::close(peer.wakeFd);
    peer.wakeFd = -1;
    peer.segment.reset();
  }
  locals_.clear();
  byRank_.clear();
  listener_.close();
  if (epollFd_ >= 0) ::close(epollFd_);
  if (wakeFd_ >= 0) ::close(wakeFd_);
  epollFd_ = wakeFd_ = -1;
}

}  // namespace weft::shm
