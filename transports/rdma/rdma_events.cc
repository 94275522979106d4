// What happens to the rdma transport from outside its own posting: completions (a receive
// consumed by a peer's write with immediate, or a signalled write of this rank's finished),
// completion-channel wake-ups, news on the side connections, failures, and teardown.
#include <arpa/inet.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <cstdio>

#include "base/log.h"
#include "transports/rdma/rdma_internal.h"
#include "transports/side_link.h"

namespace weft::rdma {
namespace {

constexpr uint64_t kChannelEvent = ~0ull;

Status protocolError(const std::string& what) {
  return internalError("rdma: " + what + " (protocol error)");
}

}  // namespace

Status RdmaTransport::pollCompletions(int budget) {
  if (cq_ == nullptr) return Status::ok();
  Status failure;
  auto handle = [&](const ibv_wc& wc) {
    Status handled = handleCompletion(wc);
    if (failure.isOk() && !handled.isOk()) failure = std::move(handled);
  };
  for (const ibv_wc& wc : stash_) handle(wc);
  stash_.clear();
  ibv_wc wcs[16];
  while (budget > 0) {
    const int polled = ibv_poll_cq(cq_, 16, wcs);
    if (polled < 0) {
      // The queue itself broke (an overrun): every pair's state is unknown.
      Status broken = internalError("rdma: ibv_poll_cq failed on " + device_->name);
      for (auto& peer : peers_) {
        if (peer && !peer->dead) [[maybe_unused]]
          Status ignored = failPeer(*peer, broken);
      }
      return broken;
    }
    for (int i = 0; i < polled; ++i) handle(wcs[i]);
    if (polled < 16) break;
    budget -= polled;
  }
  return failure;
}

Status RdmaTransport::handleCompletion(const ibv_wc& wc) {
  const bool receive = (wc.wr_id & kReceiveBit) != 0;
  const uint64_t rank = receive ? (wc.wr_id & 0xffffffffu) : (wc.wr_id >> 32) & 0x7fffffffu;
  Peer* peer = rank < peers_.size() ? peers_[rank].get() : nullptr;
  if (peer == nullptr) return protocolError("completion for an unknown peer");
  // A failed pair's queue flushes everything that was posted on it: already reported.
  if (peer->dead) return Status::ok();
  if (wc.status != IBV_WC_SUCCESS) {
    char vendor[32];
    std::snprintf(vendor, sizeof(vendor), "vendor error 0x%x", wc.vendor_err);
    return failPeer(*peer,
                    remoteError(std::string("rdma ") + (receive ? "receive" : "write") +
                                " failed: " + device_->lib->wcStatusStr(wc.status) + " (status " +
                                std::to_string(wc.status) + ", " + vendor + ")"));
  }
  activate(*peer);
  if (receive) {
    if (wc.opcode != IBV_WC_RECV_RDMA_WITH_IMM || !(wc.wc_flags & IBV_WC_WITH_IMM)) {
      return failPeer(*peer, protocolError("a receive completed without an immediate"));
    }
    Status reposted = postReceives(*peer, 1);
    if (!reposted.isOk()) return failPeer(*peer, reposted);
    Status handled = handleImmediate(*peer, ntohl(wc.imm_data));
    return handled.isOk() ? handled : failPeer(*peer, handled);
  }
  const auto request = static_cast<uint32_t>(wc.wr_id);
  if (!peer->window.completed(request)) {
    return failPeer(*peer, protocolError("completion of a write that was never posted"));
  }
  while (!peer->inFlight.empty() &&
         static_cast<int32_t>(request - peer->inFlight.front()->finalRequest) >= 0) {
    XferState* state = peer->inFlight.pop();
    releaseTransfer(*state);
    state->xfer->complete();
  }
  return Status::ok();
}

Status RdmaTransport::handleImmediate(Peer& peer, uint32_t imm) {
  ImmKind kind;
  uint32_t value;
  if (!decodeImm(imm, &kind, &value)) return protocolError("unknown immediate");
  const uint32_t entries = peer.remote.ctsEntries;
  switch (kind) {
    case ImmKind::kEager:
      if (!peer.arrivals.arrive(value)) return protocolError("slot written out of order");
      break;
    case ImmKind::kCredit:
      if (!peer.credits.returned(value)) return protocolError("more credits than slots in use");
      break;
    case ImmKind::kCts:
      if (value != peer.ctsArrived % entries) return protocolError("clear-to-send out of order");
      ++peer.ctsArrived;
      break;
    case ImmKind::kZeroCopyDone:
      if (value != peer.zeroCopyFinished % entries) {
        return protocolError("zero-copy message finished out of order");
      }
      ++peer.zeroCopyFinished;
      break;
  }
  return Status::ok();
}

void RdmaTransport::drainChannel() {
  if (channel_ == nullptr) return;
  ibv_cq* cq = nullptr;
  void* context = nullptr;
  unsigned events = 0;
  while (device_->lib->getCqEvent(channel_, &cq, &context) == 0) ++events;
  if (events > 0) device_->lib->ackCqEvents(cq_, events);
}

// A goodbye (the peer destroyed its communicator on purpose), a failure notice (its
// communicator failed, naming the culprit), or a hang-up without either (it died).
Status RdmaTransport::collectSideNews() {
  if (epollFd_ < 0) return Status::ok();
  Status failure;
  epoll_event events[16];
  const int count = epoll_wait(epollFd_, events, 16, 0);
  for (int i = 0; i < count; ++i) {
    if (events[i].data.u64 == kChannelEvent) {
      drainChannel();
      continue;
    }
    Peer* peer = peers_[events[i].data.u64].get();
    if (peer == nullptr || peer->dead || peer->departed) continue;
    const SideNews news = readSideNews(peer->side.fd());
    Status failed;
    switch (news.kind) {
      case SideNews::Kind::kNothing:
        continue;
      case SideNews::Kind::kGoodbye:
        peer->departed = true;
        activate(*peer);  // progress() fails what it can no longer complete
        break;
      case SideNews::Kind::kFailureNotice:
        failed = failPeer(*peer,
                          remoteError("it stopped after a failure of its own (a timeout or an "
                                      "abort)"),
                          true, news.culprit);
        break;
      case SideNews::Kind::kClosed:
        failed = failPeer(*peer, remoteError("the peer process died or aborted (its side "
                                             "connection closed without a goodbye)"));
        break;
    }
    epoll_ctl(epollFd_, EPOLL_CTL_DEL, peer->side.fd(), nullptr);
    if (failure.isOk() && !failed.isOk()) failure = failed;
  }
  return failure;
}

Status RdmaTransport::failPeer(Peer& peer, const Status& why, bool notice, int culprit) {
  Status failure = failures_.peerFailed("rdma with ", peerNames_, peer.rank, why, notice, culprit);
  if (!peer.dead) {
    peer.dead = true;
    WEFT_WARN("%s", failure.message().c_str());
    // An error state stops the peer's writes into buffers this rank is about to hand back.
    if (peer.qp != nullptr) {
      ibv_qp_attr attr{};
      attr.qp_state = IBV_QPS_ERR;
      device_->lib->modifyQp(peer.qp, &attr, IBV_QP_STATE);
    }
  }
  for (auto* queue : {&peer.sends, &peer.inFlight, &peer.recvs}) {
    while (!queue->empty()) {
      XferState* state = queue->pop();
      releaseTransfer(*state);
      if (!state->xfer->done) state->xfer->complete(failure);
    }
  }
  peer.awaitingCts = {};
  return failure;
}

void RdmaTransport::releaseTransfer(XferState& state) {
  if (state.registration != nullptr) {
    registrations_->release(state.registration);
    state.registration = nullptr;
  }
}

int RdmaTransport::findCulprit() {
  [[maybe_unused]] Status ignored = collectSideNews();
  return failures_.culprit();
}

void RdmaTransport::announceFailure(int culprit) {
  // Failed peers too: a protocol error (a message mismatch) leaves the side link up, and that
  // peer may be waiting for this rank; on a closed link the send just fails.
  for (auto& peer : peers_) {
    if (peer && !peer->departed && peer->side.isOpen()) {
      sendFailureNotice(peer->side.fd(), culprit);
    }
  }
}

// A staged send completes as soon as its data is in staging memory, but its write may still sit
// in the send queue, and destroying a queue pair drops what it holds. So a rank that leaves on
// purpose first sees every write it posted complete (a signalled empty write behind the
// unsignalled ones retires them all), and only then says goodbye.
void RdmaTransport::flushWrites() {
  constexpr int kFlushMs = 5000;
  for (auto& peer : peers_) {
    if (!peer || peer->dead || peer->window.outstanding() == 0) continue;
    Deadline deadline = Deadline::after(kFlushMs);
    while (!peer->dead && !peer->window.room() && !deadline.expired()) {
      [[maybe_unused]] Status ignored = pollCompletions(256);
    }
    if (peer->dead || deadline.expired()) continue;
    Status posted = postWrite(*peer, nullptr, 0, 0, peer->remote.regionAddress,
                              peer->remote.regionKey, nullptr, true, nullptr);
    if (!posted.isOk()) [[maybe_unused]]
      Status ignored = failPeer(*peer, posted);
  }
  Deadline deadline = Deadline::after(kFlushMs);
  auto pending = [this] {
    for (auto& peer : peers_) {
      if (peer && !peer->dead && peer->window.outstanding() > 0) return true;
    }
    return false;
  };
  while (pending() && !deadline.expired()) {
    [[maybe_unused]] Status ignored = pollCompletions(256);
  }
}

void RdmaTransport::close(bool graceful) {
  if (graceful) flushWrites();
  for (auto& peer : peers_) {
    if (!peer) continue;
    if (graceful && !peer->dead && peer->side.isOpen()) sendGoodbye(peer->side.fd());
    if (peer->qp != nullptr) device_->lib->destroyQp(peer->qp);
    peer->qp = nullptr;
    freeArea(&peer->region);
    freeArea(&peer->staging);
    peer->side.close();
  }
  peers_.clear();
  active_.clear();
  registrations_.reset();
  if (cq_ != nullptr) {
    drainChannel();
    device_->lib->destroyCq(cq_);
    cq_ = nullptr;
  }
  if (channel_ != nullptr) device_->lib->destroyCompChannel(channel_);
  channel_ = nullptr;
  if (pd_ != nullptr) device_->lib->deallocPd(pd_);
  pd_ = nullptr;
  device_.reset();
  listener_.close();
  if (epollFd_ >= 0) ::close(epollFd_);
  epollFd_ = -1;
}

}  // namespace weft::rdma
