// Mutual authentication of every connection by an HMAC-SHA256 challenge over a shared secret
// (OpenSSL's libcrypto). Both ends prove that they know the secret without revealing it; the
// proofs also bind the connection's purpose and the communicator's identity, so a connection made
// for one communicator (or one role) cannot be replayed into another.
//
// Protocol (all integers little-endian; lengths fixed, so nothing is allocated from peer input):
//   client -> server  Hello     { magic u32, version u16, purpose u16, commId u64, nonceC[16] }
//   server -> client  Challenge { magic u32, nonceS[16], macS[32] = HMAC(k, "S"|hello|nonceS) }
//   client -> server  Proof     { magic u32, macC[32] = HMAC(k, "C"|hello|nonceS) }
// The server rejects a wrong magic, version, purpose or commId, and a wrong macC; the client
// rejects a wrong macS. Failures name what was wrong but never echo secret material.
//
// Error codes: a peer that does not speak the protocol (bad magic, truncated message, closed
// connection) yields weftRemoteError; one that speaks it but was set up differently (wrong secret,
// version, purpose or communicator id) yields weftInvalidUsage. Deadlines yield weftTimeout.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "base/deadline.h"
#include "base/status.h"

namespace weft::net {

constexpr size_t kSecretBytes = 32;
using Secret = std::array<uint8_t, kSecretBytes>;

// Fills a secret (or any buffer) from OpenSSL's CSPRNG.
Status randomBytes(void* out, size_t bytes);
// Derives a secret from a passphrase (SHA-256), for WEFT_SECRET.
Secret secretFromPassphrase(const std::string& passphrase);

enum class Purpose : uint16_t {
  kRendezvous = 1,  // rank -> root
  kBootstrap = 2,   // rank -> rank, the bootstrap ring
  kTcpData = 3,     // rank -> rank, TCP transport data connections
  kShm = 4,         // rank -> rank of one host, the shm transport's Unix-socket set-up
  kRdmaSide = 5,    // rank -> rank, the rdma transport's side connections
};

// Blocking-style wrappers over non-blocking sockets, bounded by the deadline.
Status authenticateClient(int fd, const Secret& secret, Purpose purpose, uint64_t commId,
                          Deadline deadline);
Status authenticateServer(int fd, const Secret& secret, Purpose purpose, uint64_t commId,
                          Deadline deadline);
// authenticateClient in its two halves, for a caller that must have the hello sent before it
// can wait for the answer (the tests' strays, queued before the listener serves them).
using ClientHello = std::array<uint8_t, 32>;  // = handshake::kHelloBytes
Status startClientHandshake(int fd, Purpose purpose, uint64_t commId, Deadline deadline,
                            ClientHello* sent);
Status finishClientHandshake(int fd, const Secret& secret, const ClientHello& hello,
                             Deadline deadline);

// The pure message logic, so that it can be unit-tested and fuzzed without sockets.
namespace handshake {
constexpr uint32_t kMagic = 0x57454654;  // "WEFT"
constexpr uint16_t kVersion = 1;
constexpr size_t kHelloBytes = 32;
constexpr size_t kChallengeBytes = 52;
constexpr size_t kProofBytes = 36;

struct Hello {
  uint16_t version = 0;
  Purpose purpose = Purpose::kRendezvous;
  uint64_t commId = 0;
  std::array<uint8_t, 16> nonce{};
};
void encodeHello(const Hello& hello, uint8_t* out);
// Checks the length, magic and version.
Status decodeHello(const uint8_t* in, size_t length, Hello* out);
// Server side: checks a decoded hello's purpose and communicator id against this end's.
Status checkHelloExpectations(const Hello& hello, Purpose purpose, uint64_t commId);
// Server side: builds the challenge for a received hello.
Status makeChallenge(const Secret& secret, const uint8_t* helloBytes,
                     const std::array<uint8_t, 16>& serverNonce, uint8_t* out);
// Client side: checks the server's MAC and writes the proof.
Status answerChallenge(const Secret& secret, const uint8_t* helloBytes, const uint8_t* challenge,
                       size_t length, uint8_t* proofOut);
// Server side: checks the client's proof.
Status checkProof(const Secret& secret, const uint8_t* helloBytes,
                  const std::array<uint8_t, 16>& serverNonce, const uint8_t* proof, size_t length);
// "the challenge (3 of 52 bytes)", or just the stage when it moves no bytes: where a
// handshake that timed out or failed was stuck.
std::string describeProgress(const char* stage, size_t done, size_t bytes);
}  // namespace handshake

static_assert(sizeof(ClientHello) == handshake::kHelloBytes);

}  // namespace weft::net
