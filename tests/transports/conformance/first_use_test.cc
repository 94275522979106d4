// A pair's first use, which for tcp is when its connections are made (WEFT_RUNTIME_CONNECT's
// default: at the first send each way): a pair first used long after set-up works; a peer that
// is gone before its first use fails the first send to it, naming it; closing a transport while its
// first transfer waits on a peer that is not progressing returns at once and leaves nothing behind.
// The same contract holds for transports that connect at set-up, so every kind runs these.
#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "transports/conformance/harness.h"

namespace weft::test::conformance {
namespace {

std::vector<size_t> twoMessages(int, int) {
  return {0, 5000};
}

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

TEMPLATE_TEST_CASE(
    "a pair first used long after set-up works, and tcp connects only the pairs "
    "in use",
    "[conformance][first-use]", WEFT_CONFORMANCE_KINDS) {
  const Kind kind = TestType::kind;
  CAPTURE(nameOf(kind));
  NothingLeftBehind leaks(kind);
  {
    constexpr int n = 5;
    Connected set(kind, n);
    Cluster& cluster = set.cluster;
    const int atSetUp = openFds();
    // Neighbours on a ring talk, both ways.
    std::vector<Traffic> ring = trafficFor(n);
    std::vector<Driven> ringDriven(n);
    onRankThreads(cluster.members(), [&](int rank) {
      addExchange(ring[rank], rank, {(rank + n - 1) % n, (rank + 1) % n}, twoMessages);
      ring[rank].postAll(cluster.at(rank));
      ringDriven[rank] = drive(cluster.at(rank), ring[rank].xfers());
    });
    const int afterRing = openFds();
    for (int rank = 0; rank < n; ++rank) {
      INFO("rank " << rank);
      CHECK(problemsOf(ringDriven[rank]).empty());
      CHECK(ring[rank].verify().empty());
    }
    // Later, ranks 0 and 2, which never talked, do.
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    Exchange late = exchange(cluster, {0, 2}, twoMessages);
    CHECK(late.problems().empty());
    const int afterLate = openFds();
    if (kind == Kind::kTcp) {
      // One connection each way per pair in use, both of its ends in this process: the five
      // ring pairs, then one more (a full mesh would have been ten pairs at set-up).
      CHECK(afterRing - atSetUp == 4 * n);
      CHECK(afterLate - afterRing == 4);
    }
    closeAll(cluster, cluster.members(), true);
  }
  leaks.check();
}

TEMPLATE_TEST_CASE(
    "a peer gone before the pair's first use fails the first send to it, naming "
    "it",
    "[conformance][first-use][death]", WEFT_CONFORMANCE_KINDS) {
  const Kind kind = TestType::kind;
  const bool sendFirst = GENERATE(false, true);
  CAPTURE(nameOf(kind), sendFirst);
  NothingLeftBehind leaks(kind);
  {
    Connected set(kind, 3);
    Cluster& cluster = set.cluster;
    // Rank 2 is gone before anyone used it.
    cluster.slot(2).reset();
    Traffic first(0);
    if (sendFirst) {
      first.send(2, 100, tagFor(0, 2, 0), 0);
    } else {
      first.recv(2, 100, tagFor(2, 0, 0), 0);
    }
    Transport& transport = cluster.at(0);
    first.postAll(transport);
    const std::string& dead = cluster.peerName(2);
    const Xfer& xfer = *first.xfers().front();
    if (kind == Kind::kTcp && !sendFirst) {
      // tcp connects to send: a receive waits for the peer's connection, so a peer gone before
      // it ever sent to this rank is noticed at the operation's deadline (or through a failure
      // notice from a rank that saw it go), not here.
      Driven waited = idle(transport, 300);
      CHECK(waited.progress.isOk());
      CHECK_FALSE(xfer.done);
    } else {
      Driven driven = drive(transport, first.xfers());
      // A transport connected at set-up may take a small send whole before the loss shows (shm
      // copies it into the pair's ring, rdma writes it to a slot): then progress() reports the
      // loss. Over tcp the send is what connects, and that fails.
      if (driven.progress.isOk()) driven.progress = awaitFailure(transport, 10000).progress;
      INFO("rank 0 progress: " << describe(driven.progress));
      CHECK(driven.finished);
      CHECK(contains(driven.progress.message(), dead));
      CHECK(xfer.done);
      if (!sendFirst || kind == Kind::kTcp) {
        INFO("the first transfer: " << describe(xfer.status));
        CHECK_FALSE(xfer.status.isOk());
        CHECK(contains(xfer.status.message(), dead));
      }
      // Rank 1 used no pair with rank 2 either: a transport that connected it at set-up
      // reports the loss (naming it) the way a dead peer is always reported; tcp has nothing
      // to report.
      Driven bystander = idle(cluster.at(1), 300);
      INFO("rank 1 progress: " << describe(bystander.progress));
      CHECK((bystander.progress.isOk() || contains(bystander.progress.message(), dead)));
      if (kind == Kind::kTcp) CHECK(bystander.progress.isOk());
      // The survivors still talk.
      Exchange after = exchange(cluster, {0, 1}, twoMessages);
      CHECK(after.problems().empty());
    }
    closeAll(cluster, {0, 1}, false);
  }
  leaks.check();
}

TEMPLATE_TEST_CASE(
    "closing a transport while its first transfers wait on a peer that is not "
    "progressing returns at once and leaves nothing behind",
    "[conformance][first-use][abort]", WEFT_CONFORMANCE_KINDS) {
  const Kind kind = TestType::kind;
  CAPTURE(nameOf(kind));
  NothingLeftBehind leaks(kind);
  {
    Connected set(kind, 2);
    Cluster& cluster = set.cluster;
    // Rank 1 never progresses: over tcp, rank 0's connection waits in rank 1's listen backlog
    // for a handshake nobody serves.
    Traffic first(0);
    first.send(1, size_t{1} << 20, tagFor(0, 1, 0), 0);
    first.recv(1, 100, tagFor(1, 0, 0), 1);
    Transport& transport = cluster.at(0);
    first.postAll(transport);
    Driven driven = idle(transport, 200);
    CHECK(driven.progress.isOk());
    CHECK_FALSE(first.xfers()[1]->done);
    const auto start = std::chrono::steady_clock::now();
    transport.close(false);
    cluster.slot(0).reset();
    CHECK(secondsSince(start) < 1.0);
    cluster.at(1).close(false);
  }
  leaks.check();
}

}  // namespace weft::test::conformance
