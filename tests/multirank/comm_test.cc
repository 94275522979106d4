// Communicator behaviour beyond single collectives: split, groups, timeouts and abort.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "multirank/rank_threads.h"

namespace weft::test {
namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

TEST_CASE("split by color orders ranks by key, and NOCOLOR gets no communicator", "[comm]") {
  constexpr int n = 5;
  std::vector<int> newRank(n, -2), newSize(n, -2), sums(n, -1);
  std::string init = runAsThreads(n, [&](weftComm_t comm, int rank) {
    int color = rank == 4 ? WEFT_SPLIT_NOCOLOR : rank % 2;
    weftComm_t sub = nullptr;
    if (weftCommSplit(comm, color, -rank, &sub, nullptr) != weftSuccess) return;
    // The parent still works after the split, for every rank.
    int value = rank;
    int parentSum = 0;
    weftAllReduce(&value, &parentSum, 1, weftInt32, weftSum, comm, nullptr);
    if (sub == nullptr) {
      newRank[rank] = -1;
      return;
    }
    weftCommUserRank(sub, &newRank[rank]);
    weftCommCount(sub, &newSize[rank]);
    weftAllReduce(&value, &sums[rank], 1, weftInt32, weftSum, sub, nullptr);
    if (parentSum != 0 + 1 + 2 + 3 + 4) sums[rank] = -100;
    weftCommDestroy(sub);
  });
  REQUIRE(init.empty());
  // Even ranks {0, 2} (4 opted out), odd ranks {1, 3}; keys -rank reverse the order.
  CHECK(newRank == std::vector<int>{1, 1, 0, 0, -1});
  CHECK(newSize == std::vector<int>{2, 2, 2, 2, -2});
  CHECK(sums == std::vector<int>{2, 4, 2, 4, -1});
}

TEST_CASE("a group of sends and receives around a ring completes through requests", "[comm]") {
  constexpr int n = 4;
  std::vector<int> received(n * 2, -1);
  std::string init = runAsThreads(n, [&](weftComm_t comm, int rank) {
    int next = (rank + 1) % n, prev = (rank + n - 1) % n;
    int out[2] = {rank * 10, rank * 10 + 1};
    int in[2] = {-1, -1};
    weftRequest_t recvRequest = nullptr;
    weftGroupStart();
    weftSend(&out[0], 1, weftInt32, next, comm, nullptr);
    weftSend(&out[1], 1, weftInt32, prev, comm, nullptr);
    weftRecv(&in[0], 1, weftInt32, prev, comm, &recvRequest);
    weftRecv(&in[1], 1, weftInt32, next, comm, nullptr);
    if (weftGroupEnd() != weftSuccess) return;
    if (weftWait(&recvRequest, 10000) != weftSuccess) return;
    received[rank * 2] = in[0];
    received[rank * 2 + 1] = in[1];
  });
  REQUIRE(init.empty());
  for (int rank = 0; rank < n; ++rank) {
    CHECK(received[rank * 2] == ((rank + n - 1) % n) * 10);
    CHECK(received[rank * 2 + 1] == ((rank + 1) % n) * 10 + 1);
  }
}

TEST_CASE("a request of a group is waited on by another thread before the group is issued",
          "[comm]") {
  // What a completion thread does (the torch backend's): it waits on requests as they are
  // handed out, while the issuing thread is still inside the group. Issuing the group must
  // wake that waiter, which the progress thread leaves the work to.
  constexpr int n = 2;
  std::atomic<int> wrong{0};
  std::string init = runAsThreads(n, [&](weftComm_t comm, int rank) {
    const int peer = 1 - rank;
    std::vector<float> out(1000, static_cast<float>(rank)), in(1000, -1.0f);
    weftRequest_t sendRequest = nullptr, recvRequest = nullptr;
    weftGroupStart();
    // Opposite orders on the two ranks: only a group lets both complete.
    if (rank == 0) {
      weftSend(out.data(), out.size(), weftFloat32, peer, comm, &sendRequest);
      weftRecv(in.data(), in.size(), weftFloat32, peer, comm, &recvRequest);
    } else {
      weftRecv(in.data(), in.size(), weftFloat32, peer, comm, &recvRequest);
      weftSend(out.data(), out.size(), weftFloat32, peer, comm, &sendRequest);
    }
    // Only the waiter waits: the issuing thread returns after the group, as Python does. A
    // waiter left asleep would only run the group when its own deadline passed (a hang, with
    // no deadline), so it must return well before that.
    std::atomic<bool> waiting{false};
    weftResult_t sent = weftInternalError, received = weftInternalError;
    double waitedSeconds = 0;
    std::thread waiter([&] {
      waiting = true;
      const auto start = Clock::now();
      sent = weftWait(&sendRequest, 20000);
      received = weftWait(&recvRequest, 20000);
      waitedSeconds = secondsSince(start);
    });
    while (!waiting) std::this_thread::yield();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (weftGroupEnd() != weftSuccess) ++wrong;
    waiter.join();
    if (sent != weftSuccess || received != weftSuccess || waitedSeconds > 10) ++wrong;
    if (in[999] != static_cast<float>(peer)) ++wrong;
  });
  REQUIRE(init.empty());
  CHECK(wrong == 0);
}

TEST_CASE("non-blocking calls run in issue order and overlap the caller", "[comm]") {
  constexpr int n = 3;
  constexpr int kCalls = 20;
  std::atomic<int> wrong{0};
  std::string init = runAsThreads(n, [&](weftComm_t comm, int rank) {
    std::vector<std::vector<int>> data(kCalls, std::vector<int>(1000));
    std::vector<weftRequest_t> requests(kCalls);
    for (int c = 0; c < kCalls; ++c) {
      for (int& x : data[c]) x = rank + c;
      weftAllReduce(data[c].data(), data[c].data(), 1000, weftInt32, weftSum, comm, &requests[c]);
    }
    for (int c = kCalls - 1; c >= 0; --c) {
      if (weftWait(&requests[c], 30000) != weftSuccess) ++wrong;
      if (data[c][999] != 0 + 1 + 2 + 3 * c) ++wrong;
    }
  });
  REQUIRE(init.empty());
  CHECK(wrong == 0);
}

TEST_CASE("a peer that never calls makes the survivor time out, naming it", "[comm][faults]") {
  weftConfig_t config = WEFT_CONFIG_INITIALIZER;
  config.timeoutMs = 1000;
  std::string message;
  weftResult_t result = weftSuccess, later = weftSuccess, asyncError = weftSuccess;
  double elapsed = 0;
  std::string init = runAsThreads(
      2,
      [&](weftComm_t comm, int rank) {
        if (rank == 1) {
          std::this_thread::sleep_for(std::chrono::milliseconds(1500));
          return;
        }
        float value = 1;
        auto start = Clock::now();
        result = weftAllReduce(&value, &value, 1, weftFloat32, weftSum, comm, nullptr);
        elapsed = secondsSince(start);
        message = weftGetLastError(comm);
        weftCommGetAsyncError(comm, &asyncError);
        later = weftBarrier(comm, nullptr);
      },
      &config);
  REQUIRE(init.empty());
  CHECK(result == weftTimeout);
  CHECK(elapsed < 5.0);
  CHECK(message.find("rank 1") != std::string::npos);
  CHECK(message.find("allreduce") != std::string::npos);
  CHECK(asyncError == weftTimeout);
  CHECK(later == weftTimeout);
}

TEST_CASE("weftCommAbort from another thread releases a blocked call", "[comm][faults]") {
  weftResult_t result = weftSuccess;
  double released = 0;
  std::string init = runAsThreads(2, [&](weftComm_t comm, int rank) {
    if (rank == 1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(800));
      return;  // never joins the all-reduce; destroyed by the helper after rank 0 is released
    }
    std::atomic<bool> started{false};
    Clock::time_point abortAt;
    std::thread aborter([&] {
      while (!started) std::this_thread::yield();
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      abortAt = Clock::now();
      weftCommAbort(comm);
    });
    float value = 1;
    started = true;
    result = weftAllReduce(&value, &value, 1, weftFloat32, weftSum, comm, nullptr);
    released = secondsSince(abortAt);
    aborter.join();
  });
  // rank 0's comm was aborted: runAsThreads' destroy of it is refused, which is fine.
  REQUIRE(init.empty());
  CHECK(result == weftAborted);
  CHECK(released < 0.5);
}

