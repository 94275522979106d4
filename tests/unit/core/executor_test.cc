// Executor: operations run one at a time in issue order, a waiting thread runs queued work itself
// instead of handing it to the progress thread, and cancelling the queue completes what never ran.
// An executor that was never started has no progress thread, so whatever runs there ran on a
// helping caller: that is how these tests tell helping apart from the progress thread.
#include "core/executor.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <numeric>
#include <thread>
#include <vector>

namespace weft {
namespace {

// Every wait in these tests ends by then, so a broken executor fails the test instead of hanging.
constexpr auto kHangGuard = std::chrono::seconds(10);
constexpr int64_t kHangGuardMs = 10000;

// The operation's identity travels in its count.
Op numbered(size_t id, bool withCompletion = true) {
  CollArgs args;
  args.count = id;
  Op op = Op::call(args);
  if (withCompletion) op.completion = std::make_shared<Completion>();
  return op;
}

std::vector<size_t> upTo(size_t count) {
  std::vector<size_t> ids(count);
  std::iota(ids.begin(), ids.end(), 0);
  return ids;
}

// The RunFn under test: records which operations ran, in what order and on which thread, and
// holds the operation numbered `blocked` until release(), so that work can pile up behind it.
class Recorder {
 public:
  static constexpr size_t kNone = ~size_t{0};

  explicit Recorder(size_t blocked = kNone) : blocked_(blocked) {}

  Executor::RunFn runFn() {
    return [this](const Op& op) { return run(op); };
  }

  bool waitUntilBlocked() {
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_for(lock, kHangGuard, [&] { return blockedEntered_; });
  }
  void release() {
    std::lock_guard<std::mutex> lock(mutex_);
    released_ = true;
    changed_.notify_all();
  }

  std::vector<size_t> order() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return order_;
  }
  std::vector<std::thread::id> threads() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return threads_;
  }

 private:
  Status run(const Op& op) {
    size_t id = op.single.count;
    std::unique_lock<std::mutex> lock(mutex_);
    order_.push_back(id);
    threads_.push_back(std::this_thread::get_id());
    if (id == blocked_) {
      blockedEntered_ = true;
      changed_.notify_all();
      if (!changed_.wait_for(lock, kHangGuard, [&] { return released_; })) {
        return internalError("the blocked operation was never released");
      }
    }
    // A result that names its operation shows that each caller gets its own operation's result.
    return id % 2 == 0 ? Status::ok() : invalidUsage("operation " + std::to_string(id));
  }

  const size_t blocked_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  bool blockedEntered_ = false;
  bool released_ = false;
  std::vector<size_t> order_;
  std::vector<std::thread::id> threads_;
};

void checkResult(const Status& status, size_t id) {
  if (id % 2 == 0) {
    CHECK(status.isOk());
  } else {
    CHECK(status.code() == weftInvalidUsage);
    CHECK(status.message() == "operation " + std::to_string(id));
  }
}

}  // namespace

TEST_CASE("enqueued and blocking operations run in exactly the order they were issued",
          "[executor]") {
  Recorder recorder;
  Executor executor(recorder.runFn());
  executor.start();
  constexpr size_t kOps = 300;
  std::vector<std::shared_ptr<Completion>> completions(kOps);
  for (size_t id = 0; id < kOps; ++id) {
    if (id % 7 == 3) {
      checkResult(executor.runBlocking(numbered(id, false)), id);
      continue;
    }
    Op op = numbered(id);
    completions[id] = op.completion;
    executor.enqueue(std::move(op));
  }
  executor.drain();
  CHECK(recorder.order() == upTo(kOps));
  for (size_t id = 0; id < kOps; ++id) {
    if (!completions[id]) continue;
    REQUIRE(completions[id]->isDone());
    checkResult(completions[id]->result(), id);
  }
}

