// The rdma data path (protocol in rdma_wire.h). Posting queues a transfer on its peer and
// starts it; progress polls the completion queue, then advances the peers that have work:
// sends are staged into slots or written zero-copy as credits and send-queue room allow,
// receives copy their slots out or wait for their zero-copy data, clear-to-send entries go out
// for posted zero-copy receives, and consumed slots go back as credits.
#include <arpa/inet.h>

#include <algorithm>
#include <cstring>
#include <new>

#include "base/log.h"
#include "transports/message_mismatch.h"
#include "transports/rdma/rdma_internal.h"

namespace weft::rdma {
namespace {

// A zero-copy message is written in pieces of this size, so that the send queue fills evenly
// and one large message does not occupy it alone.
constexpr size_t kZeroCopyPiece = 128 << 10;
// What one advance() posts to a peer at most before the transport looks at its completions
// again. Posting is cheap on a NIC, but a software device (Soft-RoCE) does the sending inside
// ibv_post_send: posting a whole large message at once would keep this rank from answering its
// peers (clear-to-send entries, credits) for as long as the data takes to send.
constexpr size_t kPostBudget = 256 << 10;

Status mismatch(const Xfer& expected, uint64_t tag, uint64_t bytes, const char* what) {
  return messageMismatch(expected.tag, expected.bytes, tag, bytes, what);
}

// A slot must carry the next chunk of the message the front receive expects.
Status checkSlot(const SlotHeader& header, const Xfer& xfer, size_t offset, size_t chunk,
                 uint32_t flags) {
  if (header.tag != xfer.tag || header.messageBytes != xfer.bytes) {
    return mismatch(xfer, header.tag, header.messageBytes, "");
  }
  if (header.flags != flags) {
    return mismatch(xfer, header.tag, header.messageBytes,
                    flags ? " sent without zero-copy" : " sent zero-copy");
  }
  if (header.offset != offset || header.chunkBytes != chunk) {
    return internalError("rdma: chunk at offset " + std::to_string(header.offset) + " of " +
                         std::to_string(header.chunkBytes) + " bytes where " +
                         std::to_string(offset) + "/" + std::to_string(chunk) +
                         " was expected (protocol error)");
  }
  return Status::ok();
}

bool after(uint32_t a, uint32_t b) {
  return static_cast<int32_t>(a - b) > 0;
}

}  // namespace

char* RdmaTransport::slotAt(RegisteredArea& area, uint32_t slot) const {
  return area.base + size_t{slot} * options_.slotBytes;
}

CtsEntry* RdmaTransport::ctsAt(RegisteredArea& area, uint32_t index) const {
  return reinterpret_cast<CtsEntry*>(slotAt(area, options_.slots)) + index;
}

void RdmaTransport::activate(Peer& peer) {
  if (!peer.active) {
    peer.active = true;
    active_.push_back(&peer);
  }
}

void RdmaTransport::post(Xfer* xfer) {
  Peer* peer = peers_[xfer->peer].get();
  if (peer == nullptr || peer->dead) {
    xfer->complete(
        remoteError(peerNames_[xfer->peer] + " is unreachable after an earlier failure"));
    return;
  }
  auto* state = new (xfer->scratch) XferState();
  state->xfer = xfer;
  state->zeroCopy = options_.zeroCopyMinBytes > 0 && xfer->bytes >= options_.zeroCopyMinBytes;
  if (xfer->kind == Xfer::Kind::kSend) {
    if (state->zeroCopy) state->sequence = peer->zeroCopySends++;
    peer->sends.push(state);
  } else {
    if (state->zeroCopy) {
      state->sequence = peer->zeroCopyRecvs++;
      peer->awaitingCts.push(state);
    }
    peer->recvs.push(state);
  }
  activate(*peer);
  // Starting at once saves a progress round for the common small send.
  Status started = advance(*peer);
  if (!started.isOk()) {
    Status failed = failPeer(*peer, started);
    if (pendingFailure_.isOk()) pendingFailure_ = failed;
  }
}

Status RdmaTransport::advance(Peer& peer) {
  WEFT_TRY(pushSends(peer));
  WEFT_TRY(pullRecvs(peer));
  WEFT_TRY(writeClearToSend(peer));
  return returnCredits(peer);
}

Status RdmaTransport::postWrite(Peer& peer, const void* local, uint32_t lkey, size_t bytes,
                                uint64_t remote, uint32_t rkey, const uint32_t* imm, bool force,
                                uint32_t* request) {
  ibv_sge sge{};
  sge.addr = reinterpret_cast<uintptr_t>(local);
  sge.length = static_cast<uint32_t>(bytes);
  sge.lkey = lkey;
  ibv_send_wr wr{};
  wr.sg_list = bytes > 0 ? &sge : nullptr;
  wr.num_sge = bytes > 0 ? 1 : 0;
  wr.opcode = imm != nullptr ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE;
  if (imm != nullptr) wr.imm_data = htonl(*imm);
  wr.wr.rdma.remote_addr = remote;
  wr.wr.rdma.rkey = rkey;
  bool signalled = false;
  const uint32_t number = peer.window.post(force, &signalled);
  wr.wr_id = (static_cast<uint64_t>(peer.rank) << 32) | number;
  wr.send_flags = (signalled ? unsigned{IBV_SEND_SIGNALED} : 0u) |
                  (bytes > 0 && bytes <= maxInline_ ? unsigned{IBV_SEND_INLINE} : 0u);
  ibv_send_wr* bad = nullptr;
  int rc = ibv_post_send(peer.qp, &wr, &bad);
  if (rc != 0) return systemError("rdma: ibv_post_send", rc);
  if (request != nullptr) *request = number;
  return Status::ok();
}

Status RdmaTransport::postReceives(Peer& peer, uint32_t count) {
  ibv_recv_wr wrs[16];
  while (count > 0) {
    const uint32_t batch = std::min<uint32_t>(count, 16);
    for (uint32_t i = 0; i < batch; ++i) {
      wrs[i] = ibv_recv_wr{};
      wrs[i].wr_id = kReceiveBit | static_cast<uint64_t>(peer.rank);
      wrs[i].next = i + 1 < batch ? &wrs[i + 1] : nullptr;
    }
    ibv_recv_wr* bad = nullptr;
    int rc = ibv_post_recv(peer.qp, wrs, &bad);
    if (rc != 0) return systemError("rdma: ibv_post_recv", rc);
    count -= batch;
  }
  return Status::ok();
}

Status RdmaTransport::writeEagerChunk(Peer& peer, XferState& state, uint32_t flags, size_t chunk) {
  const Xfer& xfer = *state.xfer;
  const uint32_t slot = peer.credits.nextSlot();
  char* local = slotAt(peer.staging, slot);
  const SlotHeader header{xfer.tag, xfer.bytes, state.offset, static_cast<uint32_t>(chunk), flags};
  std::memcpy(local, &header, sizeof(header));
  if (chunk > 0) {
    std::memcpy(local + kSlotHeaderBytes, static_cast<const char*>(xfer.buf) + state.offset, chunk);
  }
  const uint32_t imm = encodeImm(ImmKind::kEager, slot);
  const size_t bytes = chunk > 0 ? kSlotHeaderBytes + chunk : sizeof(SlotHeader);
  WEFT_TRY(postWrite(peer, local, peer.staging.mr->lkey, bytes,
                     peer.remote.regionAddress + size_t{slot} * options_.slotBytes,
                     peer.remote.regionKey, &imm, false, nullptr));
  peer.credits.wrote();
  return Status::ok();
}

Status RdmaTransport::writeZeroCopy(Peer& peer, XferState& state, size_t* budget) {
  Xfer& xfer = *state.xfer;
  // The peer wrote this entry before the immediate that counted it; it rewrites it only after
  // this message's last write arrived.
  const CtsEntry& entry = *ctsAt(peer.region, state.sequence % peer.remote.ctsEntries);
  if (state.registration == nullptr) {
    if (entry.sequence != state.sequence) {
      return internalError("rdma: clear-to-send entry for message " +
                           std::to_string(entry.sequence) + " where " +
                           std::to_string(state.sequence) + " was expected (protocol error)");
    }
    if (entry.tag != xfer.tag || entry.bytes != xfer.bytes) {
      Xfer expected = xfer;
      expected.tag = entry.tag;
      expected.bytes = entry.bytes;
      return mismatch(expected, xfer.tag, xfer.bytes, " (the receiver's buffer)");
    }
    WEFT_TRY(registrations_->acquire(xfer.buf, xfer.bytes, &state.registration));
  }
  const auto* data = static_cast<const char*>(xfer.buf);
  while (state.offset < xfer.bytes) {
    if (!peer.window.room()) return Status::ok();
    if (*budget == 0) {
      peer.throttled = true;
      return Status::ok();
    }
    const size_t piece = std::min(kZeroCopyPiece, xfer.bytes - state.offset);
    *budget -= std::min(*budget, piece);
    const bool last = state.offset + piece == xfer.bytes;
    const uint32_t imm = encodeImm(ImmKind::kZeroCopyDone, state.sequence % peer.remote.ctsEntries);
    WEFT_TRY(postWrite(peer, data + state.offset, state.registration->lkey, piece,
                       entry.address + state.offset, entry.rkey, last ? &imm : nullptr, last,
                       last ? &state.finalRequest : nullptr));
    state.offset += piece;
  }
  return Status::ok();
}

Status RdmaTransport::pushSends(Peer& peer) {
  const size_t payload = slotPayload(options_.slotBytes);
  size_t budget = kPostBudget;
  peer.throttled = false;
  while (!peer.sends.empty()) {
    XferState& state = *peer.sends.front();
    Xfer& xfer = *state.xfer;
    if (!state.zeroCopy) {
      // do-while: a zero-length message still takes its one (header-only) chunk.
      do {
        if (!peer.credits.available() || !peer.window.room()) return Status::ok();
        if (budget == 0) {
          peer.throttled = true;
          return Status::ok();
        }
        const size_t chunk = std::min(payload, xfer.bytes - state.offset);
        WEFT_TRY(writeEagerChunk(peer, state, 0, chunk));
        state.offset += chunk;
        budget -= std::min(budget, chunk);
      } while (state.offset < xfer.bytes);
      // The data sits in staging memory now: the user's buffer is free again.
      peer.sends.pop();
      xfer.complete();
      continue;
    }
    if (!state.rendezvousDone) {
      if (!peer.credits.available() || !peer.window.room()) return Status::ok();
      WEFT_TRY(writeEagerChunk(peer, state, kSlotRendezvous, 0));
      state.rendezvousDone = true;
    }
    if (!after(peer.ctsArrived, state.sequence)) return Status::ok();
    WEFT_TRY(writeZeroCopy(peer, state, &budget));
    if (state.offset < xfer.bytes) return Status::ok();
    peer.sends.pop();
    peer.inFlight.push(&state);
  }
  return Status::ok();
}

Status RdmaTransport::pullRecvs(Peer& peer) {
  const size_t payload = slotPayload(options_.slotBytes);
  while (!peer.recvs.empty()) {
    XferState& state = *peer.recvs.front();
    Xfer& xfer = *state.xfer;
    if (!state.zeroCopy) {
      do {
        if (!peer.arrivals.pending()) return Status::ok();
        const char* slot = slotAt(peer.region, peer.arrivals.frontSlot());
        SlotHeader header;
        std::memcpy(&header, slot, sizeof(header));
        const size_t chunk = std::min(payload, xfer.bytes - state.offset);
        WEFT_TRY(checkSlot(header, xfer, state.offset, chunk, 0));
        if (chunk > 0) {
          std::memcpy(static_cast<char*>(xfer.buf) + state.offset, slot + kSlotHeaderBytes, chunk);
        }
        state.offset += chunk;
        peer.arrivals.consume();
      } while (state.offset < xfer.bytes);
      peer.recvs.pop();
      xfer.complete();
      continue;
    }
    if (!state.rendezvousDone) {
      if (!peer.arrivals.pending()) return Status::ok();
      SlotHeader header;
      std::memcpy(&header, slotAt(peer.region, peer.arrivals.frontSlot()), sizeof(header));
      WEFT_TRY(checkSlot(header, xfer, 0, 0, kSlotRendezvous));
      peer.arrivals.consume();
      state.rendezvousDone = true;
    }
    if (!after(peer.zeroCopyFinished, state.sequence)) return Status::ok();
    peer.recvs.pop();
    releaseTransfer(state);
    xfer.complete();
  }
  return Status::ok();
}

Status RdmaTransport::writeClearToSend(Peer& peer) {
  const uint32_t entries = peer.remote.ctsEntries;
  while (!peer.awaitingCts.empty()) {
    // An entry is rewritten only after the message that used it last has arrived.
    if (peer.ctsWritten - peer.zeroCopyFinished >= entries || !peer.window.room()) {
      return Status::ok();
    }
    XferState& state = *peer.awaitingCts.front();
    Xfer& xfer = *state.xfer;
    WEFT_TRY(registrations_->acquire(xfer.buf, xfer.bytes, &state.registration));
    const uint32_t index = state.sequence % entries;
    CtsEntry* local = ctsAt(peer.staging, index);
    *local = CtsEntry{xfer.tag, xfer.bytes, reinterpret_cast<uintptr_t>(xfer.buf),
                      state.registration->rkey, state.sequence};
    const uint32_t imm = encodeImm(ImmKind::kCts, index);
    const uint64_t remote = peer.remote.regionAddress +
                            size_t{peer.remote.slots} * peer.remote.slotBytes +
                            size_t{index} * sizeof(CtsEntry);
    WEFT_TRY(postWrite(peer, local, peer.staging.mr->lkey, sizeof(CtsEntry), remote,
                       peer.remote.regionKey, &imm, false, nullptr));
    ++peer.ctsWritten;
    peer.awaitingCts.pop();
  }
  return Status::ok();
}

Status RdmaTransport::returnCredits(Peer& peer) {
  const uint32_t due = peer.arrivals.creditsDue();
  // Without queue room the credits wait for the next completion, which frees some.
  if (due == 0 || !peer.window.room()) return Status::ok();
  const uint32_t imm = encodeImm(ImmKind::kCredit, due);
  WEFT_TRY(postWrite(peer, nullptr, 0, 0, peer.remote.regionAddress, peer.remote.regionKey, &imm,
                     false, nullptr));
  peer.arrivals.sentCredits(due);
  return Status::ok();
}

Status RdmaTransport::progress(bool woken) {
  Status failure = std::move(pendingFailure_);
  pendingFailure_ = Status::ok();
  auto keep = [&failure](Status status) {
    if (failure.isOk() && !status.isOk()) failure = std::move(status);
  };
  if (woken) {
    drainChannel();
    keep(collectSideNews());
  }
  keep(pollCompletions(256));
  size_t kept = 0;
  for (size_t i = 0; i < active_.size(); ++i) {
    Peer& peer = *active_[i];
    if (!peer.dead) {
      Status step = advance(peer);
      if (!step.isOk()) {
        keep(failPeer(peer, step));
      } else if (peer.departed && (!peer.sends.empty() || !peer.recvs.empty())) {
        // Its last writes were polled above: what is still pending can never complete.
        keep(failPeer(peer, remoteError("the peer destroyed its communicator while this rank "
                                        "still had transfers with it")));
      }
    }
    const bool idle = peer.sends.empty() && peer.inFlight.empty() && peer.recvs.empty() &&
                      peer.arrivals.creditsDue() == 0;
    if (peer.dead || idle) {
      peer.active = false;
    } else {
      active_[kept++] = &peer;
    }
  }
  active_.resize(kept);
  return failure;
}

bool RdmaTransport::prepareToSleep() {
  if (cq_ == nullptr) return true;
  // Sends held back by the posting budget need no event to go on: no sleep.
  for (Peer* peer : active_) {
    if (peer->throttled && !peer->dead) return false;
  }
  if (ibv_req_notify_cq(cq_, 0) != 0) return false;
  // A completion that arrived before the arming raises no event: look once more.
  ibv_wc wcs[16];
  const int polled = ibv_poll_cq(cq_, 16, wcs);
  if (polled == 0) return true;
  if (polled > 0) stash_.insert(stash_.end(), wcs, wcs + polled);
  return false;
}

void RdmaTransport::operationDone() {
  if (registrations_) registrations_->endOperation();
}

void RdmaTransport::memoryFreed(const void* buf, size_t bytes) {
  if (registrations_) registrations_->invalidate(buf, bytes);
}

void RdmaTransport::userMemoryRegistered(const void* buf, size_t bytes) {
  if (!registrations_) return;
  const Registration* registration = nullptr;
  Status made = registrations_->acquire(buf, bytes, &registration, /*persistent=*/true);
  if (!made.isOk()) {
    // Not fatal: transfers in the range register through the cache as before.
    WEFT_WARN("rdma: keeping weftCommRegister's %zu bytes registered failed: %s", bytes,
              made.message().c_str());
    return;
  }
  userRegistrations_.push_back({{buf, bytes}, registration});
}

void RdmaTransport::userMemoryDeregistered(const void* buf, size_t bytes) {
  for (auto it = userRegistrations_.begin(); it != userRegistrations_.end(); ++it) {
    if (it->first != std::make_pair(buf, bytes)) continue;
    registrations_->release(it->second);
    userRegistrations_.erase(it);
    // The user may free the memory now: an entry that still covers it must not outlive it.
    registrations_->invalidate(buf, bytes);
    return;
  }
}

}  // namespace weft::rdma
