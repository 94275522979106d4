// Executor: work that an operation leaves behind (a transfer still in flight) is advanced while
// nothing is queued, gives way to every operation queued after it, and completes its request
// on its own.
#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/executor.h"

namespace weft {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kHangGuard = std::chrono::seconds(10);
constexpr int64_t kHangGuardMs = 10000;

// Stands for a communicator's outstanding transfers: an operation with mayLeaveOutstanding
// leaves its completion here, and finish() stands for its peer answering.
class Transfers {
 public:
  Executor::RunFn runFn(Executor** executor) {
    return [this, executor](Op& op) {
      std::lock_guard<std::mutex> lock(mutex_);
      ran_.push_back(op.single.count);
      if (op.mayLeaveOutstanding) {
        pending_.push_back({op.single.count, std::move(op.completion), false});
        (*executor)->noteBackgroundWork();
      }
      return Status::ok();
    };
  }
  Executor::Background background(Executor** executor) {
    return {[this, executor](Clock::time_point returnBy) { return advance(**executor, returnBy); },
            [this] {
              std::lock_guard<std::mutex> lock(mutex_);
              changed_.notify_all();
            }};
  }
  void finish(size_t id) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (Pending& transfer : pending_) {
      if (transfer.id == id) transfer.answered = true;
    }
    changed_.notify_all();
  }
  std::vector<size_t> ran() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return ran_;
  }
  int advances() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return advances_;
  }

 private:
  struct Pending {
    size_t id;
    std::shared_ptr<Completion> completion;
    bool answered;
  };

  bool advance(const Executor& executor, Clock::time_point returnBy) {
    std::unique_lock<std::mutex> lock(mutex_);
    ++advances_;
    auto answered = [&] {
      for (const Pending& transfer : pending_) {
        if (transfer.answered) return true;
      }
      return false;
    };
    const auto until = std::min(returnBy, Clock::now() + kHangGuard);
    changed_.wait_until(lock, until, [&] { return answered() || executor.hasQueued(); });
    for (size_t i = 0; i < pending_.size();) {
      if (!pending_[i].answered) {
        ++i;
        continue;
      }
      pending_[i].completion->complete(Status::ok());
      pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(i));
    }
    return !pending_.empty();
  }

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<Pending> pending_;
  std::vector<size_t> ran_;
  int advances_ = 0;
};

Op numbered(size_t id, bool leavesWork) {
  CollArgs args;
  args.count = id;
  Op op = Op::call(args);
  op.completion = std::make_shared<Completion>();
  op.mayLeaveOutstanding = leavesWork;
  return op;
}

// An executor over Transfers; started unless the test wants the waiting thread to do the work.
struct Harness {
  explicit Harness(bool started = true) {
    self = &executor;
    if (started) executor.start();
  }
  // Queues an operation that leaves its transfer outstanding; returns its completion.
  std::shared_ptr<Completion> leaveOutstanding(size_t id) {
    Op op = numbered(id, true);
    auto completion = op.completion;
    executor.enqueue(std::move(op));
    return completion;
  }

  Transfers transfers;
  Executor* self = nullptr;
  Executor executor{transfers.runFn(&self), transfers.background(&self)};
};

}  // namespace

TEST_CASE("operations queued behind work left outstanding run before that work completes",
          "[executor]") {
  Harness harness;
  Transfers& transfers = harness.transfers;
  Executor& executor = harness.executor;
  auto left = harness.leaveOutstanding(0);
  // The progress thread is (or soon will be) advancing the transfer; these interrupt it.
  std::vector<std::shared_ptr<Completion>> later;
  for (size_t id = 1; id <= 3; ++id) {
    Op op = numbered(id, false);
    later.push_back(op.completion);
    executor.enqueue(std::move(op));
  }
  for (auto& completion : later) REQUIRE(executor.waitFor(*completion, kHangGuardMs));
  CHECK_FALSE(left->isDone());
  CHECK(transfers.ran() == std::vector<size_t>{0, 1, 2, 3});

  transfers.finish(0);
  REQUIRE(executor.waitFor(*left, kHangGuardMs));
  CHECK(left->result().isOk());
}

TEST_CASE("the progress thread completes work left outstanding with nobody waiting", "[executor]") {
  Harness harness;
  Transfers& transfers = harness.transfers;
  auto left = harness.leaveOutstanding(0);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  transfers.finish(0);
  const auto start = Clock::now();
  while (!left->isDone() && Clock::now() - start < kHangGuard) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  CHECK(left->isDone());
}

TEST_CASE("a timed wait on work left outstanding returns at its deadline", "[executor]") {
  // Not started: the waiting thread runs the operation and advances the work itself.
  Harness harness(/*started=*/false);
  Transfers& transfers = harness.transfers;
  Executor& executor = harness.executor;
  auto left = harness.leaveOutstanding(0);
  const auto start = Clock::now();
  CHECK_FALSE(executor.waitFor(*left, 100));
  const double waited = std::chrono::duration<double>(Clock::now() - start).count();
  CHECK(waited >= 0.09);
  CHECK(waited < 5.0);
  CHECK(transfers.advances() >= 1);
  transfers.finish(0);
  REQUIRE(executor.waitFor(*left, kHangGuardMs));
}

TEST_CASE("drain waits for the work left outstanding", "[executor]") {
  Harness harness;
  Transfers& transfers = harness.transfers;
  Executor& executor = harness.executor;
  auto left = harness.leaveOutstanding(0);
  std::thread answer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    transfers.finish(0);
  });
  executor.drain();
  CHECK(left->isDone());
  answer.join();
}

}  // namespace weft