TEST_CASE("a blocking call on an idle executor runs on the calling thread", "[executor]") {
  Recorder recorder;
  Executor executor(recorder.runFn());
  executor.start();
  for (size_t id = 0; id < 5; ++id) checkResult(executor.runBlocking(numbered(id, false)), id);
  CHECK(recorder.order() == upTo(5));
  for (std::thread::id ranOn : recorder.threads()) CHECK(ranOn == std::this_thread::get_id());
}

TEST_CASE("a blocking call behind queued work runs that work first on the calling thread",
          "[executor]") {
  Recorder recorder;
  Executor executor(recorder.runFn());  // not started: only the caller can run the queue
  std::vector<std::shared_ptr<Completion>> queued;
  for (size_t id = 0; id < 10; ++id) {
    Op op = numbered(id);
    queued.push_back(op.completion);
    executor.enqueue(std::move(op));
  }
  checkResult(executor.runBlocking(numbered(10, false)), 10);
  CHECK(recorder.order() == upTo(11));
  for (std::thread::id ranOn : recorder.threads()) CHECK(ranOn == std::this_thread::get_id());
  for (size_t id = 0; id < queued.size(); ++id) {
    REQUIRE(queued[id]->isDone());
    checkResult(queued[id]->result(), id);
  }
}

TEST_CASE("a blocking call waits for the operation running on the progress thread and keeps order",
          "[executor]") {
  Recorder recorder(0);
  Executor executor(recorder.runFn());
  executor.start();
  executor.enqueue(numbered(0));
  REQUIRE(recorder.waitUntilBlocked());
  for (size_t id = 1; id < 6; ++id) executor.enqueue(numbered(id));
  // Released from another thread while this one is (most likely) inside runBlocking; the order
  // must hold whichever comes first.
  std::thread releaser([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    recorder.release();
  });
  Status last = executor.runBlocking(numbered(6, false));
  releaser.join();
  checkResult(last, 6);
  CHECK(recorder.order() == upTo(7));
  CHECK(recorder.threads().front() != std::this_thread::get_id());
  CHECK(recorder.threads().back() == std::this_thread::get_id());
}

TEST_CASE("waiting for the last of a burst of enqueued operations runs them on the waiting thread",
          "[executor]") {
  Recorder recorder;
  Executor executor(recorder.runFn());  // not started: the burst completes only by helping
  constexpr size_t kOps = 50;
  std::vector<std::shared_ptr<Completion>> completions;
  for (size_t id = 0; id < kOps; ++id) {
    Op op = numbered(id);
    completions.push_back(op.completion);
    executor.enqueue(std::move(op));
  }
  REQUIRE(executor.waitFor(*completions.back(), kHangGuardMs));
  CHECK(recorder.order() == upTo(kOps));
  for (std::thread::id ranOn : recorder.threads()) CHECK(ranOn == std::this_thread::get_id());
  for (size_t id = 0; id < kOps; ++id) {
    REQUIRE(completions[id]->isDone());
    checkResult(completions[id]->result(), id);
  }
}

TEST_CASE(
    "cancelling the queue completes the queued operations with the reason and never runs them",
    "[executor]") {
  Recorder recorder(0);
  Executor executor(recorder.runFn());
  executor.start();
  Op running = numbered(0);
  std::shared_ptr<Completion> runningDone = running.completion;
  executor.enqueue(std::move(running));
  REQUIRE(recorder.waitUntilBlocked());
  std::vector<std::shared_ptr<Completion>> queued;
  for (size_t id = 1; id < 4; ++id) {
    Op op = numbered(id);
    queued.push_back(op.completion);
    executor.enqueue(std::move(op));
  }

  executor.cancelQueued(Status(weftAborted, "the communicator was aborted"));
  for (const auto& completion : queued) {
    REQUIRE(completion->isDone());
    CHECK(completion->result().code() == weftAborted);
    CHECK(completion->result().message() == "the communicator was aborted");
  }
  CHECK_FALSE(runningDone->isDone());

  recorder.release();
  REQUIRE(executor.waitFor(*runningDone, kHangGuardMs));
  CHECK(runningDone->result().isOk());
  // The executor stays usable after a cancel.
  checkResult(executor.runBlocking(numbered(4, false)), 4);
  CHECK(recorder.order() == std::vector<size_t>{0, 4});
}

