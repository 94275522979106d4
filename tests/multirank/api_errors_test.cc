// Bad input gets the right code and a message naming the argument, and the communicator keeps
// working afterwards.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "multirank/rank_threads.h"

namespace weft::test {
namespace {

struct Expectation {
  const char* what;
  weftResult_t code;
  const char* mentions;
};

// Each entry makes one bad call; the lambda gets a valid comm and a scratch buffer.
struct BadCall {
  Expectation expect;
  weftResult_t (*call)(weftComm_t comm, float* buf);
};

const BadCall kBadCalls[] = {
    {{"NULL sendbuff with count > 0", weftInvalidArgument, "sendbuff"},
     [](weftComm_t c, float* b) {
       return weftAllReduce(nullptr, b, 4, weftFloat32, weftSum, c, nullptr);
     }},
    {{"NULL recvbuff with count > 0", weftInvalidArgument, "recvbuff"},
     [](weftComm_t c, float* b) { return weftAllGather(b, nullptr, 4, weftFloat32, c, nullptr); }},
    {{"bad datatype", weftInvalidArgument, "datatype"},
     [](weftComm_t c, float* b) {
       return weftAllReduce(b, b, 4, static_cast<weftDataType_t>(42), weftSum, c, nullptr);
     }},
    {{"bad op", weftInvalidArgument, "op"},
     [](weftComm_t c, float* b) {
       return weftReduceScatter(b, b, 1, weftFloat32, static_cast<weftRedOp_t>(-3), c, nullptr);
     }},
    {{"root out of range", weftInvalidArgument, "root 2"},
     [](weftComm_t c, float* b) { return weftBroadcast(b, b, 4, weftFloat32, 2, c, nullptr); }},
    {{"negative root", weftInvalidArgument, "root -1"},
     [](weftComm_t c, float* b) {
       return weftReduce(b, b, 4, weftFloat32, weftSum, -1, c, nullptr);
     }},
    {{"peer out of range", weftInvalidArgument, "peer 7"},
     [](weftComm_t c, float* b) { return weftSend(b, 4, weftFloat32, 7, c, nullptr); }},
    {{"count overflow", weftInvalidArgument, "count"},
     [](weftComm_t c, float* b) {
       return weftAllGather(b, b, SIZE_MAX / 2, weftFloat64, c, nullptr);
     }},
};

}  // namespace

TEST_CASE("bad arguments are reported by name and leave the communicator usable", "[api]") {
  std::mutex mutex;
  std::vector<std::string> failures;
  auto failed = [&](const std::string& what) {
    std::lock_guard<std::mutex> lock(mutex);
    failures.push_back(what);
  };
  std::string init = runAsThreads(2, [&](weftComm_t comm, int rank) {
    float buf[16] = {};
    for (const BadCall& bad : kBadCalls) {
      weftResult_t result = bad.call(comm, buf);
      std::string message = weftGetLastError(comm);
      if (result != bad.expect.code) {
        failed(std::string(bad.expect.what) + ": returned " + weftGetErrorString(result));
      }
      if (message.find(bad.expect.mentions) == std::string::npos) {
        failed(std::string(bad.expect.what) + ": message '" + message + "' does not mention '" +
               bad.expect.mentions + "'");
      }
      // The communicator still works: a real all-reduce after every bad call.
      float value = static_cast<float>(rank + 1);
      float sum = 0;
      if (weftAllReduce(&value, &sum, 1, weftFloat32, weftSum, comm, nullptr) != weftSuccess ||
          sum != 3.0f) {
        failed(std::string(bad.expect.what) + ": the communicator no longer works");
      }
    }
    weftResult_t asyncError = weftInternalError;
    if (weftCommGetAsyncError(comm, &asyncError) != weftSuccess || asyncError != weftSuccess) {
      failed("argument errors must not put the communicator in a failed state");
    }
  });
  REQUIRE(init.empty());
  std::string all;
  for (const auto& failure : failures) all += failure + "\n";
  INFO(all);
  CHECK(failures.empty());
}

TEST_CASE("a request pointer is cleared when the call is refused", "[api]") {
  std::string init = runAsThreads(1, [&](weftComm_t comm, int) {
    weftRequest_t request = reinterpret_cast<weftRequest_t>(0x1);
    CHECK(weftAllReduce(nullptr, nullptr, 3, weftFloat32, weftSum, comm, &request) ==
          weftInvalidArgument);
    CHECK(request == nullptr);
  });
  REQUIRE(init.empty());
}

TEST_CASE("a destroyed communicator is refused, not dereferenced", "[api]") {
  weftUniqueId id;
  REQUIRE(weftGetUniqueId(&id) == weftSuccess);
  weftComm_t comm = nullptr;
  REQUIRE(weftCommInitRank(&comm, 1, id, 0) == weftSuccess);
  REQUIRE(weftCommDestroy(comm) == weftSuccess);
  float value = 1;
  CHECK(weftAllReduce(&value, &value, 1, weftFloat32, weftSum, comm, nullptr) ==
        weftInvalidArgument);
  CHECK(std::string(weftGetLastError(nullptr)).find("comm") != std::string::npos);
  CHECK(weftCommDestroy(comm) == weftInvalidArgument);
  CHECK(weftAllReduce(&value, &value, 1, weftFloat32, weftSum, nullptr, nullptr) ==
        weftInvalidArgument);
}

TEST_CASE("destroying or aborting a NULL communicator succeeds, as in NCCL", "[api]") {
  CHECK(weftCommDestroy(nullptr) == weftSuccess);
  CHECK(weftCommAbort(nullptr) == weftSuccess);
  // Any other handle that is not a live communicator is still refused.
  weftComm_t bogus = reinterpret_cast<weftComm_t>(&bogus);
  CHECK(weftCommDestroy(bogus) == weftInvalidArgument);
  CHECK(weftCommAbort(bogus) == weftInvalidArgument);
}

TEST_CASE("a call given a NULL communicator does not keep the next one from being destroyed",
          "[api]") {
  // A NULL handle once pinned a free slot of the handle table, and the communicator that took
  // that slot next waited forever in weftCommDestroy for the call to leave.
  weftUniqueId id;
  REQUIRE(weftGetUniqueId(&id) == weftSuccess);
  weftComm_t comm = nullptr;
  REQUIRE(weftCommInitRank(&comm, 1, id, 0) == weftSuccess);
  REQUIRE(weftCommDestroy(comm) == weftSuccess);  // leaves its slot free
  float value = 1;
  CHECK(weftAllReduce(&value, &value, 1, weftFloat32, weftSum, nullptr, nullptr) ==
        weftInvalidArgument);
  REQUIRE(weftGetUniqueId(&id) == weftSuccess);
  REQUIRE(weftCommInitRank(&comm, 1, id, 0) == weftSuccess);
  // On a thread of its own, so that a destroy that never returns fails the test, not hangs it.
  auto result = std::make_shared<std::promise<weftResult_t>>();
  std::future<weftResult_t> destroyed = result->get_future();
  std::thread([comm, result] { result->set_value(weftCommDestroy(comm)); }).detach();
  REQUIRE(destroyed.wait_for(std::chrono::seconds(20)) == std::future_status::ready);
  CHECK(destroyed.get() == weftSuccess);
}

TEST_CASE("init arguments are checked", "[api]") {
  weftUniqueId id;
  REQUIRE(weftGetUniqueId(&id) == weftSuccess);
  weftComm_t comm = nullptr;
  CHECK(weftCommInitRank(&comm, 0, id, 0) == weftInvalidArgument);
  CHECK(std::string(weftGetLastError(nullptr)).find("nranks") != std::string::npos);
  CHECK(weftCommInitRank(&comm, 2, id, 2) == weftInvalidArgument);
  CHECK(std::string(weftGetLastError(nullptr)).find("rank 2") != std::string::npos);
  weftUniqueId garbage;
  std::memset(&garbage, 0x42, sizeof(garbage));
  CHECK(weftCommInitRank(&comm, 1, garbage, 0) == weftInvalidArgument);
  weftConfig_t config = WEFT_CONFIG_INITIALIZER;
  config.magic = 0;
  CHECK(weftCommInitRankConfig(&comm, 1, id, 0, &config) == weftInvalidArgument);
  CHECK(std::string(weftGetLastError(nullptr)).find("magic") != std::string::npos);
  // The id's root is still waiting for its one rank: use it so its server thread ends.
  REQUIRE(weftCommInitRank(&comm, 1, id, 0) == weftSuccess);
  CHECK(weftCommDestroy(comm) == weftSuccess);
}

}  // namespace weft::test
