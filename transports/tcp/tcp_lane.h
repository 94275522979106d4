// A lane is one TCP socket to one peer with its FIFO queue of message parts: a send lane's
// socket is a connection this rank made, a receive lane's one the peer made (each direction of a
// pair has its own connections, so neither end waits for the other to decide who connects). A
// message becomes one part, or one part per socket when it is striped. A lane exists before its
// socket: parts queue on it until the connection is made, the first time the pair is used.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "base/status.h"
#include "net/client_handshake.h"
#include "transports/intrusive_queue.h"
#include "transports/tcp/tcp_wire.h"
#include "transports/transport.h"

namespace weft::tcp {

struct Part {
  Xfer* xfer = nullptr;
  char* data = nullptr;
  size_t length = 0;
  size_t payloadDone = 0;
  WireHeader header{};
  size_t headerDone = 0;
  Part* next = nullptr;
};

// Per-transfer state, placed in Xfer::scratch so that posting allocates nothing.
struct XferState {
  int partsLeft = 0;
  Part parts[kMaxSocketsPerPeer];
};
static_assert(sizeof(XferState) <= kXferScratchBytes, "Xfer::scratch too small for tcp");

using PartQueue = IntrusiveQueue<Part>;

class Lane {
 public:
  Lane(int peer, int index) : peer_(peer), index_(index) {}
  ~Lane();
  Lane(const Lane&) = delete;
  Lane& operator=(const Lane&) = delete;

  // A receive lane gets the socket its peer connected (already authenticated).
  void attach(int fd) { fd_ = fd; }
  // A send lane gets a socket still connecting, and the handshake that will make it usable.
  void startDial(int fd, std::unique_ptr<net::ClientHandshake> dial);
  // Moves the dial on as far as the socket allows; ready() once it is through.
  Status advanceDial();
  std::string dialProgress() const {
    if (!dial_) return "nothing";
    return dial_->done() ? "the peer's acknowledgement" : dial_->progress();
  }
  // The dial failed after the connect went through: the peer dropped it mid-handshake.
  bool dialReachedPeer() const { return dial_ && dial_->reachedPeer(); }
  bool hasSocket() const { return fd_ >= 0; }
  bool connecting() const { return dial_ != nullptr; }
  bool ready() const { return fd_ >= 0 && dial_ == nullptr; }

  int fd() const { return fd_; }
  int peer() const { return peer_; }
  int index() const { return index_; }
  bool idle() const { return sends_.empty() && recvs_.empty(); }
  bool hasSends() const { return !sends_.empty(); }
  bool hasRecvs() const { return !recvs_.empty(); }
  bool atReceiveBoundary() const { return recvs_.empty() || recvs_.front()->headerDone == 0; }

  void pushSend(Part* part) { sends_.push(part); }
  void pushRecv(Part* part) { recvs_.push(part); }

  // Move bytes until the socket would block or the queue is empty. Completed parts complete
  // their Xfer when they are its last part. A failure names the cause but not the peer; the
  // transport adds that.
  Status writeSome();
  Status readSome();
  // Called when the socket reported a hang-up or data while nothing is expected from it:
  // distinguishes a peer that said goodbye (returns ok, sets departed) or sent a failure notice
  // (error, sets noticeCulprit) from one that died (error); other data waits for its receive.
  Status inspectUnexpected();
  // At a message boundary (nothing of a queued message sent yet, and no message cut off by
  // failAll()), sends a failure notice naming `culprit` (-1: none). Best effort: never blocks.
  void sendFailureNotice(int culprit);
  // Completes every queued part's Xfer with `why` and empties the queues.
  void failAll(const Status& why);
  // Best-effort goodbye, then close.
  void close(bool graceful);

  bool readable = true;
  bool writable = true;
  bool hungUp = false;
  bool unexpected = false;  // data arrived while no receive was posted
  bool departed = false;
  bool noticed = false;    // the peer sent a failure notice
  int noticeCulprit = -1;  // the rank it named (-1: none)
  bool active = false;     // listed in the transport's active set
  bool awaited = false;    // listed among the receive lanes whose connection is awaited
  int redials = 0;         // dials made again after the peer dropped one mid-handshake

 private:
  int fd_ = -1;
  int peer_;
  int index_;
  std::unique_ptr<net::ClientHandshake> dial_;
  PartQueue sends_;
  PartQueue recvs_;
  bool sendCut_ = false;  // failAll() dropped a partly sent message: the stream is mid-message
};

}  // namespace weft::tcp