TEST_CASE("after a failure, a new communicator works in the same processes", "[comm][faults]") {
  // An elastic restart: rank 2 aborts, ranks 0 and 1 see their collective fail (told by rank
  // 2's failure notice, or by its connections closing), everyone releases the old communicator
  // and joins a new one, which works.
  constexpr int n = 3;
  std::vector<weftResult_t> failed(n, weftSuccess);
  std::vector<std::string> messages(n);
  std::vector<float> restarted(n, 0);
  weftUniqueId second;
  REQUIRE(weftGetUniqueId(&second) == weftSuccess);
  // Init returning on rank 2 does not mean it returned everywhere: a rank still finishing its
  // init when rank 2 aborts would fail its init, not the collective this test is about.
  std::atomic<int> initialized{0};
  std::string init = runAsThreads(n, [&](weftComm_t comm, int rank) {
    float one = 1;
    ++initialized;
    if (rank == 2) {
      while (initialized.load() < n) std::this_thread::yield();
      weftCommAbort(comm);
      failed[rank] = weftRemoteError;
    } else {
      float sum = 0;
      failed[rank] = weftAllReduce(&one, &sum, 1, weftFloat32, weftSum, comm, nullptr);
      messages[rank] = weftGetLastError(comm);
    }
    weftComm_t fresh = nullptr;
    if (weftCommInitRank(&fresh, n, second, rank) != weftSuccess) return;
    weftAllReduce(&one, &restarted[rank], 1, weftFloat32, weftSum, fresh, nullptr);
    weftCommDestroy(fresh);
  });
  // rank 2's aborted comm is refused by runAsThreads' destroy, which is fine.
  REQUIRE(init.empty());
  for (int rank = 0; rank < 2; ++rank) {
    INFO("rank " << rank << ": " << messages[rank]);
    CHECK(failed[rank] == weftRemoteError);
    CHECK(messages[rank].find("rank 2") != std::string::npos);
  }
  CHECK(restarted == std::vector<float>(n, 3.0f));
}

}  // namespace weft::test
