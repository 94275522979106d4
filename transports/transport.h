// The transport interface: how bytes move between two ranks. Algorithms never see transports;
// they post Xfers to the communicator's Fabric, which routes each peer to the transport that
// serves it (tcp today; shm and rdma behind the same interface).
//
// Contract shared by every transport:
//  - Messages between two ranks match in posting order (per direction): the n-th send posted to
//    a peer meets the n-th receive posted from it, and both must name the same size and tag. A
//    mismatch is a protocol error that fails the communicator, never silent corruption.
//  - post() never blocks. progress() advances transfers without blocking; waitFd() is readable
//    whenever progress() may have something to do, so the caller can sleep in epoll instead of
//    spinning.
//  - Only the communicator's executing thread calls into a transport (no internal locking).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/deadline.h"
#include "base/status.h"
#include "net/auth.h"

namespace weft {

class TransportCapabilities;  // transports/capabilities.h

// Room every Xfer reserves for the transport handling it, so posting allocates nothing.
constexpr size_t kXferScratchBytes = 1152;

// One point-to-point transfer, owned by the poster and left untouched until done.
struct Xfer {
  enum class Kind : uint8_t { kSend, kRecv };

  Kind kind = Kind::kSend;
  int peer = -1;
  uint64_t tag = 0;
  void* buf = nullptr;  // read for sends, written for receives
  size_t bytes = 0;
  bool done = false;
  Status status;  // set when the transfer failed

  alignas(16) unsigned char scratch[kXferScratchBytes];

  void complete(Status result = Status::ok()) {
    status = std::move(result);
    done = true;
  }
};

// What a transport needs to connect its peers after the init allgather.
struct ConnectContext {
  int rank = 0;
  int nranks = 0;
  std::vector<std::string> addresses;  // addresses[r]: what rank r's listen() published
  std::vector<std::string> peerNames;  // "rank 3 (host:pid)", for messages
  net::Secret secret{};
  uint64_t commId = 0;
  Deadline deadline;
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual const char* name() const = 0;

  // Before the init allgather: become reachable; *address is published to every peer.
  virtual Status listen(std::string* address) = 0;
  // After it: make ready to reach each rank in `peers` (all ranks whose pairs this transport
  // serves; they call connect with this rank in their list). A transport may connect a pair
  // here or on its first use (tcp does, at a rank's first send to a peer): then a send to a
  // peer that is gone by then fails naming it; a receive from it may wait for the caller's
  // deadline (or a failure notice), since nothing connects to a receiver but its sender.
  virtual Status connect(const ConnectContext& context, const std::vector<int>& peers) = 0;
  virtual void post(Xfer* xfer) = 0;
  // Advances transfers. A peer that vanished fails the transfers that involve it, and the
  // return value reports it (naming the peer) even when no transfer was pending on it, once
  // the pair is connected (a pair never used has no connection to lose).
  // woken: the caller slept on waitFd() since the last call, so readiness changed and the
  // transport should consult it; otherwise the caller is polling and the transport may simply
  // try its pending transfers (cheaper than asking the kernel what is ready first).
  virtual Status progress(bool woken) = 0;
  virtual int waitFd() const = 0;
  // Where a failure started, as far as this transport can tell: first it reads the failure
  // notices peers have already sent, then returns the culprit the first notice named (or the
  // notifier, after a timeout or an abort there), else the first peer whose connection broke.
  // -1 when none. A broken connection alone is weaker evidence: a peer that exits after its own
  // failure breaks connections too, but it sends notices first.
  virtual int findCulprit() = 0;
  // This rank's communicator has failed (culprit as above; -1 for a timeout or an abort). Tells
  // every peer still connected, without blocking and as far as the connection allows, so that
  // ranks that were not talking to the culprit fail at once, and name it rather than this rank.
  virtual void announceFailure(int culprit) = 0;
  // graceful: tell peers this rank is leaving on purpose (so they do not report it as dead).
  virtual void close(bool graceful) = 0;
  // What this transport does beyond the above (transports/capabilities.h), or nullptr.
  virtual TransportCapabilities* capabilities() { return nullptr; }
};

}  // namespace weft
