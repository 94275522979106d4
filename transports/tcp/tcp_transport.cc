// The TCP data path: posting splits a message into parts on the pair's sockets; progress moves
// bytes on the sockets that have work, driven by edge-triggered epoll readiness.
#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <new>

#include "base/log.h"
#include "transports/tcp/tcp_internal.h"

namespace weft::tcp {
namespace {

constexpr int kMaxRedials = 3;

}  // namespace

TcpTransport::TcpTransport(const TcpOptions& options) : options_(options) {
  if (options_.socketsPerPeer < 1) options_.socketsPerPeer = 1;
  if (options_.socketsPerPeer > kMaxSocketsPerPeer) options_.socketsPerPeer = kMaxSocketsPerPeer;
}

TcpTransport::~TcpTransport() {
  close(false);
}

std::unique_ptr<Transport> createTcpTransport(const TcpOptions& options) {
  return std::make_unique<TcpTransport>(options);
}

void TcpTransport::activate(Lane* lane) {
  if (!lane->active) {
    lane->active = true;
    active_.push_back(lane);
  }
}

void TcpTransport::awaitArrival(Lane* lane) {
  if (!lane->awaited) {
    lane->awaited = true;
    awaited_.push_back(lane);
  }
}

Status TcpTransport::failPeer(int peer, const Status& why, bool notice, int culprit) {
  Status failure =
      failures_.peerFailed("tcp connection with ", peerNames_, peer, why, notice, culprit);
  PeerLinks& links = peers_[peer];
  if (!links.dead) {
    links.dead = true;
    WEFT_WARN("%s", failure.message().c_str());
  }
  for (auto& lane : links.sendLanes) lane->failAll(failure);
  for (auto& lane : links.recvLanes) lane->failAll(failure);
  return failure;
}

void TcpTransport::post(Xfer* xfer) {
  const int peer = xfer->peer;
  PeerLinks& links = peers_[peer];
  if (links.dead || links.sendLanes.empty()) {
    xfer->complete(remoteError(peerNames_[peer] + " is unreachable after an earlier failure"));
    return;
  }
  const bool sending = xfer->kind == Xfer::Kind::kSend;
  auto& lanes = sending ? links.sendLanes : links.recvLanes;
  auto* state = new (xfer->scratch) XferState();
  int parts = xfer->bytes >= kStripeThreshold ? static_cast<int>(lanes.size()) : 1;
  state->partsLeft = parts;
  size_t base = xfer->bytes / parts;
  size_t offset = 0;
  for (int i = 0; i < parts; ++i) {
    Part& part = state->parts[i];
    part.xfer = xfer;
    part.data = static_cast<char*>(xfer->buf) + offset;
    part.length = i + 1 == parts ? xfer->bytes - offset : base;
    offset += part.length;
    Lane* lane = lanes[i].get();
    if (sending) {
      part.header = WireHeader{xfer->tag, part.length};
      lane->pushSend(&part);
    } else {
      lane->pushRecv(&part);
    }
    if (lane->hasSocket()) {
      activate(lane);
    } else if (!sending) {
      awaitArrival(lane);
    }
  }
  // The first send to the peer starts this rank's connections to it; a receive waits for the
  // peer's. Connections exist only where data goes, so every one of them is a lane on both ends
  // by the time its last send completes, and a departure says goodbye on all of them.
  if (sending && !links.dialed) {
    Status dialed = dial(peer);
    if (!dialed.isOk()) {
      pendingFailure_ =
          failPeer(peer, dialed.withContext("connecting to " + addresses_[peer].toString()));
      return;
    }
  }
  // Writing at once saves a trip through epoll for the common small message.
  if (sending) {
    for (int i = 0; i < parts; ++i) {
      if (!lanes[i]->ready()) continue;
      Status written = lanes[i]->writeSome();
      if (!written.isOk()) {
        pendingFailure_ = failPeer(peer, written);
        return;
      }
    }
  }
}

void TcpTransport::collectEvents() {
  epoll_event events[64];
  int count;
  do {
    count = epoll_wait(epollFd_, events, 64, 0);
    for (int i = 0; i < count; ++i) {
      auto* lane = static_cast<Lane*>(events[i].data.ptr);
      if (lane == nullptr) {
        arrivalsReady_ = true;
        continue;
      }
      uint32_t flags = events[i].events;
      if (flags & EPOLLIN) {
        lane->readable = true;
        // Only a failure notice (or a hang-up) matters before a receive is posted.
        if (!lane->hasRecvs()) lane->unexpected = true;
      }
      if (flags & EPOLLOUT) lane->writable = true;
      if (flags & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
        lane->hungUp = true;
        lane->readable = true;
      }
      activate(lane);
    }
  } while (count == 64);
}

// One lane's turn: its dial, then its bytes, then a hang-up or data nobody asked for.
Status TcpTransport::stepLane(Lane* lane) {
  if (lane->connecting()) {
    Status dialed = lane->advanceDial();
    if (!dialed.isOk() && lane->dialReachedPeer() && lane->redials < kMaxRedials) {
      // The peer is there (its listener took the connection) but dropped it before the
      // handshake was through: it was slow to serve it (its cap) or busy closing. Once more;
      // a peer that has left refuses the next connect.
      ++lane->redials;
      WEFT_INFO("tcp: %s dropped our connection mid-handshake (%s); connecting again",
                peerNames_[lane->peer()].c_str(), dialed.message().c_str());
      lane->close(false);
      dialed = dialLane(lane);
    }
    if (!dialed.isOk()) {
      return dialed.withContext("connecting to " + addresses_[lane->peer()].toString());
    }
    if (!lane->ready()) return Status::ok();
    ++lanesConnected_;
  }
  WEFT_TRY(lane->writeSome());
  WEFT_TRY(lane->readSome());
  if ((lane->hungUp || lane->unexpected) && !lane->hasRecvs() && !lane->departed) {
    return lane->inspectUnexpected();
  }
  return Status::ok();
}

Status TcpTransport::progress(bool woken) {
  Status failure = std::move(pendingFailure_);
  pendingFailure_ = Status::ok();
  if (woken) {
    collectEvents();
  } else {
    // Polling: trying the pending sockets directly costs one call each, where asking epoll
    // first would cost one more. Edge-triggered events left unread only make the next sleep
    // return at once, and that wake-up collects them.
    for (Lane* lane : active_) {
      lane->readable |= lane->hasRecvs();
      lane->writable |= lane->hasSends();
    }
  }
  // Peers connect when they first need this rank: serve them when told to, and whenever a
  // receive waits for a connection (a poller is not told).
  if (arrivalsReady_ || !awaited_.empty()) {
    Status served = serveArrivals();
    if (failure.isOk()) failure = served;
  }
  size_t kept = 0;
  for (size_t i = 0; i < active_.size(); ++i) {
    Lane* lane = active_[i];
    int peer = lane->peer();
    if (!peers_[peer].dead && lane->hasSocket()) {
      Status step = stepLane(lane);
      lane->unexpected = false;
      if (!step.isOk()) {
        Status failed = failPeer(peer, step, lane->noticed, lane->noticeCulprit);
        if (failure.isOk()) failure = failed;
      }
    }
    // A lane stays listed while it has work, or a dial to finish (the peer's acceptor caps how
    // long a handshake may take).
    const bool busy = !lane->idle() || lane->connecting();
    if (!busy || peers_[peer].dead || !lane->hasSocket()) {
      lane->active = false;
    } else {
      active_[kept++] = lane;
    }
  }
  active_.resize(kept);
  return failure;
}

int TcpTransport::findCulprit() {
  forEachLane([this](PeerLinks& links, Lane* lane) {
    // A notice is visible only where the stream is between messages.
    if (links.dead || !lane->ready() || !lane->atReceiveBoundary()) return;
    Status step = lane->inspectUnexpected();
    if (!step.isOk()) {
      [[maybe_unused]] Status failed =
          failPeer(lane->peer(), step, lane->noticed, lane->noticeCulprit);
    }
  });
  return failures_.culprit();
}

void TcpTransport::announceFailure(int culprit) {
  announced_ = true;
  // Failed peers too: a protocol error (a message mismatch) leaves the connection up, and that
  // peer may be waiting for this rank; on a broken connection the send just fails. A notice
  // travels either way on a connection, so it reaches the peer whichever made it.
  forEachLane([culprit](PeerLinks&, Lane* lane) { lane->sendFailureNotice(culprit); });
}

// After a failure notice, closing a socket that still holds unread data would send a reset,
// and a reset makes the peer's kernel drop what it had not read yet: the notice itself. So the
// notifier finishes its side (FIN after the notice) and reads and discards what still arrives
// until each peer closes too, for a short while.
void TcpTransport::lingerAfterNotice() {
  constexpr int kLingerMs = 500;
  std::vector<Lane*> open;
  forEachLane([&open](PeerLinks&, Lane* lane) {
    if (lane->fd() < 0) return;
    shutdown(lane->fd(), SHUT_WR);
    open.push_back(lane);
  });
  Deadline deadline = Deadline::after(kLingerMs);
  char sink[64 * 1024];
  while (!open.empty() && !deadline.expired()) {
    size_t kept = 0;
    for (Lane* lane : open) {
      ssize_t got;
      do {
        got = recv(lane->fd(), sink, sizeof(sink), MSG_DONTWAIT);
      } while (got > 0);
      if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        open[kept++] = lane;
    }
    open.resize(kept);
    if (!open.empty()) {
      pollfd wait{open.front()->fd(), POLLIN, 0};
      poll(&wait, 1, 5);
    }
  }
}

void TcpTransport::close(bool graceful) {
  if (!graceful && announced_) lingerAfterNotice();
  forEachLane([graceful](PeerLinks& links, Lane* lane) { lane->close(graceful && !links.dead); });
  for (PeerLinks& links : peers_) {
    links.sendLanes.clear();
    links.recvLanes.clear();
  }
  active_.clear();
  awaited_.clear();
  if (arrivals_) {
    arrivals_->dropAll("not needed any more (the communicator closed)");
    arrivals_.reset();
  }
  listener_.close();
  if (epollFd_ >= 0) {
    ::close(epollFd_);
    epollFd_ = -1;
  }
}

}  // namespace weft::tcp
