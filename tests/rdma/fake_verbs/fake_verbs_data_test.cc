// The data path between two connected RC QPs of one process: a credit-windowed stream of
// write-with-immediate, completion fields, ordering, inline and plain sends, queue capacity, and
// completion channels.
#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>

#include <catch2/catch.hpp>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <thread>

#include "fake_verbs_test_support.h"

namespace weft::fake_verbs::test {
namespace {

using namespace std::chrono_literals;

constexpr size_t kChunk = 64 * 1024;
constexpr int kMessages = 16;
constexpr int kWindow = 4;

unsigned char patternByte(int message, size_t offset) {
  return static_cast<unsigned char>(message * 131 + offset * 7);
}

struct Pair {
  explicit Pair(const EndpointOptions& options = {}) : a(options), b(options) {}
  Endpoint a;
  Endpoint b;
};

bool readable(int fd, int timeoutMs) {
  pollfd waitFor{fd, POLLIN, 0};
  return poll(&waitFor, 1, timeoutMs) == 1 && (waitFor.revents & POLLIN);
}

// What each rank thread saw; the main thread asserts on it afterwards.
struct SenderLog {
  std::vector<uint64_t> signaledWrIds;
  std::vector<uint32_t> credits;
  int errors = 0;
  int postFailures = 0;
};

struct ReceiverLog {
  std::vector<uint32_t> immediates;
  std::vector<uint32_t> byteLengths;
  int corruptMessages = 0;
  int errors = 0;
};

// Rank A: 16 writes of 64 KiB into B's 4 slots, each carrying its index as the immediate, at
// most 4 in flight (one credit per slot, returned by B), every 4th WR signaled.
void runSender(Pair& pair, SenderLog* log) {
  Endpoint& a = pair.a;
  int credits = kWindow;
  for (int i = 0; i < kWindow; ++i) log->postFailures += postEmptyRecv(a, 1000 + i) != 0;
  auto drain = [&](bool block) {
    ibv_wc wcs[8];
    int polled = 0;
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    do {
      polled = ibv_poll_cq(a.cq, 8, wcs);
      if (polled < 0) {
        ++log->errors;
        return;
      }
      for (int k = 0; k < polled; ++k) {
        if (wcs[k].status != IBV_WC_SUCCESS) {
          ++log->errors;
        } else if (wcs[k].opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
          log->credits.push_back(ntohl(wcs[k].imm_data));
          ++credits;
          log->postFailures += postEmptyRecv(a, wcs[k].wr_id) != 0;
        } else if (wcs[k].opcode == IBV_WC_RDMA_WRITE) {
          log->signaledWrIds.push_back(wcs[k].wr_id);
        }
      }
      if (polled == 0) std::this_thread::sleep_for(20us);
    } while (block && polled <= 0 && std::chrono::steady_clock::now() < deadline);
  };
  for (int i = 0; i < kMessages; ++i) {
    while (credits == 0 && log->errors == 0) drain(true);
    const size_t slot = static_cast<size_t>(i % kWindow) * kChunk;
    for (size_t offset = 0; offset < kChunk; ++offset)
      a.buffer[slot + offset] = patternByte(i, offset);
    const unsigned flags = (i % kWindow == kWindow - 1) ? IBV_SEND_SIGNALED : 0;
    log->postFailures += postWrite(a, i, slot, kChunk, pair.b.address(slot), pair.b.mr->rkey,
                                   static_cast<uint32_t>(i), flags) != 0;
    --credits;
  }
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while ((log->signaledWrIds.size() < kMessages / kWindow || credits < kWindow) &&
         log->errors == 0 && std::chrono::steady_clock::now() < deadline) {
    drain(false);
  }
}

// Rank B: checks each message in place, re-posts the receive and returns the credit with a
// zero-length write-with-immediate (every 4th signaled, so that its send queue drains).
void runReceiver(Pair& pair, ReceiverLog* log) {
  Endpoint& b = pair.b;
  for (int i = 0; i < kWindow; ++i) log->errors += postEmptyRecv(b, 2000 + i) != 0;
  int received = 0;
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (received < kMessages && std::chrono::steady_clock::now() < deadline) {
    ibv_wc wc;
    const int polled = ibv_poll_cq(b.cq, 1, &wc);
    if (polled < 0) {
      ++log->errors;
      return;
    }
    if (polled == 0) {
      std::this_thread::sleep_for(20us);
      continue;
    }
    if (wc.status != IBV_WC_SUCCESS) {
      ++log->errors;
      return;
    }
    if (wc.opcode != IBV_WC_RECV_RDMA_WITH_IMM) continue;  // a signaled credit write
    const uint32_t index = ntohl(wc.imm_data);
    log->immediates.push_back(index);
    log->byteLengths.push_back(wc.byte_len);
    const size_t slot = static_cast<size_t>(index % kWindow) * kChunk;
    for (size_t offset = 0; offset < kChunk; ++offset) {
      if (b.buffer[slot + offset] != patternByte(static_cast<int>(index), offset)) {
        ++log->corruptMessages;
        break;
      }
    }
    log->errors += postEmptyRecv(b, wc.wr_id) != 0;
    const unsigned flags = (received % kWindow == kWindow - 1) ? IBV_SEND_SIGNALED : 0;
    log->errors += postWrite(b, 3000 + received, 0, 0, 0, 0, index, flags) != 0;
    ++received;
  }
}

}  // namespace

TEST_CASE_METHOD(FakeVerbsTest, "16 x 64 KiB write-with-immediate under a 4-credit window",
                 "[rdma]") {
  {
    Pair pair;
    REQUIRE(pair.a.ok());
    REQUIRE(pair.b.ok());
    REQUIRE(connectPair(pair.a, pair.b) == 0);
    SenderLog sent;
    ReceiverLog received;
    std::thread receiver(runReceiver, std::ref(pair), &received);
    std::thread sender(runSender, std::ref(pair), &sent);
    sender.join();
    receiver.join();

    CHECK(sent.errors == 0);
    CHECK(sent.postFailures == 0);
    CHECK(received.errors == 0);
    CHECK(received.corruptMessages == 0);
    std::vector<uint32_t> inOrder(kMessages);
    for (int i = 0; i < kMessages; ++i) inOrder[i] = i;
    CHECK(received.immediates == inOrder);
    CHECK(sent.credits == inOrder);
    CHECK(received.byteLengths == std::vector<uint32_t>(kMessages, kChunk));
    // Only the signaled WRs complete at the sender, in order.
    CHECK(sent.signaledWrIds == std::vector<uint64_t>{3, 7, 11, 15});
  }
  CHECK(verbs().liveObjects() == 0);
}

TEST_CASE_METHOD(FakeVerbsTest, "a write-with-immediate completes on both sides as in verbs",
                 "[rdma]") {
  {
    Pair pair;
    REQUIRE(pair.a.ok());
    REQUIRE(pair.b.ok());
    REQUIRE(connectPair(pair.a, pair.b) == 0);
    std::memset(pair.a.buffer.data(), 0x5c, 100);
    REQUIRE(postEmptyRecv(pair.b, 77) == 0);
    REQUIRE(postWrite(pair.a, 42, 0, 100, pair.b.address(512), pair.b.mr->rkey, 0x12345678u) == 0);
    const std::vector<ibv_wc> atB = pollFor(pair.b.cq, 1);
    const std::vector<ibv_wc> atA = pollFor(pair.a.cq, 1);
    REQUIRE(atB.size() == 1);
    REQUIRE(atA.size() == 1);
    CHECK(atB[0].status == IBV_WC_SUCCESS);
    CHECK(atB[0].opcode == IBV_WC_RECV_RDMA_WITH_IMM);
    CHECK((atB[0].wc_flags & IBV_WC_WITH_IMM) != 0);
    CHECK(atB[0].imm_data == htonl(0x12345678u));  // network order, untouched
    CHECK(atB[0].byte_len == 100);
    CHECK(atB[0].wr_id == 77);
    CHECK(atB[0].qp_num == pair.b.qp->qp_num);
    CHECK(atB[0].src_qp == pair.a.qp->qp_num);
    CHECK(atA[0].status == IBV_WC_SUCCESS);
    CHECK(atA[0].opcode == IBV_WC_RDMA_WRITE);
    CHECK(atA[0].wr_id == 42);
    CHECK(atA[0].qp_num == pair.a.qp->qp_num);
    CHECK(pair.b.buffer[511] == 0);
    CHECK(pair.b.buffer[512] == 0x5c);
    CHECK(pair.b.buffer[611] == 0x5c);
    CHECK(pair.b.buffer[612] == 0);
  }
  CHECK(verbs().liveObjects() == 0);
}

TEST_CASE_METHOD(FakeVerbsTest, "completions arrive later than the post, in posting order",
                 "[rdma]") {
  {
    Pair pair;
    REQUIRE(pair.a.ok());
    REQUIRE(pair.b.ok());
    REQUIRE(connectPair(pair.a, pair.b) == 0);
    REQUIRE(verbs().control("delay_us 100000") == 0);
    const auto start = std::chrono::steady_clock::now();
    // Three writes to one place: the last one posted is the one that stays.
    for (int i = 0; i < 3; ++i) {
      pair.a.buffer[i] = static_cast<unsigned char>(10 + i);
      REQUIRE(postWrite(pair.a, i, i, 1, pair.b.address(0), pair.b.mr->rkey) == 0);
    }
    ibv_wc wc;
    CHECK(ibv_poll_cq(pair.a.cq, 1, &wc) == 0);  // nothing yet, it runs on the worker
    const std::vector<ibv_wc> done = pollFor(pair.a.cq, 3);
    CHECK(std::chrono::steady_clock::now() - start >= 90ms);
    REQUIRE(done.size() == 3);
    for (int i = 0; i < 3; ++i) CHECK(done[i].wr_id == static_cast<uint64_t>(i));
    CHECK(pair.b.buffer[0] == 12);
  }
  CHECK(verbs().liveObjects() == 0);
}

TEST_CASE_METHOD(FakeVerbsTest, "sends land in posted receives, inline data is taken at post",
                 "[rdma]") {
  {
    Pair pair;
    REQUIRE(pair.a.ok());
    REQUIRE(pair.b.ok());
    REQUIRE(connectPair(pair.a, pair.b) == 0);
    REQUIRE(verbs().control("delay_us 100000") == 0);
    ibv_sge recvSges[3] = {{pair.b.address(0), 16, pair.b.mr->lkey},
                           {pair.b.address(4096), 1024, pair.b.mr->lkey},
                           {pair.b.address(8192), 1024, pair.b.mr->lkey}};
    ibv_recv_wr recvs[2] = {};
    recvs[0].wr_id = 1;
    recvs[0].sg_list = recvSges;
    recvs[0].num_sge = 2;  // scattered: 16 bytes, then the rest
    recvs[0].next = &recvs[1];
    recvs[1].wr_id = 2;
    recvs[1].sg_list = recvSges + 2;
    recvs[1].num_sge = 1;
    ibv_recv_wr* badRecv = nullptr;
    REQUIRE(ibv_post_recv(pair.b.qp, recvs, &badRecv) == 0);

    std::memset(pair.a.buffer.data(), 'i', 48);
    std::memset(pair.a.buffer.data() + 1024, 'd', 300);
    ibv_sge inlineSge{pair.a.address(0), 48, 0};  // inline: the lkey is not looked at
    ibv_sge dmaSge{pair.a.address(1024), 300, pair.a.mr->lkey};
    ibv_send_wr sends[2] = {};
    sends[0].wr_id = 11;
    sends[0].sg_list = &inlineSge;
    sends[0].num_sge = 1;
    sends[0].opcode = IBV_WR_SEND;
    sends[0].send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED;
    sends[0].next = &sends[1];
    sends[1].wr_id = 12;
    sends[1].sg_list = &dmaSge;
    sends[1].num_sge = 1;
    sends[1].opcode = IBV_WR_SEND_WITH_IMM;
    sends[1].imm_data = htonl(9);
    sends[1].send_flags = IBV_SEND_SIGNALED;
    ibv_send_wr* badSend = nullptr;
    REQUIRE(ibv_post_send(pair.a.qp, sends, &badSend) == 0);
    // Both buffers change before the WRs execute: the inline one was copied at post, the other
    // is read when the "DMA" happens, as on hardware.
    std::memset(pair.a.buffer.data(), 'X', 48);
    std::memset(pair.a.buffer.data() + 1024, 'D', 300);
    ibv_wc wc;
    CHECK(ibv_poll_cq(pair.a.cq, 1, &wc) == 0);  // takes the lock: the edits happen-before

    const std::vector<ibv_wc> atB = pollFor(pair.b.cq, 2);
    REQUIRE(atB.size() == 2);
    CHECK(atB[0].opcode == IBV_WC_RECV);
    CHECK(atB[0].wr_id == 1);
    CHECK(atB[0].byte_len == 48);
    CHECK((atB[0].wc_flags & IBV_WC_WITH_IMM) == 0);
    CHECK(atB[1].opcode == IBV_WC_RECV);
    CHECK(atB[1].wr_id == 2);
    CHECK(atB[1].byte_len == 300);
    CHECK((atB[1].wc_flags & IBV_WC_WITH_IMM) != 0);
    CHECK(ntohl(atB[1].imm_data) == 9);
    CHECK(std::string(pair.b.buffer.begin(), pair.b.buffer.begin() + 16) == std::string(16, 'i'));
    CHECK(std::string(pair.b.buffer.begin() + 4096, pair.b.buffer.begin() + 4096 + 32) ==
          std::string(32, 'i'));
    CHECK(pair.b.buffer[4096 + 32] == 0);
    CHECK(std::string(pair.b.buffer.begin() + 8192, pair.b.buffer.begin() + 8192 + 300) ==
          std::string(300, 'D'));
    CHECK(pair.b.buffer[8192 + 300] == 0);
    const std::vector<ibv_wc> atA = pollFor(pair.a.cq, 2);
    REQUIRE(atA.size() == 2);
    CHECK(atA[0].opcode == IBV_WC_SEND);
    CHECK(atA[1].wr_id == 12);
  }
  CHECK(verbs().liveObjects() == 0);
}

TEST_CASE_METHOD(FakeVerbsTest, "a non-inline send reads its buffer when it executes", "[rdma]") {
  {
    Pair pair;
    REQUIRE(pair.a.ok());
    REQUIRE(pair.b.ok());
    REQUIRE(connectPair(pair.a, pair.b) == 0);
    REQUIRE(verbs().control("delay_us 100000") == 0);
    std::memset(pair.a.buffer.data(), 'a', 64);
    REQUIRE(postWrite(pair.a, 1, 0, 64, pair.b.address(0), pair.b.mr->rkey) == 0);
    std::memset(pair.a.buffer.data(), 'b', 64);  // too early: the write has not run yet
    ibv_wc wc;
    CHECK(ibv_poll_cq(pair.a.cq, 1, &wc) == 0);
    REQUIRE(pollFor(pair.a.cq, 1).size() == 1);
    CHECK(pair.b.buffer[0] == 'b');
    CHECK(pair.b.buffer[63] == 'b');
  }
  CHECK(verbs().liveObjects() == 0);
}

TEST_CASE_METHOD(FakeVerbsTest, "a full send queue refuses WRs with ENOMEM", "[rdma]") {
  {
    EndpointOptions options;
    options.maxSendWr = 4;
    options.maxRecvWr = 2;
    Pair pair(options);
    REQUIRE(pair.a.ok());
    REQUIRE(pair.b.ok());
    REQUIRE(connectPair(pair.a, pair.b) == 0);
    ibv_sge sge{pair.a.address(), 8, pair.a.mr->lkey};
    ibv_send_wr wrs[6] = {};
    for (int i = 0; i < 6; ++i) {
      wrs[i].wr_id = i;
      wrs[i].sg_list = &sge;
      wrs[i].num_sge = 1;
      wrs[i].opcode = IBV_WR_RDMA_WRITE;
      wrs[i].send_flags = IBV_SEND_SIGNALED;
      wrs[i].wr.rdma.remote_addr = pair.b.address();
      wrs[i].wr.rdma.rkey = pair.b.mr->rkey;
      wrs[i].next = i < 5 ? &wrs[i + 1] : nullptr;
    }
    ibv_send_wr* bad = nullptr;
    SECTION("a chain longer than the queue: the first four go, the fifth is bad_wr") {
      CHECK(ibv_post_send(pair.a.qp, wrs, &bad) == ENOMEM);
      CHECK(bad == &wrs[4]);
      CHECK(pollFor(pair.a.cq, 4).size() == 4);
      CHECK(countArrivals(pair.a.cq, 20ms) == 0);
    }
    SECTION("finished unsignaled WRs keep their slots until a signaled one completes") {
      for (int i = 0; i < 4; ++i) wrs[i].send_flags = 0;
      wrs[3].next = nullptr;
      REQUIRE(ibv_post_send(pair.a.qp, wrs, &bad) == 0);
      CHECK(countArrivals(pair.a.cq, 20ms) == 0);  // they ran, but nothing retired them
      wrs[4].next = nullptr;
      CHECK(ibv_post_send(pair.a.qp, &wrs[4], &bad) == ENOMEM);
      CHECK(bad == &wrs[4]);
    }
    SECTION("a signaled WR frees the slots of the unsignaled ones before it") {
      for (int i = 0; i < 3; ++i) wrs[i].send_flags = 0;
      wrs[3].next = nullptr;
      REQUIRE(ibv_post_send(pair.a.qp, wrs, &bad) == 0);
      const std::vector<ibv_wc> done = pollFor(pair.a.cq, 1);
      REQUIRE(done.size() == 1);
      CHECK(done[0].wr_id == 3);
      for (int i = 0; i < 4; ++i) wrs[i].send_flags = IBV_SEND_SIGNALED;
      CHECK(ibv_post_send(pair.a.qp, wrs, &bad) == 0);
      CHECK(pollFor(pair.a.cq, 4).size() == 4);
    }
    SECTION("the receive queue holds max_recv_wr receives") {
      CHECK(postEmptyRecv(pair.b, 1) == 0);
      CHECK(postEmptyRecv(pair.b, 2) == 0);
      CHECK(postEmptyRecv(pair.b, 3) == ENOMEM);
    }
  }
  CHECK(verbs().liveObjects() == 0);
}

TEST_CASE_METHOD(FakeVerbsTest, "moving to ERR flushes the posted receives", "[rdma]") {
  {
    EndpointOptions options;
    options.maxRecvWr = 3;
    Pair pair(options);
    REQUIRE(pair.a.ok());
    REQUIRE(pair.b.ok());
    REQUIRE(connectPair(pair.a, pair.b) == 0);
    for (uint64_t id = 1; id <= 3; ++id) REQUIRE(postEmptyRecv(pair.b, id) == 0);
    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_ERR;
    REQUIRE(verbs().modifyQp(pair.b.qp, &attr, IBV_QP_STATE) == 0);
    REQUIRE(postEmptyRecv(pair.b, 4) == 0);  // accepted in ERR (the queue is empty again)
    const std::vector<ibv_wc> flushed = pollFor(pair.b.cq, 4);
    REQUIRE(flushed.size() == 4);
    for (size_t i = 0; i < 4; ++i) {
      CHECK(flushed[i].status == IBV_WC_WR_FLUSH_ERR);
      CHECK(flushed[i].wr_id == i + 1);
      CHECK(flushed[i].qp_num == pair.b.qp->qp_num);
    }
  }
  CHECK(verbs().liveObjects() == 0);
}

TEST_CASE_METHOD(FakeVerbsTest, "a completion channel wakes poll(2) only for an armed CQ",
                 "[rdma]") {
  {
    EndpointOptions options;
    options.withChannel = true;
    Pair pair(options);
    REQUIRE(pair.a.ok());
    REQUIRE(pair.b.ok());
    REQUIRE(connectPair(pair.a, pair.b) == 0);
    const int fd = pair.a.channel->fd;
    REQUIRE(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) == 0);
    ibv_cq* eventCq = nullptr;
    void* eventContext = nullptr;
    errno = 0;
    CHECK(verbs().getCqEvent(pair.a.channel, &eventCq, &eventContext) == -1);
    CHECK(errno == EAGAIN);

    // Not armed: the completion arrives, the fd stays quiet.
    REQUIRE(postWrite(pair.a, 1, 0, 8, pair.b.address(), pair.b.mr->rkey) == 0);
    CHECK(pollFor(pair.a.cq, 1).size() == 1);
    CHECK_FALSE(readable(fd, 20));

    // Armed: the next completion makes it readable, once.
    REQUIRE(ibv_req_notify_cq(pair.a.cq, 0) == 0);
    CHECK_FALSE(readable(fd, 0));
    REQUIRE(postWrite(pair.a, 2, 0, 8, pair.b.address(), pair.b.mr->rkey) == 0);
    CHECK(readable(fd, 5000));
    REQUIRE(verbs().getCqEvent(pair.a.channel, &eventCq, &eventContext) == 0);
    CHECK(eventCq == pair.a.cq);
    CHECK(eventContext == &pair.a);
    CHECK_FALSE(readable(fd, 0));
    REQUIRE(pollFor(pair.a.cq, 1).size() == 1);
    REQUIRE(postWrite(pair.a, 3, 0, 8, pair.b.address(), pair.b.mr->rkey) == 0);
    CHECK(pollFor(pair.a.cq, 1).size() == 1);
    CHECK_FALSE(readable(fd, 0));  // the arm was used up

    // Unacknowledged events keep the CQ alive (the real library would block).
    ibv_qp_attr reset{};
    reset.qp_state = IBV_QPS_RESET;
    REQUIRE(verbs().modifyQp(pair.a.qp, &reset, IBV_QP_STATE) == 0);
    REQUIRE(verbs().destroyQp(pair.a.qp) == 0);
    pair.a.qp = nullptr;
    CHECK(verbs().destroyCq(pair.a.cq) == EBUSY);
    verbs().ackCqEvents(pair.a.cq, 1);
    CHECK(pair.a.cq->comp_events_completed == 1);
  }
  CHECK(verbs().liveObjects() == 0);
}

