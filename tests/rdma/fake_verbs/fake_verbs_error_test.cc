// Error completions, as real RC hardware produces them: receiver-not-ready, protection and
// access errors, unreachable responders, undersized receives, and CQ overrun.
#include <arpa/inet.h>

#include <catch2/catch.hpp>

#include <cerrno>
#include <cstring>

#include "fake_verbs_test_support.h"

namespace weft::fake_verbs::test {
namespace {

using namespace std::chrono_literals;
using weft::test::ScopedEnv;

struct Pair {
  explicit Pair(const EndpointOptions& options = {}) : a(options), b(options) {}
  Endpoint a;
  Endpoint b;
};

int postSend(Endpoint& from, uint64_t wrId, ibv_sge* sge, ibv_wr_opcode opcode, unsigned flags) {
  ibv_send_wr wr{};
  wr.wr_id = wrId;
  wr.sg_list = sge;
  wr.num_sge = 1;
  wr.opcode = opcode;
  wr.send_flags = flags;
  ibv_send_wr* bad = nullptr;
  return ibv_post_send(from.qp, &wr, &bad);
}

}  // namespace

TEST_CASE_METHOD(FakeVerbsTest, "a write-with-immediate waits for a receive, then completes",
                 "[rdma]") {
  {
    Pair pair;
    REQUIRE(pair.a.ok());
    REQUIRE(pair.b.ok());
    REQUIRE(connectPair(pair.a, pair.b) == 0);  // rnr_retry 7: retry forever
    std::memset(pair.a.buffer.data(), 0x77, 32);
    REQUIRE(postWrite(pair.a, 1, 0, 32, pair.b.address(0), pair.b.mr->rkey, 5u) == 0);
    CHECK(countArrivals(pair.a.cq, 30ms) == 0);
    CHECK(countArrivals(pair.b.cq, 5ms) == 0);
    CHECK(pair.b.buffer[0] == 0);  // the message waits whole
    REQUIRE(postEmptyRecv(pair.b, 9) == 0);
    const std::vector<ibv_wc> atB = pollFor(pair.b.cq, 1);
    REQUIRE(atB.size() == 1);
    CHECK(atB[0].status == IBV_WC_SUCCESS);
    CHECK(atB[0].wr_id == 9);
    CHECK(ntohl(atB[0].imm_data) == 5);
    CHECK(pair.b.buffer[31] == 0x77);
    const std::vector<ibv_wc> atA = pollFor(pair.a.cq, 1);
    REQUIRE(atA.size() == 1);
    CHECK(atA[0].status == IBV_WC_SUCCESS);
  }
  CHECK(verbs().liveObjects() == 0);
}

TEST_CASE_METHOD(FakeVerbsTest, "when rnr_retry runs out the WR fails and the queue flushes",
                 "[rdma]") {
  {
    Pair pair;
    REQUIRE(pair.a.ok());
    REQUIRE(pair.b.ok());
    PathOptions pathA;
    pathA.rnrRetry = 2;
    PathOptions pathB;
    pathB.minRnrTimer = 14;  // B's RNR NAKs ask for 1.28 ms between retries
    REQUIRE(connectPair(pair.a, pair.b, pathA, pathB) == 0);
    const auto start = std::chrono::steady_clock::now();
    REQUIRE(postWrite(pair.a, 1, 0, 8, pair.b.address(0), pair.b.mr->rkey, 1u) == 0);
    REQUIRE(postWrite(pair.a, 2, 0, 8, pair.b.address(100), pair.b.mr->rkey, std::nullopt, 0) == 0);
    REQUIRE(postWrite(pair.a, 3, 0, 8, pair.b.address(200), pair.b.mr->rkey, 3u) == 0);
    const std::vector<ibv_wc> atA = pollFor(pair.a.cq, 3);
    CHECK(std::chrono::steady_clock::now() - start >= 2500us);  // two retries, then the error
    REQUIRE(atA.size() == 3);
    CHECK(atA[0].wr_id == 1);
    CHECK(atA[0].status == IBV_WC_RNR_RETRY_EXC_ERR);
    // Flushed WRs complete, signaled or not.
    CHECK(atA[1].wr_id == 2);
    CHECK(atA[1].status == IBV_WC_WR_FLUSH_ERR);
    CHECK(atA[2].wr_id == 3);
    CHECK(atA[2].status == IBV_WC_WR_FLUSH_ERR);
    CHECK(queryState(pair.a.qp) == IBV_QPS_ERR);
    CHECK(queryState(pair.b.qp) == IBV_QPS_RTS);
    CHECK(countArrivals(pair.b.cq, 5ms) == 0);
    CHECK(pair.b.buffer[100] == 0);
  }
  CHECK(verbs().liveObjects() == 0);
}

TEST_CASE_METHOD(FakeVerbsTest, "remote access violations fail with REM_ACCESS_ERR", "[rdma]") {
  {
    Pair pair;
    REQUIRE(pair.a.ok());
    REQUIRE(pair.b.ok());
    PathOptions pathB;
    uint64_t remoteAddr = pair.b.address(0);
    uint32_t rkey = pair.b.mr->rkey;
    ibv_mr* extra = nullptr;
    SECTION("an rkey that was never handed out") {
      rkey = 0x12345600;
    }
    SECTION("an lkey used as the rkey") {
      rkey = pair.b.mr->lkey;
    }
    SECTION("a range past the end of the MR") {
      remoteAddr = pair.b.address(pair.b.buffer.size() - 8);
    }
    SECTION("an MR registered without remote write") {
      extra = verbs().regMr(pair.b.pd, pair.b.buffer.data(), 4096, IBV_ACCESS_LOCAL_WRITE);
      REQUIRE(extra != nullptr);
      rkey = extra->rkey;
    }
    SECTION("a deregistered MR") {
      ibv_mr* gone = verbs().regMr(pair.b.pd, pair.b.buffer.data(), 4096,
                                   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
      REQUIRE(gone != nullptr);
      rkey = gone->rkey;
      REQUIRE(verbs().deregMr(gone) == 0);
    }
    SECTION("a responder QP without remote write access") {
      pathB.access = IBV_ACCESS_LOCAL_WRITE;
    }
    REQUIRE(connectPair(pair.a, pair.b, {}, pathB) == 0);
    REQUIRE(postEmptyRecv(pair.b, 50) == 0);
    std::memset(pair.a.buffer.data(), 0xee, 16);
    REQUIRE(postWrite(pair.a, 1, 0, 16, remoteAddr, rkey) == 0);
    REQUIRE(postWrite(pair.a, 2, 0, 16, pair.b.address(0), pair.b.mr->rkey, std::nullopt, 0) == 0);
    const std::vector<ibv_wc> atA = pollFor(pair.a.cq, 2);
    REQUIRE(atA.size() == 2);
    CHECK(atA[0].status == IBV_WC_REM_ACCESS_ERR);
    CHECK(atA[0].wr_id == 1);
    CHECK(atA[1].status == IBV_WC_WR_FLUSH_ERR);
    CHECK(queryState(pair.a.qp) == IBV_QPS_ERR);
    // The responder's QP fails on the violation too, flushing its receive.
    CHECK(queryState(pair.b.qp) == IBV_QPS_ERR);
    const std::vector<ibv_wc> atB = pollFor(pair.b.cq, 1);
    REQUIRE(atB.size() == 1);
    CHECK(atB[0].status == IBV_WC_WR_FLUSH_ERR);
    CHECK(pair.b.buffer[0] == 0);
    if (extra) CHECK(verbs().deregMr(extra) == 0);
  }
  CHECK(verbs().liveObjects() == 0);
}

TEST_CASE_METHOD(FakeVerbsTest, "a zero-length write needs no valid remote key", "[rdma]") {
  {
    Pair pair;
    REQUIRE(pair.a.ok());
    REQUIRE(pair.b.ok());
    REQUIRE(connectPair(pair.a, pair.b) == 0);
    REQUIRE(postEmptyRecv(pair.b, 8) == 0);
    REQUIRE(postWrite(pair.a, 1, 0, 0, 0, 0xffffffff) == 0);
    REQUIRE(postWrite(pair.a, 2, 0, 0, 0, 0xffffffff, 44u) == 0);
    const std::vector<ibv_wc> atA = pollFor(pair.a.cq, 2);
    REQUIRE(atA.size() == 2);
    CHECK(atA[0].status == IBV_WC_SUCCESS);
    CHECK(atA[1].status == IBV_WC_SUCCESS);
    const std::vector<ibv_wc> atB = pollFor(pair.b.cq, 1);
    REQUIRE(atB.size() == 1);
    CHECK(atB[0].byte_len == 0);
    CHECK(ntohl(atB[0].imm_data) == 44);
  }
  CHECK(verbs().liveObjects() == 0);
}

TEST_CASE_METHOD(FakeVerbsTest, "a bad local SGE fails with LOC_PROT_ERR", "[rdma]") {
  {
    Pair pair;
    REQUIRE(pair.a.ok());
    REQUIRE(pair.b.ok());
    REQUIRE(connectPair(pair.a, pair.b) == 0);
    ibv_sge sge{pair.a.address(0), 16, pair.a.mr->lkey};
    ibv_pd* otherPd = nullptr;
    ibv_mr* otherMr = nullptr;
    std::vector<unsigned char> otherMemory(64);
    SECTION("an rkey used as the lkey") {
      sge.lkey = pair.a.mr->rkey;
    }
    SECTION("past the end of the MR") {
      sge.addr = pair.a.address(pair.a.buffer.size() - 8);
    }
    SECTION("an MR of another PD") {
      otherPd = verbs().allocPd(pair.a.context);
      REQUIRE(otherPd != nullptr);
      otherMr =
          verbs().regMr(otherPd, otherMemory.data(), otherMemory.size(), IBV_ACCESS_LOCAL_WRITE);
      REQUIRE(otherMr != nullptr);
      sge = {reinterpret_cast<uintptr_t>(otherMemory.data()), 16, otherMr->lkey};
    }
    ibv_send_wr wr{};
    wr.wr_id = 6;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = pair.b.address();
    wr.wr.rdma.rkey = pair.b.mr->rkey;
    ibv_send_wr* bad = nullptr;
    REQUIRE(ibv_post_send(pair.a.qp, &wr, &bad) == 0);
    const std::vector<ibv_wc> atA = pollFor(pair.a.cq, 1);
    REQUIRE(atA.size() == 1);
    CHECK(atA[0].status == IBV_WC_LOC_PROT_ERR);
    CHECK(atA[0].wr_id == 6);
    CHECK(queryState(pair.a.qp) == IBV_QPS_ERR);
    if (otherMr) CHECK(verbs().deregMr(otherMr) == 0);
    if (otherPd) CHECK(verbs().deallocPd(otherPd) == 0);
  }
  CHECK(verbs().liveObjects() == 0);
}

TEST_CASE_METHOD(FakeVerbsTest, "a send larger than the receive fails on both sides", "[rdma]") {
  {
    Pair pair;
    REQUIRE(pair.a.ok());
    REQUIRE(pair.b.ok());
    REQUIRE(connectPair(pair.a, pair.b) == 0);
    ibv_sge recvSge{pair.b.address(0), 64, pair.b.mr->lkey};
    ibv_recv_wr recv{};
    recv.wr_id = 3;
    recv.sg_list = &recvSge;
    recv.num_sge = 1;
    ibv_recv_wr* badRecv = nullptr;
    REQUIRE(ibv_post_recv(pair.b.qp, &recv, &badRecv) == 0);
    ibv_sge sendSge{pair.a.address(0), 65, pair.a.mr->lkey};
    REQUIRE(postSend(pair.a, 4, &sendSge, IBV_WR_SEND, IBV_SEND_SIGNALED) == 0);
    const std::vector<ibv_wc> atB = pollFor(pair.b.cq, 1);
    REQUIRE(atB.size() == 1);
    CHECK(atB[0].status == IBV_WC_LOC_LEN_ERR);
    CHECK(atB[0].wr_id == 3);
    const std::vector<ibv_wc> atA = pollFor(pair.a.cq, 1);
    REQUIRE(atA.size() == 1);
    CHECK(atA[0].status == IBV_WC_REM_INV_REQ_ERR);
    CHECK(queryState(pair.a.qp) == IBV_QPS_ERR);
    CHECK(queryState(pair.b.qp) == IBV_QPS_ERR);
  }
  CHECK(verbs().liveObjects() == 0);
}

TEST_CASE_METHOD(FakeVerbsTest, "an unreachable responder fails with RETRY_EXC_ERR in time",
                 "[rdma]") {
  std::optional<ScopedEnv> portDown;
  {
    Endpoint a;
    SECTION("the responder's port is down") {
      portDown.emplace("WEFT_FAKE_VERBS_PORT_STATE", "down");
    }
    Endpoint b;
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    PathOptions path;
    path.timeout = 10;  // 4.2 ms per attempt
    path.retryCnt = 2;  // three attempts: 12.6 ms
    uint32_t destination = b.qp->qp_num;
    ibv_gid destinationGid = gidOf(b, 1);
    SECTION("no QP has the destination number") {
      destination = 0xabcdef;
    }
    SECTION("the GID is not the responder's") {
      destinationGid = ibv_gid{};
      destinationGid.raw[0] = 0xfe;
      destinationGid.raw[1] = 0x80;
      destinationGid.raw[15] = 0x34;
    }
    bool mismatchedPsn = false;
    SECTION("the PSNs do not line up") {
      mismatchedPsn = true;
    }
    bool responderGone = false;
    SECTION("the responder was destroyed") {
      responderGone = true;
    }
    PathOptions responderPath;
    if (mismatchedPsn) responderPath.rqPsn = path.sqPsn + 1;
    REQUIRE(moveToInit(a, path) == 0);
    REQUIRE(moveToRtr(a, destination, destinationGid, path) == 0);
    REQUIRE(moveToRts(a, path) == 0);
    REQUIRE(moveToInit(b, responderPath) == 0);
    REQUIRE(moveToRtr(b, a.qp->qp_num, gidOf(a, 1), responderPath) == 0);
    if (responderGone) {
      REQUIRE(verbs().destroyQp(b.qp) == 0);
      b.qp = nullptr;
    }
    const auto start = std::chrono::steady_clock::now();
    REQUIRE(postWrite(a, 1, 0, 8, b.address(), b.mr->rkey) == 0);
    const std::vector<ibv_wc> atA = pollFor(a.cq, 1);
    const auto elapsed = std::chrono::steady_clock::now() - start;
    REQUIRE(atA.size() == 1);
    CHECK(atA[0].status == IBV_WC_RETRY_EXC_ERR);
    CHECK(elapsed >= 10ms);
    CHECK(elapsed < 2s);
    CHECK(queryState(a.qp) == IBV_QPS_ERR);
  }
  CHECK(verbs().liveObjects() == 0);
}

TEST_CASE_METHOD(FakeVerbsTest, "a responder that reaches RTR late is retried into success",
                 "[rdma]") {
  {
    Pair pair;
    REQUIRE(pair.a.ok());
    REQUIRE(pair.b.ok());
    REQUIRE(moveToInit(pair.a) == 0);
    REQUIRE(moveToRtr(pair.a, pair.b.qp->qp_num, gidOf(pair.b, 1)) == 0);
    REQUIRE(moveToRts(pair.a) == 0);
    REQUIRE(moveToInit(pair.b) == 0);
    pair.a.buffer[0] = 0x42;
    REQUIRE(postWrite(pair.a, 1, 0, 1, pair.b.address(), pair.b.mr->rkey) == 0);
    CHECK(countArrivals(pair.a.cq, 10ms) == 0);
    REQUIRE(moveToRtr(pair.b, pair.a.qp->qp_num, gidOf(pair.a, 1)) == 0);
    const std::vector<ibv_wc> atA = pollFor(pair.a.cq, 1);
    REQUIRE(atA.size() == 1);
    CHECK(atA[0].status == IBV_WC_SUCCESS);
    CHECK(pair.b.buffer[0] == 0x42);
  }
  CHECK(verbs().liveObjects() == 0);
}

TEST_CASE_METHOD(FakeVerbsTest, "an overflowing CQ fails every poll from then on", "[rdma]") {
  {
    EndpointOptions small;
    small.cqe = 2;
    Endpoint a(small);
    Endpoint b;
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    REQUIRE(connectPair(a, b) == 0);
    for (uint64_t i = 0; i < 3; ++i) {
      REQUIRE(postEmptyRecv(b, i) == 0);
      REQUIRE(postWrite(a, i, 0, 8, b.address(), b.mr->rkey, static_cast<uint32_t>(i)) == 0);
    }
    // The receiver's completions come with the sender's: once all three are at B, A's CQ has
    // had its third completion with room for two.
    REQUIRE(pollFor(b.cq, 3).size() == 3);
    ibv_wc wcs[4];
    errno = 0;
    CHECK(ibv_poll_cq(a.cq, 4, wcs) == -1);
    CHECK(errno == EOVERFLOW);
    CHECK(ibv_poll_cq(a.cq, 4, wcs) == -1);
  }
  CHECK(verbs().liveObjects() == 0);
}

}  // namespace weft::fake_verbs::test
