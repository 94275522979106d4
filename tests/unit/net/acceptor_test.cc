#include "net/acceptor.h"

#include <dirent.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "net/unix_socket.h"
#include "net/wire.h"
#include "unit/net/acceptor_harness.h"
#include "unit/strays.h"

using weft::Deadline;
using weft::Status;
using weft::net::AcceptSpec;
using weft::net::Arrival;
using weft::net::Purpose;
using weft::net::Secret;
using weft::net::Socket;
using weft::net::SocketAddress;

namespace {

using namespace weft::test;

// What an honest peer does: authenticate, then send its 4-byte id.
Status honestClient(const Socket& socket, uint32_t id) {
  Deadline deadline = Deadline::after(10000);
  WEFT_TRY(weft::net::authenticateClient(socket.fd(), testSecret(), Purpose::kTcpData, kCommId,
                                         deadline));
  std::vector<uint8_t> hello = helloOf(id);
  return weft::net::sendAll(socket.fd(), hello.data(), hello.size(), deadline);
}

// Honest clients, each on its own thread, connected now.
class HonestClients {
 public:
  HonestClients(const SocketAddress& address, int count) : outcomes_(count) {
    for (int i = 0; i < count; ++i) {
      threads_.emplace_back([this, address, i] {
        Socket socket;
        outcomes_[i] = weft::net::connectTo(address, Deadline::after(5000), &socket);
        if (outcomes_[i].isOk()) outcomes_[i] = honestClient(socket, static_cast<uint32_t>(i));
        // Held until the acceptor has taken the connection (its verdict is the test's).
        if (outcomes_[i].isOk()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
      });
    }
  }
  ~HonestClients() {
    for (auto& thread : threads_) thread.join();
  }
  std::vector<Status> outcomes() {
    for (auto& thread : threads_) thread.join();
    threads_.clear();
    return outcomes_;
  }

 private:
  std::vector<Status> outcomes_;
  std::vector<std::thread> threads_;
};

size_t openDescriptors() {
  size_t count = 0;
  if (DIR* dir = opendir("/proc/self/fd")) {
    while (readdir(dir) != nullptr) ++count;
    closedir(dir);
  }
  return count;
}

}  // namespace

TEST_CASE_METHOD(StraysFixture,
                 "the acceptor drops strays of every kind, each named, while honest peers arrive",
                 "[net][acceptor]") {
  using namespace weft::test;
  AcceptRun run(listening.socket, specFor(3));

  // Strays the acceptor can refuse at once: 11 of them.
  portScan(address, 4);
  Socket garbage = sendGarbage(address, 4096);
  Socket oversized = sendGarbage(address, 256 * 1024);
  truncatedHello(address, 7);
  Secret wrong = testSecret();
  wrong[0] ^= 1;
  HandshakeStray wrongSecret(address, wrong, Purpose::kTcpData, kCommId);
  HandshakeStray wrongPurpose(address, testSecret(), Purpose::kBootstrap, kCommId);
  HandshakeStray wrongComm(address, testSecret(), Purpose::kTcpData, kCommId + 1);
  HandshakeStray unwanted(address, testSecret(), Purpose::kTcpData, kCommId, helloOf(kUnwantedId));
  const std::vector<std::string> dropped = {"acceptor test: dropped a connection from 127.0.0.1:"};
  REQUIRE(awaitWarnings(capture, dropped, 11) == 11);

  // Strays that stall (each would hold a one-at-a-time listener for its 5 s cap): 10 of them.
  HandshakeStray halfHello(address, testSecret(), Purpose::kTcpData, kCommId, {1, 2});
  Dribbler dribbler(address, std::string(30, 'W'), 1000);
  std::vector<Socket> silent = silentStrays(address, 8);
  halfHello.awaitSpoken();

  HonestClients honest(address, 3);
  Status status = run.finish();
  INFO(status.message());
  REQUIRE(status.isOk());
  CHECK(run.ids() == std::set<uint32_t>{0, 1, 2});
  for (const Status& outcome : honest.outcomes()) CHECK(outcome.isOk());
  // Served alongside the strays, not after them (8 silent ones alone: 40 s one at a time).
  CHECK(run.seconds() < 3.0);

  CHECK(capture.warnings(dropped) == 21);
  CHECK(capture.warnings({"connection closed by peer during the hello (0 of 32 bytes)"}) == 2);
  CHECK(capture.warnings({"connection closed by peer during the hello (1 of 32 bytes)"}) == 2);
  CHECK(capture.warnings({"bad magic"}) == 2);
  CHECK(capture.warnings({"connection closed by peer during the hello (7 of 32 bytes)"}) == 1);
  CHECK(capture.warnings({"wrong secret?"}) == 1);
  CHECK(capture.warnings({"unexpected purpose 2 (expected 3)"}) == 1);
  CHECK(capture.warnings({"unexpected communicator id"}) == 1);
  CHECK(capture.warnings({"id " + std::to_string(kUnwantedId) + " is not wanted"}) == 1);
  CHECK(capture.warnings({"not needed any more", "in the hello after authentication (2 of 4"}) ==
        1);
  CHECK(capture.warnings({"not needed any more", "in the hello (0 of 32 bytes)"}) >= 8);
  CHECK(capture.warnings({"not needed any more", "in the hello ("}) == 9);  // and the dribbler

  CHECK(wrongSecret.outcome().code() == weftInvalidUsage);
  CHECK(wrongPurpose.outcome().message().find("refused our hello") != std::string::npos);
  CHECK(unwanted.outcome().code() == weftRemoteError);  // hung up on after its hello
  uint8_t byte;
  CHECK(weft::net::recvAll(garbage.fd(), &byte, 1, Deadline::after(2000)).code() ==
        weftRemoteError);
}

TEST_CASE_METHOD(StraysFixture,
                 "each connection has its own cap: slow and silent ones time out alone",
                 "[net][acceptor]") {
  using namespace weft::test;
  AcceptSpec spec = specFor(1);
  spec.perConnectionMs = 300;
  AcceptRun run(listening.socket, spec);
  Dribbler dribbler(address, std::string(50, 'W'), 100);
  std::vector<Socket> silent = silentStrays(address, 2);
  HandshakeStray halfHello(address, testSecret(), Purpose::kTcpData, kCommId, {1});
  REQUIRE(awaitWarnings(capture, {"dropped a connection", "timed out after"}, 4) == 4);
  CHECK(capture.warnings({"timed out after", "ms in the hello (0 of 32 bytes)"}) == 2);
  CHECK(capture.warnings({"timed out after", "in the hello after authentication (1 of 4"}) == 1);

  HonestClients honest(address, 1);
  Status status = run.finish();
  INFO(status.message());
  CHECK(status.isOk());
  CHECK(run.ids() == std::set<uint32_t>{0});
}

TEST_CASE_METHOD(StraysFixture,
                 "at most maxInFlight connections beyond the expected ones are in flight, and "
                 "the oldest makes room",
                 "[net][acceptor]") {
  using namespace weft::test;
  AcceptSpec spec = specFor(1);
  spec.maxInFlight = 4;
  spec.perConnectionMs = 2000;  // the oldest may be dropped for a newcomer after 500 ms

  const size_t baseline = openDescriptors();
  std::atomic<bool> sampling{true};
  std::atomic<size_t> peak{baseline};
  std::thread sampler([&] {
    while (sampling) {
      size_t now = openDescriptors();
      if (now > peak) peak = now;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  });
  constexpr int kSilent = 12;
  std::vector<Socket> silent = silentStrays(address, kSilent);
  AcceptRun run(listening.socket, spec);
  HonestClients honest(address, 1);  // queued behind the silent ones
  Status status = run.finish();
  sampling = false;
  sampler.join();
  INFO(status.message());
  CHECK(status.isOk());
  // Five places (the one expected and four more): rounds of silent connections, each dropped
  // after 500 ms; without the rule each round would last the whole cap (2 s), and without the
  // bound all 13 would be accepted.
  CHECK(run.seconds() < 3.0);
  CHECK(capture.warnings({"making room (5 connections in flight: room for the 1 still expected "
                          "and 4 more)"}) >= 8);
  // The test's own 13 client sockets, at most 4 + 1 accepted ones, the acceptor's epoll set, the
  // sampler's directory.
  CHECK(peak - baseline <= kSilent + 1 + 5 + 1 + 1);
}

TEST_CASE_METHOD(StraysFixture, "the acceptor's deadline names who is missing and what was dropped",
                 "[net][acceptor]") {
  using namespace weft::test;
  AcceptSpec spec = specFor(2);
  spec.deadline = Deadline::after(600);
  AcceptRun run(listening.socket, spec);
  HonestClients honest(address, 1);
  Socket garbage = sendGarbage(address, 64);
  REQUIRE(awaitWarnings(capture, {"bad magic"}, 1) == 1);
  std::vector<Socket> silent = silentStrays(address, 1);
  Status status = run.finish();
  CHECK(status.code() == weftTimeout);
  CHECK(status.message().find("acceptor test: waiting for the honest clients: 1 of 2 connections "
                              "arrived before the deadline") == 0);
  CHECK(status.message().find("1 still in flight") != std::string::npos);
  CHECK(status.message().find("the last one dropped came from 127.0.0.1:") != std::string::npos);
  CHECK(status.message().find("bad magic") != std::string::npos);
}

TEST_CASE("the acceptor serves Unix-domain listeners too", "[net][acceptor]") {
  Socket listener;
  const std::string name = "weft-acceptor-test-" + std::to_string(getpid());
  REQUIRE(weft::net::listenUnix(name, &listener).isOk());
  AcceptSpec spec = specFor(1);
  spec.purpose = Purpose::kShm;
  std::vector<uint8_t> hello = helloOf(9);
  Status kept;
  std::thread client([&] {
    Socket socket;
    Deadline deadline = Deadline::after(5000);
    kept = weft::net::connectUnix(name, deadline, &socket);
    if (kept.isOk()) {
      kept = weft::net::authenticateClient(socket.fd(), testSecret(), Purpose::kShm, kCommId,
                                           deadline);
    }
    if (kept.isOk()) kept = weft::net::sendAll(socket.fd(), hello.data(), 4, deadline);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  });
  uint32_t id = 0;
  Status status = weft::net::acceptAuthenticated(
      listener, spec,
      [&](Arrival& arrival) {
        id = weft::net::wire::getU32(arrival.hello.data());
        return Status::ok();
      },
      [] { return std::string("waiting for the local client"); });
  client.join();
  CHECK(kept.isOk());
  CHECK(status.isOk());
  CHECK(id == 9);
}

TEST_CASE("acceptAuthenticated checks its arguments, naming the field", "[net][acceptor]") {
  LoopbackListener listening;
  auto judge = [](Arrival&) { return Status::ok(); };
  auto missing = [] { return std::string("nobody"); };
  auto refused = [&](const AcceptSpec& spec) {
    return weft::net::acceptAuthenticated(listening.socket, spec, judge, missing);
  };
  AcceptSpec spec = specFor(1);
  spec.helloBytes = weft::net::kMaxHelloBytes + 1;
  CHECK(refused(spec).message().find("spec.helloBytes=65") != std::string::npos);
  spec = specFor(-1);
  CHECK(refused(spec).message().find("spec.expected=-1") != std::string::npos);
  spec = specFor(1);
  spec.maxInFlight = 0;
  CHECK(refused(spec).message().find("spec.maxInFlight=0") != std::string::npos);
  spec = specFor(1);
  spec.perConnectionMs = 0;
  CHECK(refused(spec).code() == weftInvalidArgument);
  Socket closed;
  CHECK(weft::net::acceptAuthenticated(closed, specFor(1), judge, missing).code() ==
        weftInvalidArgument);
  // Nothing expected: returns at once without accepting.
  CHECK(weft::net::acceptAuthenticated(listening.socket, specFor(0), judge, missing).isOk());
}
