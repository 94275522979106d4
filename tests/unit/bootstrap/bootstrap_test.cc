#include "bootstrap/bootstrap.h"

#include <sys/socket.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/rendezvous_wire.h"
#include "bootstrap/root_server.h"
#include "bootstrap/unique_id.h"
#include "net/auth.h"
#include "net/socket.h"
#include "net/wire.h"
#include "scoped_env.h"
#include "unit/bootstrap/rendezvous_by_hand.h"
#include "unit/strays.h"

using weft::Deadline;
using weft::Status;
using weft::bootstrap::Bootstrap;
using weft::bootstrap::UniqueIdContents;
using weft::test::joinByHand;

using weft::test::freshId;

namespace {

// Every test here listens and connects on loopback only.
struct LoopbackOnly : weft::test::ScopedEnv {
  LoopbackOnly() : ScopedEnv("WEFT_SOCKET_IFNAME", "lo") {}
};

std::string descriptionOf(int rank) {
  return "rank-" + std::to_string(rank) + std::string(rank * 100, 'd');
}

struct RankResult {
  Status status;
  std::unique_ptr<Bootstrap> bootstrap;
};

// Runs Bootstrap::create for the given ranks on threads and returns each rank's outcome.
std::vector<RankResult> createRanks(const UniqueIdContents& id, int nranks, int deadlineMs = 5000) {
  std::vector<RankResult> results(static_cast<size_t>(nranks));
  std::vector<std::thread> threads;
  for (int r = 0; r < nranks; ++r) {
    threads.emplace_back([&, r] {
      results[r].status = Bootstrap::create(id, r, nranks, descriptionOf(r),
                                            Deadline::after(deadlineMs), &results[r].bootstrap);
    });
  }
  for (auto& t : threads) t.join();
  return results;
}

template <typename Fn>
std::vector<Status> onEveryRank(std::vector<RankResult>& ranks, Fn fn) {
  std::vector<Status> statuses(ranks.size());
  std::vector<std::thread> threads;
  for (size_t r = 0; r < ranks.size(); ++r) {
    threads.emplace_back([&, r] { statuses[r] = fn(*ranks[r].bootstrap, static_cast<int>(r)); });
  }
  for (auto& t : threads) t.join();
  return statuses;
}

void requireAllOk(const std::vector<RankResult>& results) {
  for (size_t r = 0; r < results.size(); ++r) {
    INFO("rank " << r << ": " << results[r].status.message());
    REQUIRE(results[r].status.isOk());
  }
}

bool contains(const Status& status, const std::string& text) {
  return status.message().find(text) != std::string::npos;
}

}  // namespace

TEST_CASE("bootstrap of 1..8 ranks delivers descriptions, allgather and barrier", "[bootstrap]") {
  LoopbackOnly loopback;
  for (int nranks = 1; nranks <= 8; ++nranks) {
    INFO("nranks " << nranks);
    UniqueIdContents id = freshId();
    std::vector<RankResult> ranks = createRanks(id, nranks);
    requireAllOk(ranks);
    for (int r = 0; r < nranks; ++r) {
      const Bootstrap& b = *ranks[r].bootstrap;
      CHECK(b.rank() == r);
      CHECK(b.nranks() == nranks);
      CHECK(b.commId() != 0);
      CHECK(b.commId() == ranks[0].bootstrap->commId());
      CHECK(b.secret() == id.secret);
      REQUIRE(b.descriptions().size() == static_cast<size_t>(nranks));
      for (int q = 0; q < nranks; ++q) CHECK(b.descriptions()[q] == descriptionOf(q));
    }

    std::vector<std::vector<uint32_t>> gathered(nranks, std::vector<uint32_t>(3 * nranks));
    auto statuses = onEveryRank(ranks, [&](Bootstrap& b, int r) {
      uint32_t mine[3] = {uint32_t(r), uint32_t(r * r), 0xC0FFEE};
      return b.allgather(mine, sizeof(mine), gathered[r].data(), Deadline::after(5000));
    });
    for (int r = 0; r < nranks; ++r) {
      INFO(statuses[r].message());
      CHECK(statuses[r].isOk());
      for (int q = 0; q < nranks; ++q) {
        CHECK(gathered[r][3 * q] == uint32_t(q));
        CHECK(gathered[r][3 * q + 1] == uint32_t(q * q));
        CHECK(gathered[r][3 * q + 2] == 0xC0FFEEu);
      }
    }
    for (int round = 0; round < 3; ++round) {
      statuses =
          onEveryRank(ranks, [](Bootstrap& b, int) { return b.barrier(Deadline::after(5000)); });
      for (const Status& s : statuses) CHECK(s.isOk());
    }
  }
}