TEST_CASE("a thread waiting on a completion is released when the progress thread completes it",
          "[executor]") {
  Recorder recorder(0);
  Executor executor(recorder.runFn());
  executor.start();
  Op op = numbered(0);
  std::shared_ptr<Completion> completion = op.completion;
  executor.enqueue(std::move(op));
  REQUIRE(recorder.waitUntilBlocked());

  bool waited = false;
  std::thread::id waiterId;
  std::thread waiter([&] {
    waiterId = std::this_thread::get_id();
    waited = executor.waitFor(*completion, kHangGuardMs);
  });
  recorder.release();
  waiter.join();
  CHECK(waited);
  REQUIRE(completion->isDone());
  CHECK(completion->result().isOk());
  // Blocked before the waiter existed, so the progress thread ran it.
  std::thread::id ranOn = recorder.threads().front();
  CHECK(ranOn != std::this_thread::get_id());
  CHECK(ranOn != waiterId);
}

TEST_CASE("a timed wait gives up while the operation is blocked and the operation completes later",
          "[executor]") {
  Recorder recorder(1);
  Executor executor(recorder.runFn());
  executor.start();
  Op op = numbered(1);
  std::shared_ptr<Completion> completion = op.completion;
  executor.enqueue(std::move(op));
  REQUIRE(recorder.waitUntilBlocked());
  // Queued behind the blocked one, so the waiter cannot run it either.
  Op behind = numbered(2);
  std::shared_ptr<Completion> behindDone = behind.completion;
  executor.enqueue(std::move(behind));

  CHECK_FALSE(executor.waitFor(*completion, 50));
  CHECK_FALSE(executor.waitFor(*behindDone, 0));
  CHECK_FALSE(completion->isDone());

  recorder.release();
  REQUIRE(executor.waitFor(*behindDone, kHangGuardMs));
  REQUIRE(completion->isDone());
  checkResult(completion->result(), 1);
  checkResult(behindDone->result(), 2);
  CHECK(recorder.order() == std::vector<size_t>{1, 2});
}

TEST_CASE("drain returns only once every queued operation has run", "[executor]") {
  Recorder recorder(0);
  Executor executor(recorder.runFn());
  executor.start();
  for (size_t id = 0; id < 10; ++id) executor.enqueue(numbered(id));
  REQUIRE(recorder.waitUntilBlocked());

  size_t ranWhenDrained = 0;
  std::thread drainer([&] {
    executor.drain();
    ranWhenDrained = recorder.order().size();
  });
  recorder.release();
  drainer.join();
  CHECK(ranWhenDrained == 10);
  CHECK(recorder.order() == upTo(10));
}

TEST_CASE("stop runs the queued work to the end before the progress thread exits", "[executor]") {
  Recorder recorder(0);
  std::vector<std::shared_ptr<Completion>> completions;
  {
    Executor executor(recorder.runFn());
    executor.start();
    for (size_t id = 0; id < 20; ++id) {
      Op op = numbered(id);
      completions.push_back(op.completion);
      executor.enqueue(std::move(op));
    }
    REQUIRE(recorder.waitUntilBlocked());
    std::thread stopper([&] { executor.stop(); });
    recorder.release();
    stopper.join();
    CHECK(recorder.order() == upTo(20));
  }  // the destructor stops again: harmless
  for (size_t id = 0; id < completions.size(); ++id) {
    REQUIRE(completions[id]->isDone());
    checkResult(completions[id]->result(), id);
  }
}

}  // namespace weft
