// The acceptor under storms: hundreds of honest peers at once, some of them slow between their
// messages (as every rank of a host is on a machine with more ranks than cores), must all be kept,
// and strays among them must still be dropped.
#include <sys/resource.h>
#include <sys/socket.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "net/acceptor.h"
#include "unit/net/acceptor_harness.h"
#include "unit/strays.h"

using weft::Deadline;
using weft::Status;
namespace net = weft::net;

namespace {

using namespace weft::test;

constexpr int kCapMs = 2000;   // the acceptor's perConnectionMs here
constexpr int kPauseMs = 800;  // a slow peer's pause: past a quarter of the cap, well within it
constexpr int kClientThreads = 8;

// As many peers as `wanted`, or fewer where the descriptor limit would not hold both ends of each
// connection and a margin (the soft limit is raised to the hard one first).
int stormSize(int wanted) {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return 0;
  if (limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    (void)setrlimit(RLIMIT_NOFILE, &limit);
    (void)getrlimit(RLIMIT_NOFILE, &limit);
  }
  constexpr rlim_t kMargin = 256;  // the strays, the test's threads and whatever else is open
  rlim_t fit = limit.rlim_cur > kMargin ? (limit.rlim_cur - kMargin) / 2 : 0;
  return static_cast<int>(std::min<rlim_t>(static_cast<rlim_t>(wanted), fit));
}

enum class Pace {
  kPrompt,     // hello with its connect, proof as soon as the challenge is in
  kSlowHello,  // connected, then kPauseMs without a word before its hello (descheduled)
  kSlowProof,  // hello sent, then kPauseMs before reading the challenge and proving
};

struct StormPeer {
  uint32_t id = 0;
  Pace pace = Pace::kPrompt;
  net::Socket socket;
  net::ClientHello hello{};
  Status outcome;
};

// Honest peers connecting at once from a few threads (threads, unlike processes, are few enough
// for 2 cores): each thread connects all of its peers, sends the prompt ones' hellos, finishes
// them, pauses, then finishes the slow ones. Sockets stay open until this is destroyed.
class Storm {
 public:
  Storm(const net::SocketAddress& address, int count, bool slowHellos) : peers_(count) {
    for (int i = 0; i < count; ++i) {
      peers_[i].id = static_cast<uint32_t>(i);
      if (i % 4 == 1) peers_[i].pace = Pace::kSlowProof;
      if (i % 4 == 3 && slowHellos) peers_[i].pace = Pace::kSlowHello;
    }
    for (int t = 0; t < kClientThreads; ++t) {
      threads_.emplace_back([this, address, t] { runShare(address, t); });
    }
  }
  ~Storm() { join(); }
  Storm(const Storm&) = delete;
  Storm& operator=(const Storm&) = delete;

  // Every peer's outcome, once all have finished: ok, or why it failed.
  std::vector<std::string> failures() {
    join();
    std::vector<std::string> failed;
    for (const StormPeer& peer : peers_) {
      if (!peer.outcome.isOk()) {
        failed.push_back("peer " + std::to_string(peer.id) + ": " + peer.outcome.message());
      }
    }
    return failed;
  }
  std::set<uint32_t> ids() const {
    std::set<uint32_t> all;
    for (const StormPeer& peer : peers_) all.insert(peer.id);
    return all;
  }

 private:
  void join() {
    for (auto& thread : threads_) thread.join();
    threads_.clear();
  }

  void runShare(const net::SocketAddress& address, int thread) {
    std::vector<StormPeer*> share;
    for (size_t i = static_cast<size_t>(thread); i < peers_.size(); i += kClientThreads)
      share.push_back(&peers_[i]);
    for (StormPeer* peer : share) {
      peer->outcome = net::connectTo(address, Deadline::after(5000), &peer->socket);
    }
    for (StormPeer* peer : share) {
      if (peer->pace != Pace::kSlowHello) sayHello(peer);
    }
    for (StormPeer* peer : share) {
      if (peer->pace == Pace::kPrompt) finish(peer);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(kPauseMs));
    for (StormPeer* peer : share) {
      if (peer->pace == Pace::kSlowHello) sayHello(peer);
    }
    for (StormPeer* peer : share) {
      if (peer->pace != Pace::kPrompt) finish(peer);
    }
  }

  static void sayHello(StormPeer* peer) {
    if (!peer->outcome.isOk()) return;
    peer->outcome = net::startClientHandshake(peer->socket.fd(), net::Purpose::kTcpData, kCommId,
                                              Deadline::after(5000), &peer->hello);
  }

  // The rest of the handshake, then the 4-byte id the judge keeps.
  static void finish(StormPeer* peer) {
    if (!peer->outcome.isOk()) return;
    Deadline deadline = Deadline::after(10000);
    peer->outcome =
        net::finishClientHandshake(peer->socket.fd(), testSecret(), peer->hello, deadline);
    if (!peer->outcome.isOk()) return;
    std::vector<uint8_t> id = helloOf(peer->id);
    peer->outcome = net::sendAll(peer->socket.fd(), id.data(), id.size(), deadline);
  }

