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

Status TcpTransport::failPeer(int peer, const Status& why, bool notice, int culprit) {
  Status failure =
      failures_.peerFailed("tcp connection with ", peerNames_, peer, why, notice, culprit);
  PeerLinks& links = peers_[peer];
  if (!links.dead) {
    links.dead = true;
    WEFT_WARN("%s", failure.message().c_str());
  }
  for (auto& lane : links.lanes) lane->failAll(failure);
  return failure;
}

void TcpTransport::post(Xfer* xfer) {
  PeerLinks& links = peers_[xfer->peer];
  if (links.dead || links.lanes.empty()) {
    xfer->complete(
        remoteError(peerNames_[xfer->peer] + " is unreachable after an earlier failure"));
    return;
  }
  auto* state = new (xfer->scratch) XferState();
  int parts = xfer->bytes >= kStripeThreshold ? static_cast<int>(links.lanes.size()) : 1;
  state->partsLeft = parts;
  size_t base = xfer->bytes / parts;
  size_t offset = 0;
  bool sending = xfer->kind == Xfer::Kind::kSend;
  for (int i = 0; i < parts; ++i) {
    Part& part = state->parts[i];
    part.xfer = xfer;
    part.data = static_cast<char*>(xfer->buf) + offset;
    part.length = i + 1 == parts ? xfer->bytes - offset : base;
    offset += part.length;
    if (sending) part.header = WireHeader{xfer->tag, part.length};
    Lane* lane = links.lanes[i].get();
    if (sending) {
      lane->pushSend(&part);
    } else {
      lane->pushRecv(&part);
    }
    activate(lane);
  }
  // Writing at once saves a trip through epoll for the common small message.
  if (sending) {
    for (int i = 0; i < parts; ++i) {
      Status written = links.lanes[i]->writeSome();
      if (!written.isOk()) {
        pendingFailure_ = failPeer(xfer->peer, written);
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
  size_t kept = 0;
  for (size_t i = 0; i < active_.size(); ++i) {
    Lane* lane = active_[i];
    int peer = lane->peer();
    if (!peers_[peer].dead) {
      Status step = lane->writeSome();
      if (step.isOk()) step = lane->readSome();
      if (step.isOk() && (lane->hungUp || lane->unexpected) && !lane->hasRecvs() &&
          !lane->departed) {
        step = lane->inspectUnexpected();
      }
      lane->unexpected = false;
      if (!step.isOk()) {
        Status failed = failPeer(peer, step, lane->noticed, lane->noticeCulprit);
        if (failure.isOk()) failure = failed;
      }
    }
    if (lane->idle() || peers_[peer].dead) {
      lane->active = false;
    } else {
      active_[kept++] = lane;
    }
  }
  active_.resize(kept);
  return failure;
}

int TcpTransport::findCulprit() {
  for (size_t peer = 0; peer < peers_.size(); ++peer) {
    for (auto& lane : peers_[peer].lanes) {
      if (peers_[peer].dead) break;
      // A notice is visible only where the stream is between messages.
      if (!lane->atReceiveBoundary()) continue;
      Status step = lane->inspectUnexpected();
      if (!step.isOk()) {
        [[maybe_unused]] Status failed =
            failPeer(static_cast<int>(peer), step, lane->noticed, lane->noticeCulprit);
      }
    }
  }
  return failures_.culprit();
}

void TcpTransport::announceFailure(int culprit) {
  announced_ = true;
  // Failed peers too: a protocol error (a message mismatch) leaves the connection up, and that
  // peer may be waiting for this rank; on a broken connection the send just fails.
  for (PeerLinks& links : peers_) {
    for (auto& lane : links.lanes) lane->sendFailureNotice(culprit);
  }
}

// After a failure notice, closing a socket that still holds unread data would send a reset,
// and a reset makes the peer's kernel drop what it had not read yet: the notice itself. So the
// notifier finishes its side (FIN after the notice) and reads and discards what still arrives
// until each peer closes too, for a short while.
void TcpTransport::lingerAfterNotice() {
  constexpr int kLingerMs = 500;
  std::vector<Lane*> open;
  for (PeerLinks& links : peers_) {
    for (auto& lane : links.lanes) {
      if (lane->fd() < 0) continue;
      shutdown(lane->fd(), SHUT_WR);
      open.push_back(lane.get());
    }
  }
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
  for (PeerLinks& links : peers_) {
    for (auto& lane : links.lanes) lane->close(graceful && !links.dead);
    links.lanes.clear();
  }
  active_.clear();
  listener_.close();
  if (epollFd_ >= 0) {
    ::close(epollFd_);
    epollFd_ = -1;
  }
}

}  // namespace weft::tcp
