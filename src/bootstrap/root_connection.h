// One connection at the rendezvous root, as a non-blocking state machine: the server side of the
// kRendezvous handshake (net::ServerHandshake), then the fixed-size join message, then (once the
// round decides) a reply. The root server drives it from its epoll loop; every read is bounded
// by a fixed size.
#pragma once

#include <sys/epoll.h>

#include <array>
#include <cstdint>
#include <string>

#include "base/deadline.h"
#include "base/status.h"
#include "bootstrap/rendezvous_wire.h"
#include "net/address.h"
#include "net/auth.h"
#include "net/server_handshake.h"
#include "net/socket.h"

namespace weft::bootstrap {

class RootConnection {
 public:
  enum class State { kHandshake, kJoinHeader, kJoined, kReplying, kDone };

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
  std::string stateName() const;
  int fd() const { return socket_.fd(); }
  const net::SocketAddress& peer() const { return peer_; }
  Deadline deadline() const { return deadline_; }
  const rendezvous::JoinHeader& join() const { return join_; }

 private:
  Status flush();

  net::Socket socket_;
  net::SocketAddress peer_;
  Deadline deadline_;
  State state_ = State::kHandshake;
  net::ServerHandshake handshake_;

  std::array<uint8_t, rendezvous::kJoinHeaderBytes> header_{};
  size_t have_ = 0;
  rendezvous::JoinHeader join_;

  rendezvous::Buffer reply_;
  size_t replySent_ = 0;
};

}  // namespace weft::bootstrap
