// Fault injection through weft_fake_verbs_control and WEFT_FAKE_VERBS_FAULTS, and ranks as
// threads using the fake at once.
#include <arpa/inet.h>

#include <catch2/catch.hpp>

#include <cerrno>
#include <memory>
#include <thread>

#include "fake_verbs_test_support.h"

namespace weft::fake_verbs::test {
namespace {

using namespace std::chrono_literals;
using weft::test::ScopedEnv;

struct Pair {
  Endpoint a;
  Endpoint b;
};

}  // namespace

TEST_CASE_METHOD(FakeVerbsTest, "control refuses what it does not know", "[rdma]") {
  const Verbs& v = verbs();
  CHECK(v.control("reset") == 0);
  CHECK(v.control("lose_completion 3") == 0);
  CHECK(v.control("delay_us 0") == 0);
  CHECK(v.control("kill_context 9") == 0);
  CHECK(v.control("") == -1);
  CHECK(v.control("explode") == -1);
  CHECK(v.control("lose_completion") == -1);
  CHECK(v.control("lose_completion x") == -1);
  CHECK(v.control("lose_completion 0") == -1);  // 1 is the next one
  CHECK(v.control("fail_reg_mr 1 2") == -1);
  CHECK(v.control(nullptr) == -1);
}

TEST_CASE_METHOD(FakeVerbsTest, "lose_completion drops one completion, the data still lands",
                 "[rdma]") {
  {
    Pair pair;
    REQUIRE(pair.a.ok());
    REQUIRE(pair.b.ok());
    REQUIRE(connectPair(pair.a, pair.b) == 0);
    REQUIRE(verbs().control("lose_completion 2") == 0);
    for (int i = 0; i < 3; ++i) {
      pair.a.buffer[i] = static_cast<unsigned char>(0x60 + i);
      REQUIRE(postWrite(pair.a, i, i, 1, pair.b.address(i), pair.b.mr->rkey) == 0);
    }
    const std::vector<ibv_wc> done = pollFor(pair.a.cq, 3, 300ms);
    REQUIRE(done.size() == 2);
    CHECK(done[0].wr_id == 0);
    CHECK(done[1].wr_id == 2);
    CHECK(pair.b.buffer[1] == 0x61);
  }
  CHECK(verbs().liveObjects() == 0);
}

TEST_CASE_METHOD(FakeVerbsTest, "fail_reg_mr and fail_create_qp fail the N-th next call",
                 "[rdma]") {
  const Verbs& v = verbs();
  {
    Endpoint endpoint;
    REQUIRE(endpoint.ok());
    std::vector<unsigned char> memory(256);
    REQUIRE(v.control("fail_reg_mr 2") == 0);
    ibv_mr* first = v.regMr(endpoint.pd, memory.data(), 128, IBV_ACCESS_LOCAL_WRITE);
    errno = 0;
    ibv_mr* second = v.regMr(endpoint.pd, memory.data(), 128, IBV_ACCESS_LOCAL_WRITE);
    CHECK(errno == ENOMEM);
    ibv_mr* third = v.regMr(endpoint.pd, memory.data(), 128, IBV_ACCESS_LOCAL_WRITE);
    CHECK(first != nullptr);
    CHECK(second == nullptr);
    CHECK(third != nullptr);
    if (first) v.deregMr(first);
    if (third) v.deregMr(third);

    REQUIRE(v.control("fail_create_qp 1") == 0);
    ibv_qp_init_attr init{};
    init.send_cq = endpoint.cq;
    init.recv_cq = endpoint.cq;
    init.cap = {4, 4, 1, 1, 0};
    init.qp_type = IBV_QPT_RC;
    errno = 0;
    CHECK(v.createQp(endpoint.pd, &init) == nullptr);
    CHECK(errno == ENOMEM);
    ibv_qp* qp = v.createQp(endpoint.pd, &init);
    CHECK(qp != nullptr);
    if (qp) v.destroyQp(qp);

    REQUIRE(v.control("fail_reg_mr 1") == 0);
    REQUIRE(v.control("reset") == 0);  // disarms it
    ibv_mr* afterReset = v.regMr(endpoint.pd, memory.data(), 128, IBV_ACCESS_LOCAL_WRITE);
    CHECK(afterReset != nullptr);
    if (afterReset) v.deregMr(afterReset);
  }
  CHECK(v.liveObjects() == 0);
}

TEST_CASE_METHOD(FakeVerbsTest, "kill_context: the dead side stops answering and completing",
                 "[rdma]") {
  {
    bool killEarly = false;
    SECTION("armed before the context is opened") {
      killEarly = true;
    }
    SECTION("issued while the context is open") {
      killEarly = false;
    }
    if (killEarly) REQUIRE(verbs().control("kill_context 1") == 0);
    Pair pair;  // contexts 0 (a) and 1 (b)
    REQUIRE(pair.a.ok());
    REQUIRE(pair.b.ok());
    PathOptions path;
    path.timeout = 12;  // 16.8 ms per attempt
    path.retryCnt = 2;  // 50 ms in all
    REQUIRE(connectPair(pair.a, pair.b, path, path) == 0);
    if (!killEarly) {
      // B has a completion waiting when it dies: its CQ must not return it.
      REQUIRE(postEmptyRecv(pair.a, 99) == 0);
      REQUIRE(postWrite(pair.b, 21, 0, 0, 0, 0, 1u) == 0);
      REQUIRE(pollFor(pair.a.cq, 1).size() == 1);
      REQUIRE(verbs().control("kill_context 1") == 0);
    }
    REQUIRE(postEmptyRecv(pair.b, 1) == 0);
    REQUIRE(postEmptyRecv(pair.a, 2) == 0);
    const auto start = std::chrono::steady_clock::now();
    pair.a.buffer[0] = 1;
    REQUIRE(postWrite(pair.a, 10, 0, 1, pair.b.address(), pair.b.mr->rkey, 7u) == 0);
    pair.b.buffer[8] = 2;
    REQUIRE(postWrite(pair.b, 20, 8, 1, pair.a.address(8), pair.a.mr->rkey, 8u) == 0);
    const std::vector<ibv_wc> atA = pollFor(pair.a.cq, 2, 1s);
    const auto elapsed = std::chrono::steady_clock::now() - start;
    // A's write times out; A's QP then flushes its receive. Nothing of B's arrives.
    REQUIRE(atA.size() == 2);
    CHECK(atA[0].wr_id == 10);
    CHECK(atA[0].status == IBV_WC_RETRY_EXC_ERR);
    CHECK(atA[1].wr_id == 2);
    CHECK(atA[1].status == IBV_WC_WR_FLUSH_ERR);
    CHECK(elapsed >= 40ms);
    CHECK(pair.a.buffer[8] == 0);
    CHECK(countArrivals(pair.b.cq, 50ms) == 0);
  }
  CHECK(verbs().liveObjects() == 0);
}

TEST_CASE_METHOD(FakeVerbsTest, "delay_us and WEFT_FAKE_VERBS_DELAY_US hold completions back",
                 "[rdma]") {
  std::optional<ScopedEnv> delay;
  SECTION("the command") {}
  SECTION("the environment, read at open") {
    delay.emplace("WEFT_FAKE_VERBS_DELAY_US", "40000");
  }
  {
    Pair pair;
    REQUIRE(pair.a.ok());
    REQUIRE(pair.b.ok());
    REQUIRE(connectPair(pair.a, pair.b) == 0);
    if (!delay) REQUIRE(verbs().control("delay_us 40000") == 0);
    const auto start = std::chrono::steady_clock::now();
    REQUIRE(postWrite(pair.a, 1, 0, 8, pair.b.address(), pair.b.mr->rkey) == 0);
    REQUIRE(pollFor(pair.a.cq, 1).size() == 1);
    CHECK(std::chrono::steady_clock::now() - start >= 35ms);
  }
  CHECK(verbs().liveObjects() == 0);
}

TEST_CASE_METHOD(FakeVerbsTest, "WEFT_FAKE_VERBS_FAULTS arms faults at the first open", "[rdma]") {
  ScopedEnv faults("WEFT_FAKE_VERBS_FAULTS", "fail_create_qp 2; nonsense 1;");
  REQUIRE(verbs().control("reset") == 0);  // the variable is read at the next open
  {
    Endpoint first;
    Endpoint second;
    CHECK(first.ok());
    REQUIRE_FALSE(second.ok());
    CHECK(std::string(second.error) == "ibv_create_qp");
    Endpoint third;  // the variable is not read again
    CHECK(third.ok());
  }
  CHECK(verbs().liveObjects() == 0);
}

TEST_CASE_METHOD(FakeVerbsTest, "ranks as threads build, use and tear down verbs at once",
                 "[rdma]") {
  constexpr int kRanks = 4;
  constexpr int kRounds = 8;
  std::vector<std::unique_ptr<Endpoint>> endpoints(kRanks);
  {
    std::vector<std::thread> builders;
    for (int rank = 0; rank < kRanks; ++rank) {
      builders.emplace_back([&endpoints, rank] { endpoints[rank] = std::make_unique<Endpoint>(); });
    }
    for (std::thread& builder : builders) builder.join();
  }
  for (const auto& endpoint : endpoints) REQUIRE(endpoint->ok());
  // Ranks 0-1 and 2-3 are peers; each rank writes kRounds immediates to its peer.
  for (int rank = 0; rank < kRanks; rank += 2) {
    REQUIRE(connectPair(*endpoints[rank], *endpoints[rank + 1]) == 0);
  }
  std::vector<int> failures(kRanks, 0);
  std::vector<std::vector<uint32_t>> received(kRanks);
  std::vector<std::thread> ranks;
  for (int rank = 0; rank < kRanks; ++rank) {
    ranks.emplace_back([&, rank] {
      Endpoint& self = *endpoints[rank];
      Endpoint& peer = *endpoints[rank ^ 1];
      for (int i = 0; i < kRounds; ++i) failures[rank] += postEmptyRecv(self, i) != 0;
      for (int i = 0; i < kRounds; ++i) {
        failures[rank] += postWrite(self, i, 0, 256, peer.address(1024 * rank), peer.mr->rkey,
                                    static_cast<uint32_t>(rank * 100 + i)) != 0;
      }
      for (const ibv_wc& wc : pollFor(self.cq, 2 * kRounds)) {
        if (wc.status != IBV_WC_SUCCESS) ++failures[rank];
        if (wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM) received[rank].push_back(ntohl(wc.imm_data));
      }
      endpoints[rank].reset();  // teardown races with the other ranks' traffic
    });
  }
  for (std::thread& rank : ranks) rank.join();
  for (int rank = 0; rank < kRanks; ++rank) {
    INFO("rank " << rank);
    CHECK(failures[rank] == 0);
    REQUIRE(received[rank].size() == kRounds);
    for (int i = 0; i < kRounds; ++i)
      CHECK(received[rank][i] == static_cast<uint32_t>((rank ^ 1) * 100 + i));
  }
  CHECK(verbs().liveObjects() == 0);
}

}  // namespace weft::fake_verbs::test
