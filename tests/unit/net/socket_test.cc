#include "net/socket.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <numeric>
#include <thread>
#include <vector>

using weft::Deadline;
using weft::Status;
using weft::net::Socket;
using weft::net::SocketAddress;

namespace {

SocketAddress loopback(uint16_t port = 0) {
  SocketAddress address;
  REQUIRE(SocketAddress::parse("127.0.0.1:" + std::to_string(port), &address).isOk());
  return address;
}

// A connected pair over loopback TCP, both ends non-blocking.
void connectedPair(Socket* client, Socket* server) {
  Socket listener;
  SocketAddress bound;
  REQUIRE(weft::net::listenOn(loopback(), 4, &listener, &bound).isOk());
  REQUIRE(weft::net::connectTo(bound, Deadline::after(2000), client).isOk());
  SocketAddress peer;
  REQUIRE(weft::net::acceptOne(listener, Deadline::after(2000), server, &peer).isOk());
  CHECK(peer.isLoopback());
}

}  // namespace

TEST_CASE("listenOn binds an ephemeral port, non-blocking and close-on-exec", "[net][socket]") {
  Socket listener;
  SocketAddress bound;
  REQUIRE(weft::net::listenOn(loopback(), 4, &listener, &bound).isOk());
  CHECK(bound.port() != 0);
  CHECK(bound.isLoopback());
  CHECK((fcntl(listener.fd(), F_GETFL) & O_NONBLOCK) != 0);
  CHECK((fcntl(listener.fd(), F_GETFD) & FD_CLOEXEC) != 0);

  Socket second;
  Status busy = weft::net::listenOn(bound, 4, &second, nullptr);
  CHECK(busy.code() == weftSystemError);
  CHECK(busy.message().find(bound.toString()) != std::string::npos);
}

TEST_CASE("listenOn waits for a fixed port that is busy for a moment, until busyUntil",
          "[net][socket]") {
  // A bound socket without SO_REUSEADDR keeps the port, as a client's self-connection would.
  SocketAddress address;
  int holder = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(holder >= 0);
  {
    Socket probe;
    REQUIRE(weft::net::listenOn(loopback(), 1, &probe, &address).isOk());
  }
  REQUIRE(bind(holder, address.get(), address.length()) == 0);

  Socket refused;
  Status noWait = weft::net::listenOn(address, 4, &refused, nullptr);
  CHECK(noWait.code() == weftSystemError);
  CHECK(noWait.message().find("in use") != std::string::npos);

  std::thread release([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ::close(holder);
  });
  Socket listener;
  Status waited = weft::net::listenOn(address, 4, &listener, nullptr, Deadline::after(3000));
  release.join();
  INFO(waited.message());
  CHECK(waited.isOk());
}

TEST_CASE("Socket is move-only and closes its descriptor", "[net][socket]") {
  int fds[2];
  REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0);
  Socket a(fds[0]);
  Socket b(std::move(a));
  CHECK_FALSE(a.isOpen());
  CHECK(b.fd() == fds[0]);
  Socket c;
  c = std::move(b);
  CHECK(c.fd() == fds[0]);
  c.close();
  CHECK(fcntl(fds[0], F_GETFD) == -1);
  ::close(fds[1]);
}

TEST_CASE("connectTo retries until the listener appears", "[net][socket]") {
  // Reserve a port, free it, and start listening on it only after the first attempts failed.
  SocketAddress address;
  {
    Socket probe;
    REQUIRE(weft::net::listenOn(loopback(), 1, &probe, &address).isOk());
  }
  Socket late;
  Status listening;
  std::thread listener([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    listening = weft::net::listenOn(address, 4, &late, nullptr);
  });
  Socket client;
  Status status = weft::net::connectTo(address, Deadline::after(3000), &client);
  listener.join();
  REQUIRE(listening.isOk());
  INFO(status.message());
  CHECK(status.isOk());
}

TEST_CASE("connectTo gives up at the deadline and names the address", "[net][socket]") {
  SocketAddress address;
  {
    Socket probe;
    REQUIRE(weft::net::listenOn(loopback(), 1, &probe, &address).isOk());
  }
  Socket client;
  auto start = std::chrono::steady_clock::now();
  Status status = weft::net::connectTo(address, Deadline::after(200), &client);
  auto elapsed = std::chrono::steady_clock::now() - start;
  CHECK(status.code() == weftTimeout);
  CHECK(status.message().find(address.toString()) != std::string::npos);
  CHECK(elapsed < std::chrono::seconds(2));
}

TEST_CASE("acceptOne times out", "[net][socket]") {
  Socket listener;
  SocketAddress bound;
  REQUIRE(weft::net::listenOn(loopback(), 1, &listener, &bound).isOk());
  Socket accepted;
  CHECK(weft::net::acceptOne(listener, Deadline::after(50), &accepted, nullptr).code() ==
        weftTimeout);
}

TEST_CASE("sendAll and recvAll move large buffers both ways at once", "[net][socket]") {
  Socket client, server;
  connectedPair(&client, &server);
  REQUIRE(weft::net::setBufferSizes(client.fd(), 64 * 1024, 64 * 1024).isOk());
  std::vector<uint8_t> out(8 << 20);
  std::iota(out.begin(), out.end(), uint8_t{0});
  std::vector<uint8_t> in(out.size());
  // Catch2 assertions are not thread-safe: the thread only records its result.
  Status sent;
  std::thread sender([&] {
    sent = weft::net::sendAll(client.fd(), out.data(), out.size(), Deadline::after(10000));
  });
  Status received = weft::net::recvAll(server.fd(), in.data(), in.size(), Deadline::after(10000));
  sender.join();
  CHECK(sent.isOk());
  CHECK(received.isOk());
  CHECK(in == out);
}

TEST_CASE("recvAll reports a closed peer as a remote error and a silent one as a timeout",
          "[net][socket]") {
  Socket client, server;
  connectedPair(&client, &server);
  uint8_t buffer[16];
  Status silent = weft::net::recvAll(server.fd(), buffer, sizeof(buffer), Deadline::after(50));
  CHECK(silent.code() == weftTimeout);
  REQUIRE(weft::net::sendAll(client.fd(), buffer, 4, Deadline::after(1000)).isOk());
  client.close();
  Status closed = weft::net::recvAll(server.fd(), buffer, sizeof(buffer), Deadline::after(1000));
  CHECK(closed.code() == weftRemoteError);
  CHECK(closed.message().find("connection closed by peer") != std::string::npos);
}

TEST_CASE("sendAll to a closed peer fails without SIGPIPE", "[net][socket]") {
  Socket client, server;
  connectedPair(&client, &server);
  server.close();
  std::vector<uint8_t> data(1 << 20);
  Status status;
  // The first writes may land in the kernel buffer; keep writing until the reset shows.
  for (int i = 0; i < 50 && status.isOk(); ++i) {
    status = weft::net::sendAll(client.fd(), data.data(), data.size(), Deadline::after(1000));
  }
  CHECK(status.code() == weftRemoteError);
  CHECK(status.message().find("connection closed by peer") != std::string::npos);
}

TEST_CASE("sendAll times out when the peer does not read", "[net][socket]") {
  Socket client, server;
  connectedPair(&client, &server);
  std::vector<uint8_t> data(64 << 20);
  Status status = weft::net::sendAll(client.fd(), data.data(), data.size(), Deadline::after(200));
  CHECK(status.code() == weftTimeout);
  CHECK(status.message().find("127.0.0.1") != std::string::npos);
}
