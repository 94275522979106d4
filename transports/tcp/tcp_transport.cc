// The TCP data path: posting splits a message into parts on the pair's sockets; progress moves
// bytes on the sockets that have work, driven by edge-triggered epoll readiness.
#include <sys/epoll.h>
#include <unistd.h>

#include <new>

#include "core/log.h"
#include "transports/tcp/tcp_internal.h"

namespace weft::tcp {

TcpTransport::TcpTransport(const TcpOptions& options) : options_(options) {
  if (options_.socketsPerPeer < 1) options_.socketsPerPeer = 1;
  if (options_.socketsPerPeer > kMaxSocketsPerPeer) options_.socketsPerPeer = kMaxSocketsPerPeer;
}

TcpTransport::~TcpTransport() { close(false); }

std::unique_ptr<Transport> createTcpTransport(const TcpOptions& options) {
  return std::make_unique<TcpTransport>(options);
}

void TcpTransport::activate(Lane* lane) {
  if (!lane->active) {
    lane->active = true;
    active_.push_back(lane);
  }
}

Status TcpTransport::failPeer(int peer, const Status& why) {
  Status failure(why.code() == weftSuccess ? weftRemoteError : why.code(),
                 "tcp connection with " + peerNames_[peer] + ": " + why.message());
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
    xfer->complete(remoteError(peerNames_[xfer->peer] + " is unreachable after an earlier failure"));
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
      if (flags & EPOLLIN) lane->readable = true;
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
      if (step.isOk() && lane->hungUp && !lane->hasRecvs() && !lane->departed) {
        step = lane->inspectHangup();
      }
      if (!step.isOk()) {
        Status failed = failPeer(peer, step);
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

void TcpTransport::close(bool graceful) {
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
