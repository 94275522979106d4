// Non-blocking sends and receives outside a group: posted and left outstanding, so that calls
// after them run while they wait for their peers (core/outstanding.h).
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
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

// Far beyond what any transport buffers, so that a send completes only once its receive is
// posted.
constexpr size_t kLarge = 4 << 20;  // floats: 16 MiB

const weftConfig_t* transportConfig(const char* transport) {
  static weftConfig_t configs[2] = {WEFT_CONFIG_INITIALIZER, WEFT_CONFIG_INITIALIZER};
  weftConfig_t* config = &configs[transport == nullptr ? 0 : 1];
  config->transport = transport;
  config->timeoutMs = 60000;
  return config;
}

}  // namespace

TEST_CASE("two ranks that both send first complete once their receives follow", "[p2p]") {
  // What torch's batch_isend_irecv issues call by call where it does not group them.
  const char* transport = GENERATE(static_cast<const char*>(nullptr), "tcp");
  CAPTURE(transport == nullptr ? "default" : transport);
  std::atomic<int> wrong{0};
  std::string init = runAsThreads(
      2,
      [&](weftComm_t comm, int rank) {
        const int peer = 1 - rank;
        std::vector<float> out(kLarge, static_cast<float>(rank + 1)), in(kLarge, -1.0f);
        weftRequest_t sent = nullptr, received = nullptr;
        if (weftSend(out.data(), kLarge, weftFloat32, peer, comm, &sent) != weftSuccess) ++wrong;
        if (weftRecv(in.data(), kLarge, weftFloat32, peer, comm, &received) != weftSuccess) {
          ++wrong;
        }
        // A collective while both transfers are in flight: its messages queue behind them on
        // both ranks alike, and it completes.
        int value = rank + 1, sum = 0;
        if (weftAllReduce(&value, &sum, 1, weftInt32, weftSum, comm, nullptr) != weftSuccess ||
            sum != 3) {
          ++wrong;
        }
        if (weftWait(&received, 30000) != weftSuccess) ++wrong;
        if (weftWait(&sent, 30000) != weftSuccess) ++wrong;
        if (in.front() != static_cast<float>(peer + 1) ||
            in.back() != static_cast<float>(peer + 1)) {
          ++wrong;
        }
      },
      transportConfig(transport));
  REQUIRE(init.empty());
  CHECK(wrong == 0);
}