TEST_CASE("bootstrap allgather moves blocks larger than the socket buffers", "[bootstrap]") {
  LoopbackOnly loopback;
  const int nranks = 3;
  const size_t bytes = 4 << 20;
  std::vector<RankResult> ranks = createRanks(freshId(), nranks);
  requireAllOk(ranks);
  std::vector<std::vector<uint8_t>> all(nranks, std::vector<uint8_t>(nranks * bytes));
  auto statuses = onEveryRank(ranks, [&](Bootstrap& b, int r) {
    std::vector<uint8_t> mine(bytes, static_cast<uint8_t>(r + 1));
    return b.allgather(mine.data(), bytes, all[r].data(), Deadline::after(10000));
  });
  for (int r = 0; r < nranks; ++r) {
    CHECK(statuses[r].isOk());
    for (int q = 0; q < nranks; ++q) CHECK(all[r][q * bytes + bytes / 2] == q + 1);
  }
}

TEST_CASE("the root refuses a wrong secret and garbage while real ranks complete",
          "[bootstrap][root]") {
  LoopbackOnly loopback;
  UniqueIdContents id = freshId();

  UniqueIdContents impostor = id;
  impostor.secret[0] ^= 1;
  std::unique_ptr<Bootstrap> none;
  Status refused = Bootstrap::create(impostor, 0, 2, "impostor", Deadline::after(3000), &none);
  CHECK(refused.code() == weftInvalidUsage);
  CHECK(contains(refused, "wrong secret"));

  // Garbage, a truncated hello and a silent connection; each is dropped on its own.
  weft::net::Socket garbage = weft::test::sendGarbage(id.root, 4096);
  weft::test::truncatedHello(id.root, 7);
  std::vector<weft::net::Socket> silent = weft::test::silentStrays(id.root, 1);
  uint8_t byte;
  Status dropped = weft::net::recvAll(garbage.fd(), &byte, 1, Deadline::after(2000));
  CHECK(dropped.code() == weftRemoteError);  // the root hung up on it

  std::vector<RankResult> ranks = createRanks(id, 2);
  requireAllOk(ranks);
  CHECK(ranks[1].bootstrap->descriptions()[0] == descriptionOf(0));
}

TEST_CASE("port scans and a one-byte-at-a-time sender do not stall the rendezvous",
          "[bootstrap][root]") {
  LoopbackOnly loopback;
  UniqueIdContents id = freshId();
  weft::test::portScan(id.root, 32);
  // A slow sender dribbles a plausible hello for the whole rendezvous (5 s at a byte per 100 ms).
  weft::test::Dribbler dribbler(id.root, std::string(50, 'W'), 100);
  auto start = std::chrono::steady_clock::now();
  std::vector<RankResult> ranks = createRanks(id, 4);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  requireAllOk(ranks);
  // Served alongside the slow connection, not after it (it would take 5 s).
  CHECK(seconds < 3.0);
}

TEST_CASE("an authenticated join with a bad header is dropped alone", "[bootstrap][root]") {
  LoopbackOnly loopback;
  UniqueIdContents id = freshId();
  weft::net::Socket socket;
  REQUIRE(weft::net::connectTo(id.root, Deadline::after(2000), &socket).isOk());
  REQUIRE(weft::net::authenticateClient(socket.fd(), id.secret, weft::net::Purpose::kRendezvous, 0,
                                        Deadline::after(2000))
              .isOk());
  weft::bootstrap::rendezvous::JoinHeader join;
  join.rank = 0;
  join.nranks = 2;
  join.ring = weft::net::SocketAddress::any(AF_INET, 1);
  join.protocol = 1;  // a version-1 join put its description's length here: refused, not misread
  uint8_t header[weft::bootstrap::rendezvous::kJoinHeaderBytes];
  weft::bootstrap::rendezvous::encodeJoinHeader(join, header);
  REQUIRE(weft::net::sendAll(socket.fd(), header, sizeof(header), Deadline::after(1000)).isOk());
  uint8_t byte;
  CHECK(weft::net::recvAll(socket.fd(), &byte, 1, Deadline::after(2000)).code() == weftRemoteError);

  std::vector<RankResult> ranks = createRanks(id, 2);
  requireAllOk(ranks);
}

