// Every transport's failures against the contract of transports/transport.h: a peer that vanishes
// fails the transfers with it and progress() names it, even where nothing was pending; a peer
// that leaves on purpose is no failure to the idle ones; a failure notice lets the others name
// its culprit. Three ranks throughout, so that the pair not involved shows it is unaffected.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "transports/conformance/harness.h"

namespace weft::test::conformance {
namespace {

constexpr size_t kLargeBytes = size_t{64} << 20;

struct Death {
  const char* what;
  bool destroyed;    // the transport object destroyed, not just closed without a goodbye
  bool midTransfer;  // it dies right after starting a 64 MiB send to rank 0, which reads only then
  bool largePath;    // that send takes the large-message path (else the copying one)
};

// The settings that put a 64 MiB message on the copying path (tcp unstriped, shm through the
// rings, rdma staged), where dying right after posting certainly cuts it off, or on the
// large-message path (striped, single-copy, zero-copy).
Knobs pathKnobs(bool largePath) {
  Knobs knobs;
  if (largePath) {
    knobs.socketsPerPeer = 4;
  } else {
    knobs.shmCrossMemoryMinBytes = 0;
    knobs.rdmaZeroCopyMinBytes = 0;
  }
  return knobs;
}

std::vector<size_t> twoMessages(int, int) {
  return {0, 5000};
}

// After the failure elsewhere, two survivors exchange a message each way: "" when that works.
std::string talkTo(Transport& transport, int rank, int peer) {
  Traffic after(rank);
  addExchange(after, rank, {peer}, twoMessages, 1);
  after.postAll(transport);
  const std::string driven = problemsOf(drive(transport, after.xfers()));
  return driven + after.verify();
}

}  // namespace

TEMPLATE_TEST_CASE("a peer that vanishes fails the transfers with it and progress names it",
                   "[conformance][death]", WEFT_CONFORMANCE_KINDS) {
  const Kind kind = TestType::kind;
  const Death death =
      GENERATE(Death{"close(false) while idle", false, false, false},
               Death{"destroyed while idle", true, false, false},
               Death{"close(false) in the middle of a copied send", false, true, false},
               Death{"destroyed in the middle of a copied send", true, true, false},
               Death{"destroyed in the middle of a large-path send", true, true, true});
  CAPTURE(nameOf(kind), death.what);
  NothingLeftBehind leaks(kind);
  {
    // Rank 2 dies. Rank 0 waits for messages from it (one of them never sent), rank 1 has
    // nothing pending with it; afterwards 0 and 1 still talk.
    Connected set(
        kind, 3, [&](int) { return pathKnobs(death.largePath); }, {}, true);
    Cluster& cluster = set.cluster;
    std::vector<Traffic> traffic = trafficFor(3);
    std::vector<Driven> driven(3);
    std::vector<std::string> survivors(3);
    TimedBarrier posted(3);
    TimedBarrier died(2);  // ranks 2 and 0, for a death in the middle of a transfer
    TimedBarrier survivorsDone(2);
    onRankThreads({0, 1, 2}, [&](int rank) {
      Traffic& mine = traffic[rank];
      if (rank == 2) {
        posted.wait();
        if (death.midTransfer) {
          // One round of progress while rank 0 reads nothing: far less than 64 MiB can leave.
          mine.send(0, kLargeBytes, tagFor(2, 0, 0), 0);
          mine.postAll(cluster.at(2));
          driven[2] = drive(cluster.at(2), mine.xfers(), 0);
        }
        if (death.destroyed) {
          cluster.slot(2).reset();
        } else {
          cluster.at(2).close(false);
        }
        if (death.midTransfer) died.wait();
        return;
      }
      if (rank == 0) {
        if (death.midTransfer) mine.recv(2, kLargeBytes, tagFor(2, 0, 0), 0);
        mine.recv(2, 100, tagFor(2, 0, 1), 1);
        mine.postAll(cluster.at(0));
      }
      posted.wait();
      // Otherwise rank 0 is already waiting when its peer dies.
      if (rank == 0 && death.midTransfer) died.wait();
      Transport& transport = cluster.at(rank);
      driven[rank] = rank == 0 ? drive(transport, mine.xfers()) : awaitFailure(transport);
      survivors[rank] = talkTo(transport, rank, 1 - rank);
      survivorsDone.wait();
      transport.close(true);
    });
    CHECK_FALSE(posted.gaveUp());
    CHECK_FALSE(died.gaveUp());
    CHECK_FALSE(survivorsDone.gaveUp());
    const std::string& dead = cluster.peerName(2);
    INFO("rank 0 progress: " << describe(driven[0].progress)
                             << "rank 1 progress: " << describe(driven[1].progress));
    // Rank 0's transfers with the dead rank all ended; the one never sent failed, naming it.
    CHECK(driven[0].finished);
    CHECK(driven[0].missedWakeUps == 0);
    const Xfer& neverSent = *traffic[0].xfers().back();
    CHECK(neverSent.done);
    CHECK_FALSE(neverSent.status.isOk());
    CHECK(contains(neverSent.status.message(), dead));
    CHECK(contains(driven[0].progress.message(), dead));
    if (death.midTransfer) {
      const Xfer& cut = *traffic[0].xfers().front();
      INFO("the 64 MiB receive: " << describe(cut.status));
      CHECK(cut.done);
      CHECK_FALSE(traffic[2].xfers().front()->done);
      // Only a single-copy receive may still complete: among threads the sender's buffer
      // outlives its transport (a dead process's would not).
      if (!(kind == Kind::kShm && death.largePath)) {
        CHECK_FALSE(cut.status.isOk());
        CHECK(contains(cut.status.message(), dead));
      }
    }
    // Rank 1 had nothing pending with it, and progress() still reported it.
    CHECK(driven[1].finished);
    CHECK(driven[1].missedWakeUps == 0);
    CHECK(contains(driven[1].progress.message(), dead));
    CHECK(survivors[0].empty());
    CHECK(survivors[1].empty());
    INFO(survivors[0] << survivors[1]);
  }
  leaks.check();
}

TEMPLATE_TEST_CASE("a peer that leaves gracefully is no failure to idle peers",
                   "[conformance][death]", WEFT_CONFORMANCE_KINDS) {
  const Kind kind = TestType::kind;
  CAPTURE(nameOf(kind));
  NothingLeftBehind leaks(kind);
  {
    // Rank 2 leaves with a goodbye. Rank 0 is idle and must see no failure; rank 1 still waits
    // for a message from it, which can never come, so that receive fails (and does not hang).
    Connected set(kind, 3, nullptr, {}, true);
    Cluster& cluster = set.cluster;
    Traffic pending(1);
    std::vector<Driven> driven(3);
    std::vector<std::string> survivors(3);
    TimedBarrier posted(3);
    TimedBarrier left(3);
    TimedBarrier survivorsDone(2);
    onRankThreads({0, 1, 2}, [&](int rank) {
      Transport& transport = cluster.at(rank);
      if (rank == 1) {
        pending.recv(2, 100, tagFor(2, 1, 0), 0);
        pending.postAll(transport);
      }
      posted.wait();
      if (rank == 2) {
        transport.close(true);
        left.wait();
        return;
      }
      left.wait();
      // Long enough for the goodbye to arrive and be read.
      driven[rank] = rank == 0 ? idle(transport, 300) : drive(transport, pending.xfers());
      survivors[rank] = talkTo(transport, rank, 1 - rank);
      survivorsDone.wait();
      transport.close(true);
    });
    CHECK_FALSE(posted.gaveUp());
    CHECK_FALSE(left.gaveUp());
    CHECK_FALSE(survivorsDone.gaveUp());
    const std::string& departed = cluster.peerName(2);
    INFO("rank 0 progress: " << describe(driven[0].progress)
                             << "rank 1 progress: " << describe(driven[1].progress));
    CHECK(driven[0].progress.isOk());
    CHECK(driven[1].finished);
    CHECK(driven[1].missedWakeUps == 0);
    const Xfer& neverSent = *pending.xfers()[0];
    CHECK(neverSent.done);
    CHECK_FALSE(neverSent.status.isOk());
    CHECK(contains(neverSent.status.message(), departed));
    INFO(survivors[0] << survivors[1]);
    CHECK(survivors[0].empty());
    CHECK(survivors[1].empty());
  }
  leaks.check();
}

TEMPLATE_TEST_CASE("a failure notice names its culprit to every peer, which fail at once",
                   "[conformance][notice]", WEFT_CONFORMANCE_KINDS) {
  const Kind kind = TestType::kind;
  // Rank 0 failed, blaming rank 2, or after a timeout of its own (no culprit: then rank 0 is
  // where the failure started).
  const int culprit = GENERATE(2, -1);
  const int origin = culprit >= 0 ? culprit : 0;
  CAPTURE(nameOf(kind), culprit);
  NothingLeftBehind leaks(kind);
  {
    Connected set(kind, 3, nullptr, {}, true);
    Cluster& cluster = set.cluster;
    Traffic pending(1);
    std::vector<Driven> driven(3);
    std::vector<int> found(3, -1);
    TimedBarrier posted(3);
    TimedBarrier allDone(3);
    onRankThreads({0, 1, 2}, [&](int rank) {
      Transport& transport = cluster.at(rank);
      if (rank == 1) {
        // Waiting for rank 0, which will never send: the notice must end the wait.
        pending.recv(0, 100, tagFor(0, 1, 0), 0);
        pending.postAll(transport);
      }
      posted.wait();
      if (rank == 0) {
        transport.announceFailure(culprit);
      } else {
        // Rank 2 talks to nobody: it hears of the failure all the same.
        driven[rank] = rank == 1 ? drive(transport, pending.xfers()) : awaitFailure(transport);
        found[rank] = awaitCulprit(transport);
      }
      allDone.wait();
      transport.close(false);
    });
    CHECK_FALSE(posted.gaveUp());
    CHECK_FALSE(allDone.gaveUp());
    const std::string& blamed = cluster.peerName(origin);
    INFO("rank 1 progress: " << describe(driven[1].progress)
                             << "rank 2 progress: " << describe(driven[2].progress));
    CHECK(driven[1].finished);
    CHECK(driven[1].missedWakeUps == 0);
    const Xfer& waited = *pending.xfers()[0];
    CHECK(waited.done);
    CHECK_FALSE(waited.status.isOk());
    CHECK(contains(waited.status.message(), blamed));
    CHECK(contains(driven[1].progress.message(), blamed));
    CHECK(driven[2].finished);
    CHECK(driven[2].missedWakeUps == 0);
    CHECK(contains(driven[2].progress.message(), blamed));
    CHECK(found[1] == origin);
    CHECK(found[2] == origin);
  }
  leaks.check();
}

}  // namespace weft::test::conformance
