// The client side of the authentication handshake (auth.h) as a non-blocking state machine, the
// counterpart of ServerHandshake, for connections made inside a progress loop (the TCP
// transport's connections on first use): finish the connect, send the hello, receive the
// challenge, send the proof followed by the caller's own hello (a TCP lane's {rank, index}).
// Call advance() whenever the socket may be ready; it never blocks. Every message has a fixed
// size and lives in this object.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "base/status.h"
#include "net/auth.h"

namespace weft::net {

class ClientHandshake {
 public:
  static constexpr size_t kMaxTrailerBytes = 64;

  // `secret` must outlive this object. `trailer` (at most kMaxTrailerBytes) is copied.
  ClientHandshake(const Secret& secret, Purpose purpose, uint64_t commId, const void* trailer,
                  size_t trailerBytes);

  // Moves the handshake on as far as the socket allows. An error means the connection failed:
  // refused or reset (weftRemoteError), a server that rejected our hello or failed to prove the
  // secret (weftRemoteError / weftInvalidUsage), the message says which.
  Status advance(int fd);
  bool done() const { return stage_ == Stage::kDone; }
  // Whether the connect itself went through: a failure after it is the server dropping the
  // connection mid-handshake (it may be alive and simply slow to serve), not a refusal.
  bool reachedPeer() const { return stage_ != Stage::kConnect; }
  // "the challenge (0 of 52 bytes)": where a connection that timed out was stuck.
  std::string progress() const;

 private:
  enum class Stage { kConnect, kHello, kChallenge, kProof, kDone };

  Status makeHello();
  const char* stageName() const;

  const Secret* secret_;
  Purpose purpose_;
  uint64_t commId_;
  Stage stage_ = Stage::kConnect;
  size_t done_ = 0;  // bytes of the current stage's message already moved
  std::array<uint8_t, handshake::kHelloBytes> hello_{};
  std::array<uint8_t, handshake::kChallengeBytes> challenge_{};
  // The proof, then the trailer: sent as one message.
  std::array<uint8_t, handshake::kProofBytes + kMaxTrailerBytes> proof_{};
  size_t trailerBytes_ = 0;
};

}  // namespace weft::net
