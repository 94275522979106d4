// Mismatches are weftInvalidUsage rather than weftRemoteError because they mean the two ends were
// configured differently (a stale unique id, another WEFT_SECRET, mixed library versions), which
// the user must fix; retrying cannot help.
#include "net/auth.h"

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include <poll.h>

#include <climits>
#include <cstdio>
#include <cstring>

#include "net/server_handshake.h"
#include "net/socket.h"
#include "net/wire.h"

namespace weft::net {
namespace {

using handshake::kMagic;
using handshake::kVersion;
constexpr size_t kNonceBytes = 16;
constexpr size_t kMacBytes = 32;

std::string hex64(uint64_t value) {
  char text[19];
  std::snprintf(text, sizeof(text), "0x%016llx", static_cast<unsigned long long>(value));
  return text;
}

std::string opensslError() {
  char text[256] = "unknown error";
  unsigned long code = ERR_get_error();
  if (code != 0) ERR_error_string_n(code, text, sizeof(text));
  return text;
}

// The role byte ('S' or 'C') keeps the server's proof from being reflected back as the client's.
Status computeMac(const Secret& secret, char role, const uint8_t* helloBytes,
                  const uint8_t* serverNonce, uint8_t* out) {
  uint8_t message[1 + handshake::kHelloBytes + kNonceBytes];
  message[0] = static_cast<uint8_t>(role);
  std::memcpy(message + 1, helloBytes, handshake::kHelloBytes);
  std::memcpy(message + 1 + handshake::kHelloBytes, serverNonce, kNonceBytes);
  unsigned int length = 0;
  if (HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()), message, sizeof(message),
           out, &length) == nullptr ||
      length != kMacBytes) {
    return internalError("HMAC-SHA256 failed: " + opensslError());
  }
  return Status::ok();
}

Status checkMagic(const uint8_t* in, const char* what) {
  uint32_t magic = wire::getU32(in);
  if (magic != kMagic) {
    char text[11];
    std::snprintf(text, sizeof(text), "0x%08x", static_cast<unsigned>(magic));
    return remoteError(std::string("peer sent a malformed ") + what + " (bad magic " + text +
                       "; not a weft peer?)");
  }
  return Status::ok();
}

Status checkLength(size_t length, size_t expected, const char* what) {
  if (length < expected) {
    return remoteError(std::string("peer sent a truncated ") + what + " (" +
                       std::to_string(length) + " of " + std::to_string(expected) + " bytes)");
  }
  return Status::ok();
}

}  // namespace

Status randomBytes(void* out, size_t bytes) {
  auto* cursor = static_cast<uint8_t*>(out);
  while (bytes > 0) {
    int chunk = bytes > static_cast<size_t>(INT_MAX) ? INT_MAX : static_cast<int>(bytes);
    if (RAND_bytes(cursor, chunk) != 1) {
      return Status(weftSystemError, "RAND_bytes failed: " + opensslError());
    }
    cursor += chunk;
    bytes -= static_cast<size_t>(chunk);
  }
  return Status::ok();
}

Secret secretFromPassphrase(const std::string& passphrase) {
  Secret secret{};
  SHA256(reinterpret_cast<const unsigned char*>(passphrase.data()), passphrase.size(),
         secret.data());
  return secret;
}

