#include "net/auth.h"

#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <thread>

#include "net/socket.h"

using weft::Deadline;
using weft::Status;
using weft::net::Purpose;
using weft::net::Secret;
using weft::net::Socket;
namespace handshake = weft::net::handshake;

namespace {

Secret secretOf(uint8_t fill) {
  Secret secret;
  secret.fill(fill);
  return secret;
}

bool contains(const Status& status, const std::string& text) {
  return status.message().find(text) != std::string::npos;
}

// Non-blocking stream socketpair: the same semantics the helpers see on TCP.
void streamPair(Socket* a, Socket* b) {
  int fds[2];
  REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) == 0);
  *a = Socket(fds[0]);
  *b = Socket(fds[1]);
}

struct Outcome {
  Status client;
  Status server;
};

// Runs both sides concurrently; each side closes its end when it fails, as real callers do.
Outcome runHandshake(const Secret& clientSecret, Purpose clientPurpose, uint64_t clientComm,
                     const Secret& serverSecret, Purpose serverPurpose, uint64_t serverComm) {
  Socket client, server;
  streamPair(&client, &server);
  Outcome outcome;
  std::thread serverThread([&] {
    outcome.server = weft::net::authenticateServer(server.fd(), serverSecret, serverPurpose,
                                                   serverComm, Deadline::after(3000));
    if (!outcome.server.isOk()) server.close();
  });
  outcome.client = weft::net::authenticateClient(client.fd(), clientSecret, clientPurpose,
                                                 clientComm, Deadline::after(3000));
  if (!outcome.client.isOk()) client.close();
  serverThread.join();
  return outcome;
}

struct Exchange {
  uint8_t hello[handshake::kHelloBytes];
  std::array<uint8_t, 16> serverNonce{};
  uint8_t challenge[handshake::kChallengeBytes];
  uint8_t proof[handshake::kProofBytes];
};

Exchange honestExchange(const Secret& secret) {
  Exchange e;
  handshake::Hello hello;
  hello.version = handshake::kVersion;
  hello.purpose = Purpose::kTcpData;
  hello.commId = 0x1122334455667788ull;
  hello.nonce.fill(7);
  handshake::encodeHello(hello, e.hello);
  e.serverNonce.fill(9);
  REQUIRE(handshake::makeChallenge(secret, e.hello, e.serverNonce, e.challenge).isOk());
  REQUIRE(handshake::answerChallenge(secret, e.hello, e.challenge, sizeof(e.challenge), e.proof)
              .isOk());
  return e;
}

}  // namespace

TEST_CASE("secretFromPassphrase is SHA-256 and randomBytes is random", "[net][auth]") {
  Secret abc = weft::net::secretFromPassphrase("abc");
  const uint8_t expected[32] = {0xba, 0x78, 0x16, 0xbf, 0x8f, 0x01, 0xcf, 0xea, 0x41, 0x41, 0x40,
                                0xde, 0x5d, 0xae, 0x22, 0x23, 0xb0, 0x03, 0x61, 0xa3, 0x96, 0x17,
                                0x7a, 0x9c, 0xb4, 0x10, 0xff, 0x61, 0xf2, 0x00, 0x15, 0xad};
  CHECK(std::memcmp(abc.data(), expected, 32) == 0);
  CHECK(weft::net::secretFromPassphrase("abd") != abc);

  Secret a{}, b{};
  REQUIRE(weft::net::randomBytes(a.data(), a.size()).isOk());
  REQUIRE(weft::net::randomBytes(b.data(), b.size()).isOk());
  CHECK(a != b);
  CHECK(weft::net::randomBytes(nullptr, 0).isOk());
}