TEST_CASE("sends and receives posted in opposite orders on two ranks complete", "[p2p]") {
  // gloo's isend/irecv allow it; messages still match in order per direction.
  std::atomic<int> wrong{0};
  std::string init = runAsThreads(2, [&](weftComm_t comm, int rank) {
    const int peer = 1 - rank;
    std::vector<float> out(kLarge, static_cast<float>(rank)), in(kLarge, -1.0f);
    std::vector<int> small(3, rank), smallIn(3, -1);
    weftRequest_t requests[3] = {nullptr, nullptr, nullptr};
    if (rank == 0) {
      weftRecv(in.data(), kLarge, weftFloat32, peer, comm, &requests[0]);
      weftRecv(smallIn.data(), 3, weftInt32, peer, comm, &requests[1]);
      weftSend(out.data(), kLarge, weftFloat32, peer, comm, &requests[2]);
    } else {
      weftSend(out.data(), kLarge, weftFloat32, peer, comm, &requests[2]);
      weftSend(small.data(), 3, weftInt32, peer, comm, &requests[1]);
      weftRecv(in.data(), kLarge, weftFloat32, peer, comm, &requests[0]);
    }
    // Completion seen through weftTest alone: the progress thread advances the transfers.
    const auto start = Clock::now();
    int pending = 3;
    while (pending > 0 && secondsSince(start) < 30) {
      pending = 0;
      for (weftRequest_t& request : requests) {
        if (request == nullptr) continue;
        int done = 0;
        if (weftTest(&request, &done) != weftSuccess) ++wrong;
        if (!done) ++pending;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (pending != 0) ++wrong;
    if (in.back() != static_cast<float>(peer)) ++wrong;
    if (rank == 0 && smallIn != std::vector<int>(3, 1)) ++wrong;
  });
  REQUIRE(init.empty());
  CHECK(wrong == 0);
}

TEST_CASE("blocking calls issued behind an outstanding receive run before its message comes",
          "[p2p]") {
  // Rank 2 sends to rank 0 only after rank 1 tells it to, and rank 1 only after its exchange
  // with rank 0, which rank 0 issues after its receive from rank 2.
  std::atomic<int> wrong{0};
  std::string init = runAsThreads(3, [&](weftComm_t comm, int rank) {
    std::vector<float> data(kLarge, static_cast<float>(rank));
    int token = rank;
    if (rank == 0) {
      weftRequest_t request = nullptr;
      if (weftRecv(data.data(), kLarge, weftFloat32, 2, comm, &request) != weftSuccess) ++wrong;
      if (weftSend(&token, 1, weftInt32, 1, comm, nullptr) != weftSuccess) ++wrong;
      if (weftRecv(&token, 1, weftInt32, 1, comm, nullptr) != weftSuccess || token != 1) ++wrong;
      if (weftWait(&request, 30000) != weftSuccess || data.back() != 2.0f) ++wrong;
    } else if (rank == 1) {
      if (weftRecv(&token, 1, weftInt32, 0, comm, nullptr) != weftSuccess || token != 0) ++wrong;
      token = 1;
      if (weftSend(&token, 1, weftInt32, 0, comm, nullptr) != weftSuccess) ++wrong;
      if (weftSend(&token, 1, weftInt32, 2, comm, nullptr) != weftSuccess) ++wrong;
    } else {
      if (weftRecv(&token, 1, weftInt32, 1, comm, nullptr) != weftSuccess || token != 1) ++wrong;
      if (weftSend(data.data(), kLarge, weftFloat32, 0, comm, nullptr) != weftSuccess) ++wrong;
    }
  });
  REQUIRE(init.empty());
  CHECK(wrong == 0);
}

TEST_CASE("a split waits for the calls before it but not for an outstanding receive", "[p2p]") {
  // Rank 1 sends only after the split: rank 0's receive is still in flight during it.
  std::atomic<int> wrong{0};
  std::string init = runAsThreads(2, [&](weftComm_t comm, int rank) {
    std::vector<float> data(kLarge, static_cast<float>(rank));
    weftRequest_t request = nullptr;
    if (rank == 0) weftRecv(data.data(), kLarge, weftFloat32, 1, comm, &request);
    weftComm_t sub = nullptr;
    if (weftCommSplit(comm, 0, rank, &sub, nullptr) != weftSuccess || sub == nullptr) ++wrong;
    if (rank == 1 && weftSend(data.data(), kLarge, weftFloat32, 0, comm, nullptr) != weftSuccess) {
      ++wrong;
    }
    if (rank == 0 && (weftWait(&request, 30000) != weftSuccess || data.back() != 1.0f)) ++wrong;
    weftCommDestroy(sub);
  });
  REQUIRE(init.empty());
  CHECK(wrong == 0);
}

TEST_CASE("an outstanding send whose receive never comes times out, naming the peer",
          "[p2p][faults]") {
  weftConfig_t config = WEFT_CONFIG_INITIALIZER;
  config.timeoutMs = 1000;
  weftResult_t waited = weftSuccess, later = weftSuccess;
  std::string message;
  double elapsed = 0;
  std::string init = runAsThreads(
      2,
      [&](weftComm_t comm, int rank) {
        if (rank == 1) {
          std::this_thread::sleep_for(std::chrono::milliseconds(1500));
          return;
        }
        std::vector<float> out(kLarge, 1.0f);
        weftRequest_t request = nullptr;
        const auto start = Clock::now();
        if (weftSend(out.data(), kLarge, weftFloat32, 1, comm, &request) != weftSuccess) return;
        // Not done within a short wait: the request stays valid.
        if (weftWait(&request, 50) != weftTimeout || request == nullptr) return;
        waited = weftWait(&request, -1);
        elapsed = secondsSince(start);
        message = weftGetLastError(comm);
        later = weftBarrier(comm, nullptr);
      },
      &config);
  REQUIRE(init.empty());
  CHECK(waited == weftTimeout);
  CHECK(elapsed < 5.0);
  CHECK(message.find("rank 1") != std::string::npos);
  CHECK(message.find("send/recv") != std::string::npos);
  CHECK(later == weftTimeout);
}

TEST_CASE("a receive never answered fails the communicator while later calls keep it busy",
          "[p2p][faults]") {
  // Rank 0 waits for a message from rank 2 that never comes, while it exchanges with rank 1 call
  // after call: the communicator is never idle, so only the receive's own deadline, counted from
  // posting, can end it.
  weftConfig_t config = WEFT_CONFIG_INITIALIZER;
  config.timeoutMs = 1000;
  constexpr double kGiveUpSeconds = 10.0;
  std::atomic<bool> over{false};
  weftResult_t failed[2] = {weftSuccess, weftSuccess};
  weftResult_t waited = weftSuccess;
  std::string message;
  std::string init = runAsThreads(
      3,
      [&](weftComm_t comm, int rank) {
        const auto start = Clock::now();
        if (rank == 2) {
          while (!over.load() && secondsSince(start) < kGiveUpSeconds) {
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
          }
          return;
        }
        std::vector<float> in(16);
        weftRequest_t request = nullptr;
        if (rank == 0 && weftRecv(in.data(), in.size(), weftFloat32, 2, comm, &request) != 0) {
          return;
        }
        const int peer = 1 - rank;
        int token = rank;
        weftResult_t result = weftSuccess;
        while (result == weftSuccess && secondsSince(start) < kGiveUpSeconds) {
          result = rank == 0 ? weftSend(&token, 1, weftInt32, peer, comm, nullptr)
                             : weftRecv(&token, 1, weftInt32, peer, comm, nullptr);
          if (result != weftSuccess) break;
          result = rank == 0 ? weftRecv(&token, 1, weftInt32, peer, comm, nullptr)
                             : weftSend(&token, 1, weftInt32, peer, comm, nullptr);
        }
        failed[rank] = result;
        if (rank == 0) {
          message = weftGetLastError(comm);
          waited = weftWait(&request, -1);
          over.store(true);
        }
      },
      &config);
  REQUIRE(init.empty());
  CHECK(failed[0] == weftTimeout);
  CHECK(message.find("send/recv") != std::string::npos);
  CHECK(message.find("rank 2") != std::string::npos);
  CHECK(waited == weftTimeout);
  // Rank 1 learns of the failure from rank 0 (or times out waiting for it).
  CHECK(failed[1] != weftSuccess);
}

TEST_CASE("a collective's message meeting a pending receive fails, saying why", "[p2p][faults]") {
  // Messages between two ranks match in posting order, collectives' included: rank 0's pending
  // receive from rank 1 is met by rank 1's all-reduce message (gloo and MPI match them apart).
  const char* transport = GENERATE(static_cast<const char*>(nullptr), "tcp");
  CAPTURE(transport ? transport : "default");
  weftResult_t reduced = weftSuccess;
  std::string message;
  std::string init = runAsThreads(
      2,
      [&](weftComm_t comm, int rank) {
        std::vector<float> in(16), data(1 << 16, 1.0f);
        weftRequest_t request = nullptr;
        if (rank == 0 && weftRecv(in.data(), in.size(), weftFloat32, 1, comm, &request) != 0) {
          return;
        }
        weftResult_t result = weftAllReduce(data.data(), data.data(), data.size(), weftFloat32,
                                            weftSum, comm, nullptr);
        if (rank == 0) {
          reduced = result;
          message = weftGetLastError(comm);
          weftWait(&request, -1);
        }
      },
      transportConfig(transport));
  REQUIRE(init.empty());
  CHECK(reduced == weftInvalidUsage);
  CHECK(message.find("message mismatch") != std::string::npos);
  CHECK(message.find("point-to-point message and a collective's met") != std::string::npos);
}

TEST_CASE("weftCommAbort releases a wait on an outstanding receive", "[p2p][faults]") {
  weftResult_t waited = weftSuccess;
  double released = 0;
  std::string init = runAsThreads(2, [&](weftComm_t comm, int rank) {
    if (rank == 1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(800));
      return;
    }
    std::vector<float> in(16);
    weftRequest_t request = nullptr;
    if (weftRecv(in.data(), in.size(), weftFloat32, 1, comm, &request) != weftSuccess) return;
    Clock::time_point abortAt;
    std::thread aborter([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      abortAt = Clock::now();
      weftCommAbort(comm);
    });
    waited = weftWait(&request, -1);
    released = secondsSince(abortAt);
    aborter.join();
  });
  REQUIRE(init.empty());
  CHECK(waited == weftAborted);
  CHECK(released < 0.5);
}

}  // namespace weft::test
