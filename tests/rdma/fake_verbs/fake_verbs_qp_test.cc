// The QP state machine: each transition's mandatory attributes, refused extra ones, refused
// values, illegal transitions, and posting in the wrong state.
#include <catch2/catch.hpp>

#include <cerrno>
#include <utility>

#include "fake_verbs_test_support.h"

namespace weft::fake_verbs::test {
namespace {

using weft::test::ScopedEnv;

struct Transition {
  ibv_qp_attr attr{};
  int mask = 0;
};

Transition toInit() {
  Transition t;
  t.attr.qp_state = IBV_QPS_INIT;
  t.attr.port_num = 1;
  t.attr.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
  t.mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
  return t;
}

Transition toRtr(uint32_t remoteQpn, const ibv_gid& remoteGid) {
  Transition t;
  t.attr.qp_state = IBV_QPS_RTR;
  t.attr.path_mtu = IBV_MTU_1024;
  t.attr.dest_qp_num = remoteQpn;
  t.attr.rq_psn = 1;
  t.attr.max_dest_rd_atomic = 1;
  t.attr.min_rnr_timer = 12;
  t.attr.ah_attr.is_global = 1;
  t.attr.ah_attr.grh.dgid = remoteGid;
  t.attr.ah_attr.grh.sgid_index = 1;
  t.attr.ah_attr.port_num = 1;
  t.mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
           IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
  return t;
}

Transition toRts() {
  Transition t;
  t.attr.qp_state = IBV_QPS_RTS;
  t.attr.sq_psn = 1;
  t.attr.timeout = 14;
  t.attr.retry_cnt = 7;
  t.attr.rnr_retry = 7;
  t.attr.max_rd_atomic = 1;
  t.mask = IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
           IBV_QP_MAX_QP_RD_ATOMIC;
  return t;
}

int modify(Endpoint& endpoint, Transition t) {
  return verbs().modifyQp(endpoint.qp, &t.attr, t.mask);
}

int modifyWithMask(Endpoint& endpoint, Transition t, int mask) {
  return verbs().modifyQp(endpoint.qp, &t.attr, mask);
}

// Every mandatory attribute, one at a time: without it the transition fails with EINVAL and
// the QP stays where it was; with all of them it succeeds.
void requireEachAttribute(Endpoint& endpoint, const Transition& t, ibv_qp_state from) {
  for (int bit = 1; bit < (1 << 26); bit <<= 1) {
    if (!(t.mask & bit) || bit == IBV_QP_STATE) continue;
    INFO("attribute mask bit " << bit << " left out");
    CHECK(modifyWithMask(endpoint, t, t.mask & ~bit) == EINVAL);
    CHECK(queryState(endpoint.qp) == from);
  }
  REQUIRE(modify(endpoint, t) == 0);
  CHECK(queryState(endpoint.qp) == t.attr.qp_state);
}

}  // namespace

TEST_CASE_METHOD(FakeVerbsTest, "each transition needs all its mandatory attributes", "[rdma]") {
  Endpoint a;
  Endpoint b;
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  requireEachAttribute(a, toInit(), IBV_QPS_RESET);
  requireEachAttribute(a, toRtr(b.qp->qp_num, gidOf(b, 1)), IBV_QPS_INIT);
  requireEachAttribute(a, toRts(), IBV_QPS_RTR);
  CHECK(a.qp->state == IBV_QPS_RTS);
}

TEST_CASE_METHOD(FakeVerbsTest, "illegal transitions and extra attributes are refused", "[rdma]") {
  Endpoint a;
  REQUIRE(a.ok());
  const Transition rtr = toRtr(a.qp->qp_num, gidOf(a, 1));
  CHECK(modify(a, rtr) == EINVAL);      // RESET -> RTR
  CHECK(modify(a, toRts()) == EINVAL);  // RESET -> RTS
  // Attributes of a later transition are refused, as the kernel refuses them.
  CHECK(modifyWithMask(a, toInit(), toInit().mask | IBV_QP_DEST_QPN) == EINVAL);
  REQUIRE(modify(a, toInit()) == 0);
  CHECK(modify(a, toRts()) == EINVAL);  // INIT -> RTS
  CHECK(modifyWithMask(a, rtr, rtr.mask | IBV_QP_SQ_PSN) == EINVAL);
  CHECK(modifyWithMask(a, rtr, rtr.mask | IBV_QP_TIMEOUT) == EINVAL);
  REQUIRE(modify(a, rtr) == 0);
  // Optional ones are fine.
  Transition rts = toRts();
  rts.attr.min_rnr_timer = 3;
  REQUIRE(modifyWithMask(a, rts, rts.mask | IBV_QP_MIN_RNR_TIMER) == 0);
  CHECK(modify(a, rtr) == EINVAL);       // RTS -> RTR
  CHECK(modify(a, toInit()) == EINVAL);  // RTS -> INIT
  Transition drain{};
  drain.attr.qp_state = IBV_QPS_SQD;
  CHECK(modifyWithMask(a, drain, IBV_QP_STATE) == EINVAL);  // not supported
  Transition current{};
  current.attr.cur_qp_state = IBV_QPS_INIT;  // wrong: it is in RTS
  current.attr.min_rnr_timer = 4;
  CHECK(modifyWithMask(a, current, IBV_QP_CUR_STATE | IBV_QP_MIN_RNR_TIMER) == EINVAL);
  CHECK(queryState(a.qp) == IBV_QPS_RTS);
}

TEST_CASE_METHOD(FakeVerbsTest, "attribute values are checked against the port", "[rdma]") {
  Endpoint a;
  REQUIRE(a.ok());
  Transition init = toInit();
  init.attr.port_num = 2;
  CHECK(modify(a, init) == EINVAL);
  init = toInit();
  init.attr.qp_access_flags = IBV_ACCESS_MW_BIND;
  CHECK(modify(a, init) == EINVAL);
  REQUIRE(modify(a, toInit()) == 0);

  const ibv_gid gid = gidOf(a, 1);
  Transition rtr = toRtr(a.qp->qp_num, gid);
  rtr.attr.path_mtu = IBV_MTU_2048;  // above the active MTU (1024)
  CHECK(modify(a, rtr) == EINVAL);
  rtr.attr.path_mtu = IBV_MTU_4096;  // the port's max, still above the active one
  CHECK(modify(a, rtr) == EINVAL);
  rtr = toRtr(a.qp->qp_num, gid);
  rtr.attr.ah_attr.is_global = 0;  // RoCE needs a GRH
  CHECK(modify(a, rtr) == EINVAL);
  rtr = toRtr(a.qp->qp_num, gid);
  rtr.attr.ah_attr.grh.sgid_index = 2;  // an empty GID entry
  CHECK(modify(a, rtr) == EINVAL);
  rtr = toRtr(a.qp->qp_num, gid);
  rtr.attr.ah_attr.port_num = 0;
  CHECK(modify(a, rtr) == EINVAL);
  rtr = toRtr(a.qp->qp_num, gid);
  rtr.attr.max_dest_rd_atomic = 17;
  CHECK(modify(a, rtr) == EINVAL);
  CHECK(queryState(a.qp) == IBV_QPS_INIT);
  // A destination QP that does not exist (yet) is fine here; only traffic would fail.
  rtr = toRtr(0xabcdef, gid);
  REQUIRE(modify(a, rtr) == 0);

  Transition rts = toRts();
  rts.attr.retry_cnt = 8;
  CHECK(modify(a, rts) == EINVAL);
  rts = toRts();
  rts.attr.timeout = 32;
  CHECK(modify(a, rts) == EINVAL);
  CHECK(modify(a, toRts()) == 0);
}

TEST_CASE_METHOD(FakeVerbsTest, "without GIDs a RoCE QP cannot reach RTR", "[rdma]") {
  ScopedEnv gids("WEFT_FAKE_VERBS_GIDS", "none");
  Endpoint a;
  REQUIRE(a.ok());
  REQUIRE(modify(a, toInit()) == 0);
  for (uint8_t index = 0; index < 2; ++index) {
    Transition rtr = toRtr(a.qp->qp_num, ibv_gid{});
    rtr.attr.ah_attr.grh.sgid_index = index;
    CHECK(modify(a, rtr) == EINVAL);
  }
}

TEST_CASE_METHOD(FakeVerbsTest, "any state may go to ERR or RESET", "[rdma]") {
  Endpoint a;
  Endpoint b;
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  Transition error{};
  error.attr.qp_state = IBV_QPS_ERR;
  Transition reset{};
  reset.attr.qp_state = IBV_QPS_RESET;
  CHECK(modifyWithMask(a, error, IBV_QP_STATE) == 0);  // RESET -> ERR
  CHECK(queryState(a.qp) == IBV_QPS_ERR);
  CHECK(modifyWithMask(a, reset, IBV_QP_STATE) == 0);
  CHECK(queryState(a.qp) == IBV_QPS_RESET);
  REQUIRE(modify(a, toInit()) == 0);
  CHECK(modifyWithMask(a, reset, IBV_QP_STATE) == 0);  // INIT -> RESET
  REQUIRE(connectPair(a, b) == 0);
  CHECK(modifyWithMask(a, error, IBV_QP_STATE) == 0);  // RTS -> ERR
  CHECK(a.qp->state == IBV_QPS_ERR);
  // ERR -> ERR is allowed, but ERR -> RTS is not.
  CHECK(modifyWithMask(a, error, IBV_QP_STATE) == 0);
  CHECK(modify(a, toRts()) == EINVAL);
  CHECK(modifyWithMask(a, reset, IBV_QP_STATE) == 0);
  CHECK(queryState(a.qp) == IBV_QPS_RESET);
}

TEST_CASE_METHOD(FakeVerbsTest, "posting needs RTS for sends and INIT for receives", "[rdma]") {
  Endpoint a;
  Endpoint b;
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  ibv_sge sge{a.address(), 8, a.mr->lkey};
  ibv_send_wr send{};
  send.sg_list = &sge;
  send.num_sge = 1;
  send.opcode = IBV_WR_RDMA_WRITE;
  send.wr.rdma.remote_addr = b.address();
  send.wr.rdma.rkey = b.mr->rkey;
  ibv_send_wr* badSend = nullptr;
  ibv_recv_wr recv{};
  ibv_recv_wr* badRecv = nullptr;

  CHECK(ibv_post_send(a.qp, &send, &badSend) == EINVAL);  // RESET
  CHECK(badSend == &send);
  CHECK(ibv_post_recv(a.qp, &recv, &badRecv) == EINVAL);  // RESET
  CHECK(badRecv == &recv);
  REQUIRE(moveToInit(a) == 0);
  badSend = nullptr;
  CHECK(ibv_post_send(a.qp, &send, &badSend) == EINVAL);  // INIT
  CHECK(badSend == &send);
  CHECK(ibv_post_recv(a.qp, &recv, &badRecv) == 0);  // INIT takes receives
  REQUIRE(moveToRtr(a, b.qp->qp_num, gidOf(b, 1)) == 0);
  CHECK(ibv_post_send(a.qp, &send, &badSend) == EINVAL);  // RTR
  // Unsupported opcodes and too many SGEs are refused at post time.
  REQUIRE(moveToInit(b) == 0);
  REQUIRE(moveToRtr(b, a.qp->qp_num, gidOf(a, 1)) == 0);
  REQUIRE(moveToRts(a) == 0);
  REQUIRE(moveToRts(b) == 0);
  send.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
  CHECK(ibv_post_send(a.qp, &send, &badSend) == EINVAL);
  send.opcode = IBV_WR_RDMA_WRITE;
  send.num_sge = 3;  // max_send_sge is 2
  CHECK(ibv_post_send(a.qp, &send, &badSend) == EINVAL);
  send.num_sge = 1;
  send.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
  sge.length = 65;  // max_inline_data is 64
  CHECK(ibv_post_send(a.qp, &send, &badSend) == EINVAL);
}

TEST_CASE_METHOD(FakeVerbsTest, "ibv_query_qp reports the attributes that were set", "[rdma]") {
  Endpoint a;
  Endpoint b;
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  PathOptions path;
  path.timeout = 9;
  path.retryCnt = 3;
  path.rnrRetry = 5;
  path.mtu = IBV_MTU_512;
  path.sqPsn = 77;
  path.rqPsn = 4000;
  PathOptions peer;
  peer.rqPsn = 77;
  REQUIRE(connectPair(a, b, path, peer) == 0);
  ibv_qp_attr attr{};
  ibv_qp_init_attr init{};
  REQUIRE(verbs().queryQp(a.qp, &attr, IBV_QP_STATE | IBV_QP_TIMEOUT, &init) == 0);
  CHECK(attr.qp_state == IBV_QPS_RTS);
  CHECK(attr.dest_qp_num == b.qp->qp_num);
  CHECK(attr.path_mtu == IBV_MTU_512);
  CHECK(attr.timeout == 9);
  CHECK(attr.retry_cnt == 3);
  CHECK(attr.rnr_retry == 5);
  CHECK(attr.sq_psn == 77);
  CHECK(attr.rq_psn == 4000);
  CHECK(attr.port_num == 1);
  CHECK(attr.cap.max_send_wr == 32);
  CHECK(init.send_cq == a.cq);
  CHECK(init.qp_type == IBV_QPT_RC);
  CHECK(init.cap.max_inline_data == 64);
}

}  // namespace weft::fake_verbs::test