  std::vector<StormPeer> peers_;
  std::vector<std::thread> threads_;
};

// Every listener that may see a storm asks for the largest backlog (the kernel caps it at
// net.core.somaxconn).
struct StormFixture {
  LogCapture capture;
  LoopbackListener listening{SOMAXCONN};
  const net::SocketAddress& address = listening.address;
};

net::AcceptSpec stormSpec(int expected) {
  net::AcceptSpec spec = specFor(expected);
  spec.perConnectionMs = kCapMs;
  return spec;
}

// The acceptor returned ok and kept every peer of the storm, each of which saw its connection
// through.
void checkKeptWhole(AcceptRun& run, Storm& storm) {
  Status status = run.finish();
  INFO(status.message());
  REQUIRE(status.isOk());
  std::vector<std::string> failed = storm.failures();
  INFO((failed.empty() ? std::string() : failed.front()));
  CHECK(failed.empty());
  CHECK(run.ids() == storm.ids());
}

}  // namespace

TEST_CASE_METHOD(StormFixture, "a storm of honest peers with slow ones among them is kept whole",
                 "[net][acceptor][storm]") {
  const int peers = stormSize(512);
  REQUIRE(peers >= 128);
  // Far more than maxInFlight (64) at once, a quarter silent after their connect and a quarter
  // pausing before their proof, each past the quarter of its cap after which a stray in the hello
  // would be dropped to make room.
  AcceptRun run(listening.socket, stormSpec(peers));
  Storm storm(address, peers, /*slowHellos=*/true);
  checkKeptWhole(run, storm);
  CHECK(capture.warnings({"dropped a connection"}) == 0);
  // The slow peers' pause and the handshakes' work; the acceptor adds no rounds of its own.
  CHECK(run.seconds() < 5.0);
}

TEST_CASE_METHOD(StormFixture,
                 "a storm of honest peers among strays keeps the peers and drops the strays",
                 "[net][acceptor][storm]") {
  const int peers = stormSize(256);
  REQUIRE(peers >= 64);
  net::AcceptSpec spec = stormSpec(peers);
  spec.maxInFlight = 16;  // fewer than the strays that stall, so that places run short
  AcceptRun run(listening.socket, spec);

  // Strays refused at once: 24 of them, seen off before the storm so that each is counted.
  portScan(address, 8);
  std::vector<net::Socket> garbage;
  for (int i = 0; i < 8; ++i) garbage.push_back(sendGarbage(address, 4096));
  for (int i = 0; i < 4; ++i) truncatedHello(address, 7);
  net::Secret wrong = testSecret();
  wrong[0] ^= 1;
  std::vector<std::unique_ptr<HandshakeStray>> wrongSecrets;
  for (int i = 0; i < 4; ++i) {
    wrongSecrets.push_back(
        std::make_unique<HandshakeStray>(address, wrong, net::Purpose::kTcpData, kCommId));
  }
  const std::vector<std::string> dropped = {"acceptor test: dropped a connection from 127.0.0.1:"};
  REQUIRE(awaitWarnings(capture, dropped, 24) == 24);
  // Strays that stall, 41 of them, in flight when the storm comes. Peers slow before their hello
  // stay out: while strays overflow their places, a peer that has said nothing for a quarter of
  // its cap looks like one; a peer whose hello passed does not.
  std::vector<net::Socket> silent = silentStrays(address, 40);
  Dribbler dribbler(address, std::string(60, 'W'), 100);

  Storm storm(address, peers, /*slowHellos=*/false);
  checkKeptWhole(run, storm);
  CHECK(run.seconds() < 6.0);

  // Every stray dropped and named: the 24 at once, and the 41 for room, at their cap or at the end.
  CHECK(capture.warnings(dropped) == 24 + 41);
  CHECK(capture.warnings({"bad magic"}) == 8);
  CHECK(capture.warnings({"connection closed by peer during the hello (0 of 32 bytes)"}) == 4);
  CHECK(capture.warnings({"connection closed by peer during the hello (1 of 32 bytes)"}) == 4);
  CHECK(capture.warnings({"connection closed by peer during the hello (7 of 32 bytes)"}) == 4);
  CHECK(capture.warnings({"wrong secret?"}) == 4);
  for (auto& stray : wrongSecrets) CHECK(stray->outcome().code() == weftInvalidUsage);
  size_t stalled = capture.warnings({"making room"}) + capture.warnings({"timed out after"}) +
                   capture.warnings({"not needed any more"});
  CHECK(stalled == 41);
  // None of them an honest peer: every drop for room or time was in the hello.
  CHECK(capture.warnings({"in the proof"}) == 0);
  CHECK(capture.warnings({"in the hello after authentication"}) == 0);
}
