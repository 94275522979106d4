// Hostile clients for the listeners' tests (the rendezvous root, the acceptor, the transports'
// data listeners). Each connects to a loopback address only and misbehaves in one way; the
// listener under test must drop it without delaying the honest connections.
#pragma once

#include <sys/socket.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "net/address.h"
#include "net/auth.h"
#include "net/socket.h"
#include "net/unix_socket.h"

namespace weft::test {

// Where the strays go: a TCP address, which must be a loopback address (tests never leave the
// host), or an abstract Unix socket's name (the shm transport's listener).
struct StrayTarget {
  StrayTarget(const net::SocketAddress& address) : tcp(address) {}  // NOLINT: implicit on purpose
  static StrayTarget unixSocket(std::string name) {
    StrayTarget target;
    target.unixName = std::move(name);
    return target;
  }
  std::optional<net::SocketAddress> tcp;
  std::string unixName;

 private:
  StrayTarget() = default;
};

inline net::Socket connectStray(const StrayTarget& target) {
  net::Socket socket;
  if (target.tcp) {
    REQUIRE(target.tcp->isLoopback());
    REQUIRE(net::connectTo(*target.tcp, Deadline::after(2000), &socket).isOk());
  } else {
    REQUIRE(net::connectUnix(target.unixName, Deadline::after(2000), &socket).isOk());
  }
  return socket;
}

// A port scan: connections opened and closed at once, every second one after the byte a TLS
// scanner would send first.
inline void portScan(const StrayTarget& address, int connections) {
  for (int i = 0; i < connections; ++i) {
    net::Socket probe = connectStray(address);
    if (i % 2 == 1) {
      uint8_t byte = 0x16;
      REQUIRE(net::sendAll(probe.fd(), &byte, 1, Deadline::after(1000)).isOk());
    }
  }
}

// Sends `bytes` of garbage and keeps the connection open (returned). Up to the socket buffers'
// size (a few hundred KiB on loopback), so that the send cannot block on a listener that reads
// only what it needs.
inline net::Socket sendGarbage(const StrayTarget& address, size_t bytes) {
  net::Socket socket = connectStray(address);
  std::vector<uint8_t> junk(bytes, 0x42);
  REQUIRE(net::sendAll(socket.fd(), junk.data(), junk.size(), Deadline::after(1000)).isOk());
  return socket;
}

// The first `bytes` of a well-formed hello, then a hang-up.
inline void truncatedHello(const StrayTarget& address, size_t bytes) {
  net::handshake::Hello hello;
  hello.version = net::handshake::kVersion;
  uint8_t encoded[net::handshake::kHelloBytes];
  net::handshake::encodeHello(hello, encoded);
  net::Socket socket = connectStray(address);
  REQUIRE(bytes < sizeof(encoded));
  REQUIRE(net::sendAll(socket.fd(), encoded, bytes, Deadline::after(1000)).isOk());
}

// Connections that never send anything, held open until destroyed.
inline std::vector<net::Socket> silentStrays(const StrayTarget& address, int count) {
  std::vector<net::Socket> sockets;
  for (int i = 0; i < count; ++i) sockets.push_back(connectStray(address));
  return sockets;
}

// Writes one byte of `text` every `periodMs` on its own thread, until the text is out, the
// listener hangs up, or it is destroyed.
class Dribbler {
 public:
  Dribbler(const StrayTarget& address, std::string text, int periodMs)
      : socket_(connectStray(address)), text_(std::move(text)) {
    thread_ = std::thread([this, periodMs] {
      for (size_t i = 0; i < text_.size() && !stop_; ++i) {
        if (send(socket_.fd(), text_.data() + i, 1, MSG_NOSIGNAL) != 1) break;
        for (int slept = 0; slept < periodMs && !stop_; slept += 10) {
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
      }
    });
  }
  ~Dribbler() {
    stop_ = true;
    thread_.join();
  }
  Dribbler(const Dribbler&) = delete;
  Dribbler& operator=(const Dribbler&) = delete;

 private:
  net::Socket socket_;
  std::string text_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// A client handshake, for strays that must hear the listener's answer (a wrong secret, purpose
// or communicator): the hello is sent at once, the rest of the handshake runs on its own thread,
// then `after` bytes are sent if it authenticated. The outcome is read once the thread has ended
// (the listener dropped it, or the deadline).
class HandshakeStray {
 public:
  HandshakeStray(const StrayTarget& address, const net::Secret& secret, net::Purpose purpose,
                 uint64_t commId, std::vector<uint8_t> after = {})
      : socket_(connectStray(address)) {
    net::ClientHello hello;
    REQUIRE(net::startClientHandshake(socket_.fd(), purpose, commId, Deadline::after(2000), &hello)
                .isOk());
    thread_ = std::thread([this, secret, hello, after] {
      Deadline deadline = Deadline::after(10000);
      outcome_ = net::finishClientHandshake(socket_.fd(), secret, hello, deadline);
      // A refused client hangs up, as real ones do (a listener waiting for the proof sees it).
      if (!outcome_.isOk()) socket_.close();
      if (outcome_.isOk() && !after.empty()) {
        outcome_ = net::sendAll(socket_.fd(), after.data(), after.size(), deadline);
      }
      spoken_ = true;
      if (outcome_.isOk()) {
        // Authenticated: wait for the listener's verdict, a hang-up.
        uint8_t byte;
        outcome_ = net::recvAll(socket_.fd(), &byte, 1, deadline);
      }
    });
  }
  ~HandshakeStray() { join(); }
  HandshakeStray(const HandshakeStray&) = delete;
  HandshakeStray& operator=(const HandshakeStray&) = delete;

  // Waits (up to 5 s) until the handshake and the bytes after it are through or failed, so that
  // a test knows where the listener will find this stray.
  void awaitSpoken() const {
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!spoken_ && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  const Status& outcome() {
    join();
    return outcome_;
  }

 private:
  void join() {
    if (thread_.joinable()) thread_.join();
  }

  net::Socket socket_;
  Status outcome_;
  std::atomic<bool> spoken_{false};
  std::thread thread_;
};

// What an outsider can throw at a listener without the secret or the communicator id: 15
// connections, 10 of which stall (each would hold a one-at-a-time listener for its 5 s cap).
// `purpose` is the listener's own, so that one stray fails on the communicator id alone.
struct StrayMix {
  StrayMix(const StrayTarget& target, net::Purpose purpose)
      : garbage(sendGarbage(target, 4096)),
        wrongPurpose(target, net::Secret{}, net::Purpose::kBootstrap, 0),
        staleComm(target, net::Secret{}, purpose, 0),
        dribbler(target, std::string(60, 'W'), 1000),
        silent(silentStrays(target, 8)) {
    portScan(target, 2);
    truncatedHello(target, 7);
  }
  static constexpr size_t kConnections = 15;

  net::Socket garbage;
  HandshakeStray wrongPurpose;
  HandshakeStray staleComm;
  Dribbler dribbler;
  std::vector<net::Socket> silent;
};

}  // namespace weft::test