TEST_CASE("hello encoding is little-endian and round-trips", "[net][auth]") {
  handshake::Hello hello;
  hello.version = handshake::kVersion;
  hello.purpose = Purpose::kBootstrap;
  hello.commId = 0x0102030405060708ull;
  for (size_t i = 0; i < hello.nonce.size(); ++i) hello.nonce[i] = static_cast<uint8_t>(i);
  uint8_t bytes[handshake::kHelloBytes];
  handshake::encodeHello(hello, bytes);
  CHECK(bytes[0] == 0x54);  // 0x57454654 little-endian
  CHECK(bytes[3] == 0x57);
  CHECK(bytes[4] == 1);
  CHECK(bytes[6] == 2);
  CHECK(bytes[8] == 0x08);
  handshake::Hello decoded;
  REQUIRE(handshake::decodeHello(bytes, sizeof(bytes), &decoded).isOk());
  CHECK(decoded.purpose == Purpose::kBootstrap);
  CHECK(decoded.commId == hello.commId);
  CHECK(decoded.nonce == hello.nonce);

  SECTION("truncated") {
    Status status = handshake::decodeHello(bytes, sizeof(bytes) - 1, &decoded);
    CHECK(status.code() == weftRemoteError);
    CHECK(contains(status, "truncated"));
  }
  SECTION("bad magic") {
    bytes[1] ^= 0xff;
    Status status = handshake::decodeHello(bytes, sizeof(bytes), &decoded);
    CHECK(status.code() == weftRemoteError);
    CHECK(contains(status, "magic"));
  }
  SECTION("other version") {
    bytes[4] = 2;
    Status status = handshake::decodeHello(bytes, sizeof(bytes), &decoded);
    CHECK(status.code() == weftInvalidUsage);
    CHECK(contains(status, "version 2"));
  }
  SECTION("expectations") {
    Status purpose = handshake::checkHelloExpectations(decoded, Purpose::kTcpData, hello.commId);
    CHECK(purpose.code() == weftInvalidUsage);
    CHECK(purpose.message() == "unexpected purpose 2 (expected 3)");
    Status comm = handshake::checkHelloExpectations(decoded, Purpose::kBootstrap, 5);
    CHECK(comm.code() == weftInvalidUsage);
    CHECK(contains(comm, "communicator id 0x0102030405060708"));
    CHECK(handshake::checkHelloExpectations(decoded, Purpose::kBootstrap, hello.commId).isOk());
  }
}

TEST_CASE("the pure handshake accepts the right secret only", "[net][auth]") {
  Secret secret = secretOf(1);
  Exchange e = honestExchange(secret);
  CHECK(handshake::checkProof(secret, e.hello, e.serverNonce, e.proof, sizeof(e.proof)).isOk());

  SECTION("client with another secret rejects the server") {
    uint8_t proof[handshake::kProofBytes];
    Status status =
        handshake::answerChallenge(secretOf(2), e.hello, e.challenge, sizeof(e.challenge), proof);
    CHECK(status.code() == weftInvalidUsage);
    CHECK(status.message() == "peer failed authentication: wrong secret");
  }
  SECTION("server with another secret rejects the proof") {
    Status status =
        handshake::checkProof(secretOf(2), e.hello, e.serverNonce, e.proof, sizeof(e.proof));
    CHECK(status.code() == weftInvalidUsage);
    CHECK(contains(status, "wrong secret"));
  }
  SECTION("a proof for another nonce or hello is refused") {
    std::array<uint8_t, 16> otherNonce = e.serverNonce;
    otherNonce[0] ^= 1;
    CHECK_FALSE(
        handshake::checkProof(secret, e.hello, otherNonce, e.proof, sizeof(e.proof)).isOk());
    uint8_t otherHello[handshake::kHelloBytes];
    std::memcpy(otherHello, e.hello, sizeof(otherHello));
    otherHello[8] ^= 1;  // another communicator
    CHECK_FALSE(
        handshake::checkProof(secret, otherHello, e.serverNonce, e.proof, sizeof(e.proof)).isOk());
  }
  SECTION("the server's MAC cannot be reflected as the client's proof") {
    uint8_t reflected[handshake::kProofBytes];
    std::memcpy(reflected, e.challenge, 4);
    std::memcpy(reflected + 4, e.challenge + 20, 32);
    CHECK_FALSE(
        handshake::checkProof(secret, e.hello, e.serverNonce, reflected, sizeof(reflected)).isOk());
  }
  SECTION("tampered, truncated and garbage messages") {
    e.challenge[30] ^= 1;
    uint8_t proof[handshake::kProofBytes];
    CHECK(handshake::answerChallenge(secret, e.hello, e.challenge, sizeof(e.challenge), proof)
              .code() == weftInvalidUsage);
    CHECK(handshake::answerChallenge(secret, e.hello, e.challenge, 51, proof).code() ==
          weftRemoteError);
    CHECK(handshake::checkProof(secret, e.hello, e.serverNonce, e.proof, 35).code() ==
          weftRemoteError);
    uint8_t garbage[handshake::kChallengeBytes];
    std::memset(garbage, 0xAB, sizeof(garbage));
    Status status = handshake::answerChallenge(secret, e.hello, garbage, sizeof(garbage), proof);
    CHECK(status.code() == weftRemoteError);
    CHECK(contains(status, "bad magic 0xabababab"));
    CHECK(handshake::checkProof(secret, e.hello, e.serverNonce, garbage, sizeof(e.proof)).code() ==
          weftRemoteError);
  }
}