namespace handshake {

void encodeHello(const Hello& hello, uint8_t* out) {
  wire::putU32(out, kMagic);
  wire::putU16(out + 4, hello.version);
  wire::putU16(out + 6, static_cast<uint16_t>(hello.purpose));
  wire::putU64(out + 8, hello.commId);
  std::memcpy(out + 16, hello.nonce.data(), kNonceBytes);
}

Status decodeHello(const uint8_t* in, size_t length, Hello* out) {
  WEFT_TRY(checkLength(length, kHelloBytes, "hello"));
  WEFT_TRY(checkMagic(in, "hello"));
  Hello hello;
  hello.version = wire::getU16(in + 4);
  if (hello.version != kVersion) {
    return invalidUsage("peer speaks handshake version " + std::to_string(hello.version) +
                        " but this library speaks " + std::to_string(kVersion) +
                        " (mixed weft versions?)");
  }
  hello.purpose = static_cast<Purpose>(wire::getU16(in + 6));
  hello.commId = wire::getU64(in + 8);
  std::memcpy(hello.nonce.data(), in + 16, kNonceBytes);
  *out = hello;
  return Status::ok();
}

Status makeChallenge(const Secret& secret, const uint8_t* helloBytes,
                     const std::array<uint8_t, 16>& serverNonce, uint8_t* out) {
  wire::putU32(out, kMagic);
  std::memcpy(out + 4, serverNonce.data(), kNonceBytes);
  return computeMac(secret, 'S', helloBytes, serverNonce.data(), out + 4 + kNonceBytes);
}

Status answerChallenge(const Secret& secret, const uint8_t* helloBytes, const uint8_t* challenge,
                       size_t length, uint8_t* proofOut) {
  WEFT_TRY(checkLength(length, kChallengeBytes, "challenge"));
  WEFT_TRY(checkMagic(challenge, "challenge"));
  const uint8_t* serverNonce = challenge + 4;
  uint8_t expected[kMacBytes];
  WEFT_TRY(computeMac(secret, 'S', helloBytes, serverNonce, expected));
  if (CRYPTO_memcmp(expected, challenge + 4 + kNonceBytes, kMacBytes) != 0) {
    return invalidUsage("peer failed authentication: wrong secret");
  }
  wire::putU32(proofOut, kMagic);
  return computeMac(secret, 'C', helloBytes, serverNonce, proofOut + 4);
}

Status checkProof(const Secret& secret, const uint8_t* helloBytes,
                  const std::array<uint8_t, 16>& serverNonce, const uint8_t* proof, size_t length) {
  WEFT_TRY(checkLength(length, kProofBytes, "proof"));
  WEFT_TRY(checkMagic(proof, "proof"));
  uint8_t expected[kMacBytes];
  WEFT_TRY(computeMac(secret, 'C', helloBytes, serverNonce.data(), expected));
  if (CRYPTO_memcmp(expected, proof + 4, kMacBytes) != 0) {
    return invalidUsage("peer failed authentication: wrong secret");
  }
  return Status::ok();
}

Status checkHelloExpectations(const Hello& hello, Purpose purpose, uint64_t commId) {
  if (hello.purpose != purpose) {
    return invalidUsage("unexpected purpose " + std::to_string(static_cast<int>(hello.purpose)) +
                        " (expected " + std::to_string(static_cast<int>(purpose)) + ")");
  }
  if (hello.commId != commId) {
    return invalidUsage("unexpected communicator id " + hex64(hello.commId) + " (expected " +
                        hex64(commId) + ")");
  }
  return Status::ok();
}

std::string describeProgress(const char* stage, size_t done, size_t bytes) {
  if (bytes == 0) return stage;
  return std::string(stage) + " (" + std::to_string(done) + " of " + std::to_string(bytes) +
         " bytes)";
}

}  // namespace handshake

Status authenticateClient(int fd, const Secret& secret, Purpose purpose, uint64_t commId,
                          Deadline deadline) {
  ClientHello hello;
  WEFT_TRY(startClientHandshake(fd, purpose, commId, deadline, &hello));
  return finishClientHandshake(fd, secret, hello, deadline);
}

Status startClientHandshake(int fd, Purpose purpose, uint64_t commId, Deadline deadline,
                            ClientHello* sent) {
  handshake::Hello hello;
  hello.version = kVersion;
  hello.purpose = purpose;
  hello.commId = commId;
  WEFT_TRY(randomBytes(hello.nonce.data(), hello.nonce.size()));
  handshake::encodeHello(hello, sent->data());
  return sendAll(fd, sent->data(), sent->size(), deadline).withContext("authentication");
}

Status finishClientHandshake(int fd, const Secret& secret, const ClientHello& hello,
                             Deadline deadline) {
  uint8_t challenge[handshake::kChallengeBytes];
  Status received = recvAll(fd, challenge, sizeof(challenge), deadline);
  if (received.code() == weftRemoteError) {
    // The server only hangs up here when our hello did not match what it expects.
    return received.withContext(
        "authentication: the peer refused our hello (different communicator, purpose or weft "
        "version?)");
  }
  WEFT_TRY(received.withContext("authentication"));
  uint8_t proof[handshake::kProofBytes];
  WEFT_TRY(handshake::answerChallenge(secret, hello.data(), challenge, sizeof(challenge), proof));
  return sendAll(fd, proof, sizeof(proof), deadline).withContext("authentication");
}

Status authenticateServer(int fd, const Secret& secret, Purpose purpose, uint64_t commId,
                          Deadline deadline) {
  ServerHandshake handshake(secret, purpose, commId);
  while (true) {
    WEFT_TRY(handshake.advance(fd));
    if (handshake.done()) return Status::ok();
    if (!waitFor(fd, handshake.wantsWrite() ? POLLOUT : POLLIN, deadline)) {
      return timeoutError("authentication: still in " + handshake.progress() + " at the deadline");
    }
  }
}

}  // namespace weft::net
