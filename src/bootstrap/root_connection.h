// One connection at the rendezvous root, as a non-blocking state machine: the server side of the
// kRendezvous handshake, then the join message, then (once the round decides) a reply. The root
// server drives it from its epoll loop; every read is bounded by a fixed size or a checked cap.
#pragma once

#include <sys/epoll.h>

#include <array>
#include <cstdint>
#include <string>

#include "bootstrap/rendezvous_wire.h"
#include "core/deadline.h"
#include "core/status.h"
#include "net/address.h"
#include "net/auth.h"
#include "net/socket.h"

namespace weft::bootstrap {

class RootConnection {
 public:
  enum class State {
    kHello,
    kChallenge,
    kProof,
    kJoinHeader,
    kJoinBody,
    kJoined,
    kReplying,
    kDone
  };

  RootConnection(net::Socket socket, net::SocketAddress peer, const net::Secret& secret,
                 Deadline deadline);

  // Advance on readiness. An error means the connection must be dropped; its message says why.
  Status onReadable();
  Status onWritable();

  // Sends `reply` and then finishes (state kDone). Allowed in any state; pending input is ignored.
  void startReply(rendezvous::Buffer reply, Deadline deadline);

  // The epoll events this state waits for.
  uint32_t wantedEvents() const;
  State state() const { return state_; }
  const char* stateName() const;
  int fd() const { return socket_.fd(); }
  const net::SocketAddress& peer() const { return peer_; }
  Deadline deadline() const { return deadline_; }
  const rendezvous::JoinHeader& join() const { return join_; }
  std::string takeDescription() { return std::move(description_); }

 private:
  // Reads toward the current state's message; returns true once it is complete.
  Status readMessage(bool* complete);
  Status messageComplete();
  Status flush();

  net::Socket socket_;
  net::SocketAddress peer_;
  const net::Secret& secret_;
  Deadline deadline_;
  State state_ = State::kHello;

  // Fixed-size inbound messages land in `inbox_`; only the description uses `description_`,
  // sized from a length that decodeJoinHeader has capped.
  std::array<uint8_t, 64> inbox_{};
  size_t have_ = 0;
  std::array<uint8_t, net::handshake::kHelloBytes> hello_{};
  std::array<uint8_t, 16> serverNonce_{};
  rendezvous::JoinHeader join_;
  std::string description_;

  std::array<uint8_t, net::handshake::kChallengeBytes> challenge_{};
  rendezvous::Buffer reply_;
  const uint8_t* outData_ = nullptr;
  size_t outLeft_ = 0;
};

}  // namespace weft::bootstrap