TEST_CASE("authenticateClient/Server over a stream", "[net][auth]") {
  SECTION("success") {
    Outcome o =
        runHandshake(secretOf(1), Purpose::kTcpData, 42, secretOf(1), Purpose::kTcpData, 42);
    INFO(o.client.message() << " / " << o.server.message());
    CHECK(o.client.isOk());
    CHECK(o.server.isOk());
  }
  SECTION("wrong secret is refused on both sides") {
    Outcome o =
        runHandshake(secretOf(1), Purpose::kTcpData, 42, secretOf(2), Purpose::kTcpData, 42);
    CHECK(o.client.code() == weftInvalidUsage);
    CHECK(contains(o.client, "wrong secret"));
    CHECK_FALSE(o.server.isOk());
    CHECK(contains(o.server, "wrong secret?"));
  }
  SECTION("wrong purpose") {
    Outcome o =
        runHandshake(secretOf(1), Purpose::kBootstrap, 42, secretOf(1), Purpose::kTcpData, 42);
    CHECK(o.server.code() == weftInvalidUsage);
    CHECK(o.server.message() == "unexpected purpose 2 (expected 3)");
    CHECK(o.client.code() == weftRemoteError);
    CHECK(contains(o.client, "refused our hello"));
  }
  SECTION("wrong communicator id") {
    Outcome o =
        runHandshake(secretOf(1), Purpose::kTcpData, 41, secretOf(1), Purpose::kTcpData, 42);
    CHECK(o.server.code() == weftInvalidUsage);
    CHECK(contains(o.server, "unexpected communicator id"));
    CHECK_FALSE(o.client.isOk());
  }
}

TEST_CASE("authenticateServer drops garbage, truncation and silence", "[net][auth]") {
  Socket client, server;
  streamPair(&client, &server);
  SECTION("garbage") {
    uint8_t garbage[handshake::kHelloBytes];
    std::memset(garbage, 0x5A, sizeof(garbage));
    REQUIRE(
        weft::net::sendAll(client.fd(), garbage, sizeof(garbage), Deadline::after(1000)).isOk());
    Status status = weft::net::authenticateServer(server.fd(), secretOf(1), Purpose::kTcpData, 0,
                                                  Deadline::after(1000));
    CHECK(status.code() == weftRemoteError);
    CHECK(contains(status, "magic"));
  }
  SECTION("truncated hello, then hang-up") {
    uint8_t partial[10] = {};
    REQUIRE(
        weft::net::sendAll(client.fd(), partial, sizeof(partial), Deadline::after(1000)).isOk());
    client.close();
    Status status = weft::net::authenticateServer(server.fd(), secretOf(1), Purpose::kTcpData, 0,
                                                  Deadline::after(1000));
    CHECK(status.code() == weftRemoteError);
    CHECK(contains(status, "connection closed by peer"));
  }
  SECTION("silence") {
    Status status = weft::net::authenticateServer(server.fd(), secretOf(1), Purpose::kTcpData, 0,
                                                  Deadline::after(100));
    CHECK(status.code() == weftTimeout);
  }
  SECTION("a server that never answers") {
    Status status = weft::net::authenticateClient(client.fd(), secretOf(1), Purpose::kTcpData, 0,
                                                  Deadline::after(100));
    CHECK(status.code() == weftTimeout);
  }
}
