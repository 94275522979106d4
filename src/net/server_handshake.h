// The server side of the authentication handshake (auth.h) as a non-blocking state machine, for
// servers that multiplex many connections (the acceptor, the rendezvous root): receive the
// hello, send the challenge, receive the proof. Call advance() whenever the socket is ready for
// what wantsWrite() asks; it never blocks and never reads past the proof, so what the client
// sends next (a join, a lane hello) is left in the socket for the caller. Every message has a
// fixed size and lives in this object: nothing is allocated from peer input.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "base/status.h"
#include "net/auth.h"

namespace weft::net {

class ServerHandshake {
 public:
  // `secret` must outlive this object.
  ServerHandshake(const Secret& secret, Purpose purpose, uint64_t commId)
      : secret_(&secret), purpose_(purpose), commId_(commId) {}

  // Reads and writes as far as the socket allows. An error means the connection must be dropped;
  // its message says why ("bad magic", "wrong secret", "connection closed by peer during the
  // hello (7 of 32 bytes)", ...).
  Status advance(int fd);
  bool done() const { return stage_ == Stage::kDone; }
  // Whether the peer's hello passed (right protocol, purpose and communicator id): it is one of
  // the communicator's own, or knows its id, rather than a scanner or a stale job.
  bool helloAccepted() const { return stage_ != Stage::kHello; }
  // Whether the next step is a send (poll for POLLOUT) rather than a receive (POLLIN).
  bool wantsWrite() const { return stage_ == Stage::kChallenge; }
  // "the hello (3 of 32 bytes)": where a connection that timed out was stuck.
  std::string progress() const;

 private:
  enum class Stage { kHello, kChallenge, kProof, kDone };

  Status helloReceived();
  const char* stageName() const;

  const Secret* secret_;
  Purpose purpose_;
  uint64_t commId_;
  Stage stage_ = Stage::kHello;
  size_t done_ = 0;  // bytes of the current stage's message already moved
  std::array<uint8_t, handshake::kHelloBytes> hello_{};
  std::array<uint8_t, 16> serverNonce_{};
  std::array<uint8_t, handshake::kChallengeBytes> challenge_{};
  std::array<uint8_t, handshake::kProofBytes> proof_{};
};

}  // namespace weft::net
