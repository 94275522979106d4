// Fabric over fake transports that the tests script: routing per peer and to self, the deadline
// and its message, a transport's failure failing the fabric for good, abort waking a sleeping
// wait, and the sleep handshake with transports that have capabilities.
#include "fabric/fabric.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "unit/fake_transport.h"

namespace weft::test {
namespace {

using Clock = std::chrono::steady_clock;

// Every wait in these tests ends by then, so a broken fabric fails the test instead of hanging.
constexpr int64_t kHangGuardMs = 10000;

const std::vector<std::string> kPeerNames = {"rank 0 (self:10)", "rank 1 (hostA:11)",
                                             "rank 2 (hostB:12)", "rank 3 (hostB:13)"};

// Rank 0 of 4: `first` serves rank 1 and has capabilities, `second` serves ranks 2 and 3.
struct TwoTransports {
  TwoTransports(bool secondCapable = false) {
    REQUIRE(fabric.init().isOk());
    fabric.setTimeoutMs(kHangGuardMs);
    REQUIRE(fabric.attach(std::make_unique<FakeTransport>(first, true), {1}).isOk());
    REQUIRE(fabric.attach(std::make_unique<FakeTransport>(second, secondCapable), {2, 3}).isOk());
  }
  TransportScript first, second;  // declared first: they outlive the transports
  Fabric fabric{0, 4, kPeerNames};
};

void prepare(Xfer& xfer, Xfer::Kind kind, int peer, void* buf, size_t bytes, uint64_t tag = 0) {
  xfer.kind = kind;
  xfer.peer = peer;
  xfer.buf = buf;
  xfer.bytes = bytes;
  xfer.tag = tag;
}

// Runs the wait on another thread, and `then` once it has announced its first sleep.
template <typename Then>
Status waitWhileSleeping(Fabric& fabric, TransportScript& script, Xfer& xfer, Then then) {
  Status status = internalError("the wait did not return");
  std::thread waiter([&] { status = fabric.wait(&xfer); });
  bool announced = script.waitUntilSleepAnnounced(std::chrono::milliseconds(kHangGuardMs));
  then();
  waiter.join();
  REQUIRE(announced);
  return status;
}

}  // namespace

TEST_CASE_METHOD(TwoTransports, "each transfer goes to the transport serving its peer",
                 "[fabric]") {
  char buf[3][8] = {};
  Xfer xfers[3];
  prepare(xfers[0], Xfer::Kind::kSend, 1, buf[0], 8);
  prepare(xfers[1], Xfer::Kind::kRecv, 2, buf[1], 8);
  prepare(xfers[2], Xfer::Kind::kSend, 3, buf[2], 8);
  for (Xfer& xfer : xfers) fabric.post(&xfer);
  CHECK(first.record().posted == std::vector<Xfer*>{&xfers[0]});
  CHECK(second.record().posted == std::vector<Xfer*>{&xfers[1], &xfers[2]});

  first.script([](Plan& plan) { plan.completeAll = true; });
  second.script([](Plan& plan) { plan.completeAll = true; });
  Xfer* all[] = {&xfers[0], &xfers[1], &xfers[2]};
  REQUIRE(fabric.waitAll(all, 3).isOk());
  CHECK_FALSE(fabric.failed());
  fabric.close(true);
  // Gracefully, since nothing failed.
  CHECK(first.record().closes == std::vector<bool>{true});
  CHECK(second.record().closes == std::vector<bool>{true});
}

TEST_CASE_METHOD(TwoTransports, "a send to self meets the receive from self through memory",
                 "[fabric]") {
  char source[32], target[32] = {};
  for (size_t i = 0; i < sizeof(source); ++i) source[i] = static_cast<char>('a' + i % 26);
  Xfer send, recv;

  SECTION("in either posting order, the bytes are copied") {
    prepare(send, Xfer::Kind::kSend, 0, source, sizeof(source));
    prepare(recv, Xfer::Kind::kRecv, 0, target, sizeof(target));
    bool receiveFirst = GENERATE(false, true);
    fabric.post(receiveFirst ? &recv : &send);
    CHECK_FALSE((receiveFirst ? recv : send).done);
    fabric.post(receiveFirst ? &send : &recv);
    Xfer* both[] = {&send, &recv};
    REQUIRE(fabric.waitAll(both, 2).isOk());
    CHECK(std::memcmp(source, target, sizeof(source)) == 0);
  }
  SECTION("sizes that differ fail both sides") {
    prepare(send, Xfer::Kind::kSend, 0, source, 16);
    prepare(recv, Xfer::Kind::kRecv, 0, target, 8);
    fabric.post(&send);
    fabric.post(&recv);
    REQUIRE(send.done);
    REQUIRE(recv.done);
    CHECK(send.status.code() == weftInvalidUsage);
    CHECK(recv.status.message() == "send to self of 16 bytes met a receive of 8");
    CHECK(fabric.wait(&recv).code() == weftInvalidUsage);
    CHECK(target[0] == 0);
  }
  CHECK(first.record().posted.empty());
  CHECK(second.record().posted.empty());
}

TEST_CASE_METHOD(TwoTransports, "a transfer that never completes times out naming the awaited peer",
                 "[fabric]") {
  fabric.setTimeoutMs(200);
  fabric.setCurrentOp("allreduce", 12, "ring");
  char buf[64];
  Xfer done, pending;
  prepare(done, Xfer::Kind::kSend, 1, buf, 64, 4);
  prepare(pending, Xfer::Kind::kRecv, 2, buf, 64, 5);
  fabric.post(&done);
  fabric.post(&pending);
  first.script([](Plan& plan) { plan.completeAll = true; });

  auto started = Clock::now();
  Xfer* both[] = {&done, &pending};
  Status status = fabric.waitAll(both, 2);
  CHECK(Clock::now() - started < std::chrono::seconds(5));
  REQUIRE(status.code() == weftTimeout);
  CHECK(status.message() ==
        "timed out after 0.2 s in allreduce #12 (ring), waiting for rank 2 (hostB:12) to send 64 "
        "bytes (message 5 of the operation)");
  // No transport knew a culprit, so the awaited peer is the one announced.
  CHECK(first.record().announced == std::vector<int>{2});
  CHECK(second.record().announced == std::vector<int>{2});
  CHECK(fabric.failed());

  // Failed for good: a new transfer fails at once, without reaching its transport.
  Xfer later;
  prepare(later, Xfer::Kind::kSend, 3, buf, 8);
  fabric.post(&later);
  CHECK(later.done);
  CHECK(later.status.message() == status.message());
  CHECK(fabric.wait(&later).message() == status.message());
  CHECK(second.record().posted.size() == 1);
}

TEST_CASE_METHOD(TwoTransports,
                 "a failure reported by a transport fails the wait and the fabric for good",
                 "[fabric]") {
  char buf[8];
  Xfer toOne, toTwo;
  prepare(toOne, Xfer::Kind::kSend, 1, buf, 8);
  prepare(toTwo, Xfer::Kind::kRecv, 2, buf, 8);
  fabric.post(&toOne);
  fabric.post(&toTwo);
  // The second transport has read a notice naming rank 3 as the origin.
  second.script([](Plan& plan) { plan.culprit = 3; });
  first.script(
      [](Plan& plan) { plan.failure = remoteError("rank 1 (hostA:11) closed its connection"); });

  Status status = fabric.wait(&toOne);
  REQUIRE(status.code() == weftRemoteError);
  CHECK(status.message() ==
        "rank 1 (hostA:11) closed its connection (the failure started at rank 3 (hostB:13))");
  CHECK(first.record().findCulprit == 1);
  CHECK(second.record().findCulprit == 1);
  CHECK(first.record().announced == std::vector<int>{3});
  CHECK(second.record().announced == std::vector<int>{3});

  // Later waits neither progress the transports nor report anything else.
  int progressBefore = second.record().progress;
  second.script([](Plan& plan) { plan.completeAll = true; });
  Status again = fabric.wait(&toTwo);
  CHECK(again.code() == weftRemoteError);
  CHECK(again.message() == status.message());
  CHECK(second.record().progress == progressBefore);
  CHECK(first.record().findCulprit == 1);

  fabric.close(true);
  CHECK(first.record().closes == std::vector<bool>{false});
}

TEST_CASE_METHOD(TwoTransports, "a transfer its transport completes with an error fails the fabric",
                 "[fabric]") {
  char buf[8];
  Xfer xfer;
  prepare(xfer, Xfer::Kind::kRecv, 1, buf, 8);
  fabric.post(&xfer);
  xfer.complete(remoteError("rank 1 (hostA:11) sent 4 bytes for a receive of 8"));
  Status status = fabric.wait(&xfer);
  CHECK(status.code() == weftRemoteError);
  CHECK(status.message() == "rank 1 (hostA:11) sent 4 bytes for a receive of 8");
  CHECK(fabric.failed());
  CHECK(first.record().announced == std::vector<int>{-1});
}

TEST_CASE_METHOD(TwoTransports,
                 "abort from another thread wakes a sleeping wait which returns weftAborted",
                 "[fabric]") {
  char buf[8];
  Xfer xfer;
  prepare(xfer, Xfer::Kind::kRecv, 1, buf, 8);
  fabric.post(&xfer);

  int sleepsBeforeAbort = 0;
  Status status = waitWhileSleeping(fabric, first, xfer, [&] {
    sleepsBeforeAbort = first.record().prepareToSleep;
    fabric.abort();
  });
  CHECK(status.code() == weftAborted);
  // Noticed right after the sleep it ended (or the one the wait was entering), not after more
  // rounds of polling and sleeping.
  CHECK(first.record().prepareToSleep <= sleepsBeforeAbort + 1);
  CHECK(fabric.failed());
  CHECK_FALSE(xfer.done);
  CHECK(fabric.wait(&xfer).code() == weftAborted);
}

TEST_CASE_METHOD(TwoTransports,
                 "a transfer completed from another thread wakes the sleeping wait through the fd",
                 "[fabric]") {
  char buf[8];
  Xfer xfer;
  prepare(xfer, Xfer::Kind::kRecv, 1, buf, 8);
  fabric.post(&xfer);

  Status status = waitWhileSleeping(
      fabric, first, xfer, [&] { first.script([](Plan& plan) { plan.completeAll = true; }); });
  CHECK(status.isOk());
  CHECK(xfer.done);
  // Every sleep announced was ended, and the progress after it was told that it had slept.
  Record record = first.record();
  CHECK(record.finishSleep == record.prepareToSleep);
  CHECK(record.wokenProgress >= 1);
}

struct TwoCapableTransports : TwoTransports {
  TwoCapableTransports() : TwoTransports(true) {}
};

TEST_CASE_METHOD(TwoCapableTransports,
                 "a transport that refuses to sleep makes the wait poll again instead",
                 "[fabric]") {
  char buf[8];
  Xfer xfer;
  prepare(xfer, Xfer::Kind::kRecv, 2, buf, 8);
  fabric.post(&xfer);
  // The second refuses three times; then it agrees, and wakes the sleep it agreed to at once.
  second.script([](Plan& plan) {
    plan.sleepRefusals = 3;
    plan.wakeToComplete = true;
  });

  REQUIRE(fabric.wait(&xfer).isOk());
  Record one = first.record(), two = second.record();
  // The first agreed each time, so each refusal undid its announcement.
  CHECK(one.prepareToSleep == 4);
  CHECK(one.finishSleep == 4);
  CHECK(two.prepareToSleep == 4);
  CHECK(two.finishSleep == 1);
  // The first poll, one after each refusal (none told of a sleep), then the one after the sleep.
  CHECK(two.progress == 5);
  CHECK(two.wokenProgress == 1);
}

TEST_CASE_METHOD(TwoTransports,
                 "work that arrives in memory while the sleep is announced ends the wait unslept",
                 "[fabric]") {
  char buf[8];
  Xfer xfer;
  prepare(xfer, Xfer::Kind::kRecv, 1, buf, 8);
  fabric.post(&xfer);
  first.script([](Plan& plan) { plan.completeInMemory = true; });

  REQUIRE(fabric.wait(&xfer).isOk());
  Record record = first.record();
  CHECK(record.prepareToSleep == 1);
  CHECK(record.finishSleep == 1);
  CHECK(record.progress == 1);
  CHECK(record.wokenProgress == 0);
}

TEST_CASE_METHOD(TwoTransports,
                 "operationDone and memoryFreed reach every transport that has capabilities",
                 "[fabric]") {
  CHECK(fabric.windows() == nullptr);
  char staging[64];
  fabric.operationDone();
  fabric.operationDone();
  fabric.memoryFreed(staging, sizeof(staging));
  CHECK(first.record().operationDone == 2);
  CHECK(first.record().freed ==
        std::vector<std::pair<const void*, size_t>>{{staging, sizeof(staging)}});
  // The second has no capabilities, so the fabric must not reach it.
  CHECK(second.record().operationDone == 0);
  CHECK(second.record().freed.empty());
}

}  // namespace weft::test