TEST_CASE_METHOD(FakeVerbsTest, "a blocking ibv_get_cq_event returns when a completion arrives",
                 "[rdma]") {
  {
    EndpointOptions options;
    options.withChannel = true;
    Pair pair(options);
    REQUIRE(pair.a.ok());
    REQUIRE(pair.b.ok());
    REQUIRE(connectPair(pair.a, pair.b) == 0);
    REQUIRE(ibv_req_notify_cq(pair.b.cq, 0) == 0);
    REQUIRE(postEmptyRecv(pair.b, 5) == 0);
    std::atomic<bool> woke{false};
    ibv_cq* eventCq = nullptr;
    void* eventContext = nullptr;
    int result = -2;
    std::thread waiter([&] {
      result = verbs().getCqEvent(pair.b.channel, &eventCq, &eventContext);
      woke = true;
    });
    std::this_thread::sleep_for(20ms);
    CHECK_FALSE(woke);
    REQUIRE(postWrite(pair.a, 1, 0, 8, pair.b.address(), pair.b.mr->rkey, 1u) == 0);
    waiter.join();
    CHECK(result == 0);
    CHECK(eventCq == pair.b.cq);
    verbs().ackCqEvents(eventCq, 1);
    CHECK(pollFor(pair.b.cq, 1).size() == 1);
  }
  CHECK(verbs().liveObjects() == 0);
}

}  // namespace weft::fake_verbs::test