TEST_CASE("a second join for a taken rank fails alone", "[bootstrap][root]") {
  LoopbackOnly loopback;
  UniqueIdContents id = freshId();
  // Two threads both claim rank 0; whichever joins second is refused at once, and the other
  // completes when rank 1 arrives.
  Status claims[2];
  std::unique_ptr<Bootstrap> boots[2];
  std::atomic<int> returned{0};
  std::vector<std::thread> claimants;
  for (int i = 0; i < 2; ++i) {
    claimants.emplace_back([&, i] {
      claims[i] = Bootstrap::create(id, 0, 2, descriptionOf(0), Deadline::after(5000), &boots[i]);
      ++returned;
    });
  }
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(4);
  while (returned.load() == 0 && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  std::unique_ptr<Bootstrap> rank1;
  Status rank1Status = Bootstrap::create(id, 1, 2, descriptionOf(1), Deadline::after(5000), &rank1);
  for (auto& t : claimants) t.join();
  INFO(claims[0].message() << " / " << claims[1].message() << " / " << rank1Status.message());
  CHECK(rank1Status.isOk());
  int refused = claims[0].isOk() ? 1 : 0;
  CHECK(claims[1 - refused].isOk());
  CHECK(claims[refused].code() == weftInvalidUsage);
  CHECK(contains(claims[refused], "rank 0 has already joined"));
}

TEST_CASE("ranks that disagree on nranks all fail naming the disagreement", "[bootstrap][root]") {
  LoopbackOnly loopback;
  UniqueIdContents id = freshId();
  Status statuses[2];
  std::unique_ptr<Bootstrap> boots[2];
  std::thread a(
      [&] { statuses[0] = Bootstrap::create(id, 0, 2, "a", Deadline::after(5000), &boots[0]); });
  std::thread b(
      [&] { statuses[1] = Bootstrap::create(id, 1, 3, "b", Deadline::after(5000), &boots[1]); });
  a.join();
  b.join();
  for (const Status& status : statuses) {
    INFO(status.message());
    CHECK(status.code() == weftInvalidUsage);
    CHECK(contains(status, "disagree on nranks"));
  }
}

TEST_CASE("a rank that leaves the rendezvous after joining fails the round at once, naming it",
          "[bootstrap][root]") {
  LoopbackOnly loopback;
  UniqueIdContents id = freshId();
  weft::net::Socket leaver = joinByHand(id, 1, 3, weft::net::SocketAddress::any(AF_INET, 1));
  Status statuses[2];
  std::unique_ptr<Bootstrap> boots[2];
  double seconds[2] = {0, 0};
  auto start = std::chrono::steady_clock::now();
  auto join = [&](int slot, int rank) {
    statuses[slot] =
        Bootstrap::create(id, rank, 3, descriptionOf(rank), Deadline::after(20000), &boots[slot]);
    seconds[slot] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  std::thread rank0(join, 0, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  leaver.close();  // what the kernel does for a process killed while it waits
  rank0.join();
  join(1, 2);  // a rank that arrives after the failure learns of it at once
  for (int slot = 0; slot < 2; ++slot) {
    INFO(statuses[slot].message());
    CHECK(statuses[slot].code() == weftRemoteError);
    CHECK(contains(statuses[slot], "rank 1 (127.0.0.1:"));
    CHECK(contains(statuses[slot], "left the rendezvous after joining"));
    // The grace period (1 s), not the ranks' 20 s deadline.
    CHECK(seconds[slot] < 3.0);
  }
}

TEST_CASE("a rank that joins again within the grace period keeps the round", "[bootstrap][root]") {
  LoopbackOnly loopback;
  UniqueIdContents id = freshId();
  weft::net::Socket first = joinByHand(id, 1, 2, weft::net::SocketAddress::any(AF_INET, 1));
  first.close();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::vector<RankResult> ranks = createRanks(id, 2);  // rank 1 restarted, and rank 0
  requireAllOk(ranks);
}

TEST_CASE("a rank that never joins yields weftTimeout", "[bootstrap][root]") {
  LoopbackOnly loopback;
  SECTION("the root's deadline names the missing rank") {
    UniqueIdContents id;
    REQUIRE(weft::net::randomBytes(id.secret.data(), id.secret.size()).isOk());
    weft::net::SocketAddress address;
    REQUIRE(weft::net::SocketAddress::parse("127.0.0.1:0", &address).isOk());
    std::shared_ptr<weft::bootstrap::RootServer> server;
    REQUIRE(weft::bootstrap::RootServer::start(address, id.secret, Deadline::after(300), &server)
                .isOk());
    id.root = server->address();
    std::unique_ptr<Bootstrap> boot;
    Status status = Bootstrap::create(id, 0, 3, "lonely", Deadline::after(5000), &boot);
    CHECK(status.code() == weftTimeout);
    CHECK(contains(status, "ranks 1, 2 never joined"));
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (!server->done() && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    CHECK(server->done());
    server->stop();
  }
  SECTION("the rank's own deadline") {
    UniqueIdContents id;
    REQUIRE(weft::net::randomBytes(id.secret.data(), id.secret.size()).isOk());
    weft::net::SocketAddress address;
    REQUIRE(weft::net::SocketAddress::parse("127.0.0.1:0", &address).isOk());
    std::shared_ptr<weft::bootstrap::RootServer> server;
    REQUIRE(weft::bootstrap::RootServer::start(address, id.secret, Deadline::after(60000), &server)
                .isOk());
    id.root = server->address();
    std::unique_ptr<Bootstrap> boot;
    Status status = Bootstrap::create(id, 1, 2, "early", Deadline::after(200), &boot);
    CHECK(status.code() == weftTimeout);
    server->stop();  // must return promptly although the round is open
    CHECK(server->done());
  }
  SECTION("no root at all") {
    UniqueIdContents id;
    weft::net::Socket probe;
    weft::net::SocketAddress address;
    REQUIRE(weft::net::SocketAddress::parse("127.0.0.1:0", &address).isOk());
    REQUIRE(weft::net::listenOn(address, 1, &probe, &id.root).isOk());
    probe.close();
    std::unique_ptr<Bootstrap> boot;
    Status status = Bootstrap::create(id, 0, 2, "", Deadline::after(200), &boot);
    CHECK(status.code() == weftTimeout);
    CHECK(contains(status, id.root.toString()));
  }
}

TEST_CASE("bootstrap failures after the ring is up name the rank", "[bootstrap]") {
  LoopbackOnly loopback;
  std::vector<RankResult> ranks = createRanks(freshId(), 2);
  requireAllOk(ranks);
  SECTION("a neighbour closes") {
    ranks[1].bootstrap->close();
    uint32_t mine = 7, all[2];
    Status status = ranks[0].bootstrap->allgather(&mine, sizeof(mine), all, Deadline::after(2000));
    CHECK(status.code() == weftRemoteError);
    CHECK(contains(status, "rank 1 closed the connection"));
    CHECK(ranks[1].bootstrap->barrier(Deadline::after(100)).code() == weftInvalidUsage);
  }
  SECTION("sizes differ") {
    auto statuses = onEveryRank(ranks, [](Bootstrap& b, int r) {
      uint8_t mine[8] = {}, all[16];
      return b.allgather(mine, r == 0 ? 4 : 8, all, Deadline::after(2000));
    });
    for (const Status& status : statuses) {
      INFO(status.message());
      CHECK(status.code() == weftInvalidUsage);
      CHECK(contains(status, "bytes per rank"));
    }
  }
  SECTION("a neighbour stays silent") {
    uint32_t mine = 7, all[2];
    Status status = ranks[0].bootstrap->allgather(&mine, sizeof(mine), all, Deadline::after(100));
    CHECK(status.code() == weftTimeout);
    CHECK(contains(status, "rank 1"));
  }
}

TEST_CASE("bootstrap works over IPv6 loopback", "[bootstrap]") {
  weft::net::SocketAddress v6;
  REQUIRE(weft::net::SocketAddress::parse("[::1]:0", &v6).isOk());
  weft::net::Socket probe;
  if (!weft::net::listenOn(v6, 1, &probe, nullptr).isOk()) {
    WARN("no IPv6 loopback here; skipping");
    return;
  }
  probe.close();
  LoopbackOnly loopback;
  UniqueIdContents id;
  std::vector<RankResult> ranks;
  {
    weft::test::ScopedEnv family("WEFT_SOCKET_FAMILY", "AF_INET6");
    id = freshId();
    ranks = createRanks(id, 3);
  }
  CHECK(id.root.family() == AF_INET6);
  requireAllOk(ranks);
  CHECK(ranks[2].bootstrap->descriptions()[1] == descriptionOf(1));
}

TEST_CASE("strays on the ring listener are dropped", "[bootstrap]") {
  namespace rv = weft::bootstrap::rendezvous;
  using weft::net::Purpose;
  LoopbackOnly loopback;
  UniqueIdContents id = freshId();
  // This thread plays rank 0 by hand, so that it learns rank 1's ring address and can send it
  // strays before the real connection.
  weft::net::SocketAddress local;
  REQUIRE(weft::net::SocketAddress::parse("127.0.0.1:0", &local).isOk());
  weft::net::Socket listener;
  weft::net::SocketAddress ringAddress;
  REQUIRE(weft::net::listenOn(local, 8, &listener, &ringAddress).isOk());

  Status rank1Status;
  std::unique_ptr<Bootstrap> rank1;
  std::thread rank1Thread(
      [&] { rank1Status = Bootstrap::create(id, 1, 2, "one", Deadline::after(8000), &rank1); });

  Deadline deadline = Deadline::after(5000);
  weft::net::Socket root = joinByHand(id, 0, 2, ringAddress);
  rv::Assignment assignment;
  REQUIRE(rv::readReply(root.fd(), 2, deadline, &assignment).isOk());
  const weft::net::SocketAddress& rank1Address = assignment.next;

  // Stray 1: a wrong secret. Stray 2: authenticated but claiming another rank. Stray 3: garbage.
  weft::net::Secret wrong = id.secret;
  wrong[5] ^= 1;
  weft::net::Socket stray1, stray2, stray3;
  REQUIRE(weft::net::connectTo(rank1Address, deadline, &stray1).isOk());
  CHECK(weft::net::authenticateClient(stray1.fd(), wrong, Purpose::kBootstrap, assignment.commId,
                                      deadline)
            .code() == weftInvalidUsage);
  stray1.close();
  REQUIRE(weft::net::connectTo(rank1Address, deadline, &stray2).isOk());
  REQUIRE(weft::net::authenticateClient(stray2.fd(), id.secret, Purpose::kBootstrap,
                                        assignment.commId, deadline)
              .isOk());
  uint8_t rankBytes[4];
  weft::net::wire::putU32(rankBytes, 5);
  REQUIRE(weft::net::sendAll(stray2.fd(), rankBytes, 4, deadline).isOk());
  REQUIRE(weft::net::connectTo(rank1Address, deadline, &stray3).isOk());
  std::vector<uint8_t> junk(64, 0x33);
  REQUIRE(weft::net::sendAll(stray3.fd(), junk.data(), junk.size(), deadline).isOk());
  // Strays 4 and 5: silent; served alongside the real connection, not 5 s each before it.
  std::vector<weft::net::Socket> silent = weft::test::silentStrays(rank1Address, 2);
  auto start = std::chrono::steady_clock::now();

  // The real rank 0 connection, then rank 1's connection to us.
  weft::net::Socket next;
  REQUIRE(weft::net::connectTo(rank1Address, deadline, &next).isOk());
  REQUIRE(weft::net::authenticateClient(next.fd(), id.secret, Purpose::kBootstrap,
                                        assignment.commId, deadline)
              .isOk());
  weft::net::wire::putU32(rankBytes, 0);
  REQUIRE(weft::net::sendAll(next.fd(), rankBytes, 4, deadline).isOk());
  weft::net::Socket prev;
  REQUIRE(weft::net::acceptOne(listener, deadline, &prev, nullptr).isOk());
  REQUIRE(weft::net::authenticateServer(prev.fd(), id.secret, Purpose::kBootstrap,
                                        assignment.commId, deadline)
              .isOk());
  REQUIRE(weft::net::recvAll(prev.fd(), rankBytes, 4, deadline).isOk());
  CHECK(weft::net::wire::getU32(rankBytes) == 1);
  // The descriptions then go around the ring.
  weft::test::sendDescriptionFrame(next.fd(), "zero", 4);
  CHECK(weft::test::readDescriptionFrame(prev.fd()) == "one");
  rank1Thread.join();
  INFO(rank1Status.message());
  CHECK(rank1Status.isOk());
  if (rank1) CHECK(rank1->descriptions()[0] == "zero");
  CHECK(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < 3.0);
}

TEST_CASE("Bootstrap::create checks its arguments", "[bootstrap]") {
  UniqueIdContents id;
  std::unique_ptr<Bootstrap> boot;
  CHECK(Bootstrap::create(id, 0, 0, "", Deadline::after(100), &boot).code() == weftInvalidArgument);
  CHECK(Bootstrap::create(id, 2, 2, "", Deadline::after(100), &boot).code() == weftInvalidArgument);
  CHECK(Bootstrap::create(id, -1, 2, "", Deadline::after(100), &boot).code() ==
        weftInvalidArgument);
  std::string huge(weft::bootstrap::rendezvous::kMaxDescriptionBytes + 1, 'x');
  Status status = Bootstrap::create(id, 0, 1, huge, Deadline::after(100), &boot);
  CHECK(status.code() == weftInvalidArgument);
  CHECK(contains(status, "description"));
}
