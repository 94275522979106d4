// The data path of every transport against the contract of transports/transport.h: messages
// between two ranks match in posting order per direction with the same size and tag, whatever
// their size and whichever internal path they take, and a mismatch is a protocol error, never
// silent corruption.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "transports/conformance/harness.h"

namespace weft::test::conformance {
namespace {

constexpr size_t kLargeBytes = size_t{64} << 20;

// Many messages of mixed sizes from one rank to another: every tenth empty, most small, some
// past every transport's large-message threshold. Both ends derive the same list.
std::vector<size_t> mixedStream(int from, int to) {
  std::mt19937_64 random(static_cast<uint64_t>(from) * 131 + static_cast<uint64_t>(to));
  std::vector<size_t> sizes;
  for (int i = 0; i < 300; ++i) {
    const uint64_t draw = random();
    const int bucket = static_cast<int>(draw % 20);
    size_t limit = 256;
    if (bucket >= 12) limit = 16 << 10;
    if (bucket >= 17) limit = 128 << 10;
    if (bucket == 19) limit = 600 << 10;
    sizes.push_back(i % 10 == 0 ? 0 : 1 + (draw >> 8) % limit);
  }
  return sizes;
}

Knobs twoSockets(int) {
  Knobs knobs;
  knobs.socketsPerPeer = 2;  // tcp stripes large messages; the others ignore it
  return knobs;
}

}  // namespace

TEMPLATE_TEST_CASE(
    "messages between each pair arrive in posting order with their sizes, tags and "
    "bytes",
    "[conformance][ordering]", WEFT_CONFORMANCE_KINDS) {
  const Kind kind = TestType::kind;
  const int n = GENERATE(2, 3);
  CAPTURE(nameOf(kind), n);
  NothingLeftBehind leaks(kind);
  {
    Connected set(kind, n, twoSockets);
    Cluster& cluster = set.cluster;
    Exchange round = exchange(cluster, cluster.members(), mixedStream);
    INFO(round.problems());
    CHECK(round.problems().empty());
    closeAll(cluster, cluster.members(), true);
  }
  leaks.check();
}

TEMPLATE_TEST_CASE("64 MiB messages cross both ways at once intact", "[conformance][large]",
                   WEFT_CONFORMANCE_KINDS) {
  const Kind kind = TestType::kind;
  const Variant variant = GENERATE_COPY(from_range(largeVariants(kind)));
  CAPTURE(nameOf(kind), variant.what);
  NothingLeftBehind leaks(kind);
  {
    Connected set(kind, 2, [&](int rank) { return variant.knobsFor(rank); });
    Cluster& cluster = set.cluster;
    // A small message behind the large one must wait its turn, not overtake it.
    Exchange round = exchange(cluster, cluster.members(), [](int, int) {
      return std::vector<size_t>{kLargeBytes, 24};
    });
    INFO(round.problems());
    CHECK(round.problems().empty());
    closeAll(cluster, cluster.members(), true);
  }
  leaks.check();
}

TEMPLATE_TEST_CASE("messages either side of the transport's internal thresholds arrive intact",
                   "[conformance][thresholds]", WEFT_CONFORMANCE_KINDS) {
  const Kind kind = TestType::kind;
  const Variant variant = GENERATE_COPY(from_range(thresholdVariants(kind)));
  CAPTURE(nameOf(kind), variant.what);
  NothingLeftBehind leaks(kind);
  {
    Connected set(kind, 2, [&](int rank) { return variant.knobsFor(rank); });
    Cluster& cluster = set.cluster;
    Exchange round = exchange(cluster, cluster.members(), [&](int from, int) {
      std::vector<size_t> sizes{0, 1};
      sizes.insert(sizes.end(), variant.sizes.begin(), variant.sizes.end());
      // Each direction in another order, so that the two paths interleave differently.
      if (from == 1) std::reverse(sizes.begin(), sizes.end());
      return sizes;
    });
    INFO(round.problems());
    CHECK(round.problems().empty());
    closeAll(cluster, cluster.members(), true);
  }
  leaks.check();
}

TEMPLATE_TEST_CASE("a transport serving some of the ranks connects only those, by their ranks",
                   "[conformance][ordering]", WEFT_CONFORMANCE_KINDS) {
  // As when the wiring sends rank 1 elsewhere: ranks 0, 2 and 3 share this transport, and
  // rank 1 published nothing for it.
  const Kind kind = TestType::kind;
  CAPTURE(nameOf(kind));
  NothingLeftBehind leaks(kind);
  {
    const std::vector<int> members{0, 2, 3};
    Connected set(kind, 4, twoSockets, members);
    Cluster& cluster = set.cluster;
    CHECK(cluster.address(1).empty());
    Exchange round = exchange(cluster, members, mixedStream);
    INFO(round.problems());
    CHECK(round.problems().empty());
    closeAll(cluster, members, true);
  }
  leaks.check();
}

namespace {

struct Mismatch {
  std::string what;
  size_t sendBytes;
  size_t recvBytes;
  bool sameTag;
};

// Both ends on the small path, on the large one, and on different ones.
std::vector<Mismatch> mismatches(size_t large) {
  return {
      {"a smaller receive", 100, 50, true},
      {"a larger receive", 50, 100, true},
      {"a zero-byte send met by a 1-byte receive", 0, 1, true},
      {"another tag, same size", 100, 100, false},
      {"both large, sizes differ", large + 8192, large + 4096, true},
      {"a large send met by a small receive", large, 100, true},
      {"a small send met by a large receive", 100, large, true},
      {"both large, another tag", large, large, false},
      // More than the socket buffers hold: the sender waits for its receiver, whose failure
      // notice must reach it.
      {"a 16 MiB send met by a receive 1 byte short", 16 << 20, (16 << 20) - 1, true},
  };
}

}  // namespace

TEMPLATE_TEST_CASE("a receive whose size or tag differs from its send fails as a message mismatch",
                   "[conformance][mismatch]", WEFT_CONFORMANCE_KINDS) {
  const Kind kind = TestType::kind;
  const Mismatch mismatch =
      GENERATE_COPY(from_range(mismatches(largeMessageBytes(kind, twoSockets(0)))));
  CAPTURE(nameOf(kind), mismatch.what, mismatch.sendBytes, mismatch.recvBytes);
  NothingLeftBehind leaks(kind);
  {
    Connected set(kind, 2, twoSockets);
    Cluster& cluster = set.cluster;
    std::vector<Traffic> traffic = trafficFor(2);
    std::vector<Driven> driven(2);
    TimedBarrier bothDone(2);
    onRankThreads({0, 1}, [&](int rank) {
      Transport& transport = cluster.at(rank);
      if (rank == 0) {
        traffic[0].send(1, mismatch.sendBytes, tagFor(0, 1, 0), 0);
      } else {
        traffic[1].recv(0, mismatch.recvBytes, tagFor(0, 1, mismatch.sameTag ? 0 : 1), 0);
      }
      traffic[rank].postAll(transport);
      // Whoever finds the mismatch fails and tells its peer, as the fabric does; the peer's
      // transfer then fails too instead of waiting for its deadline.
      driven[rank] = drive(transport, traffic[rank].xfers(), kDriveMs, OnFailure::kAnnounce);
      // Nobody leaves before both have seen the outcome: a hang-up would hide the mismatch, and
      // would end the peer's wait where the failure notice did not.
      bothDone.wait();
      transport.close(false);
    });
    const Xfer& send = *traffic[0].xfers()[0];
    const Xfer& recv = *traffic[1].xfers()[0];
    INFO("send: " << describe(send.status) << "receive: " << describe(recv.status)
                  << "sender's progress: " << describe(driven[0].progress)
                  << "receiver's progress: " << describe(driven[1].progress));
    CHECK_FALSE(bothDone.gaveUp());
    CHECK(driven[0].finished);
    CHECK(driven[1].finished);
    CHECK(recv.done);
    CHECK_FALSE(recv.status.isOk());
    // The receiver finds it when the message arrives; a zero-copy sender may find it first,
    // from the buffer its receiver announced. Either names the mismatch and the peer.
    const std::string receiverSaw = recv.status.message() + driven[1].progress.message();
    const std::string senderSaw = send.status.message() + driven[0].progress.message();
    const bool receiverNamed =
        contains(receiverSaw, "message mismatch") && contains(receiverSaw, cluster.peerName(0));
    const bool senderNamed =
        contains(senderSaw, "message mismatch") && contains(senderSaw, cluster.peerName(1));
    CHECK((receiverNamed || senderNamed));
  }
  leaks.check();
}

}  // namespace weft::test::conformance
