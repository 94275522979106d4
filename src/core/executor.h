// Executor: runs a communicator's operations one at a time, in the order they were issued.
//
// Operations wait in a queue served by the communicator's progress thread, so non-blocking calls
// advance while the caller computes. A thread that needs a result does not sleep while the
// queue holds work: it runs the queued operations itself, in order, up to the one it needs
// ("helping"), and the progress thread stands aside meanwhile. So a blocking call on an idle
// communicator runs on the caller's thread, and a caller that issues a burst of non-blocking
// calls and then waits pays no thread hand-off per call. Idle threads sleep on condition
// variables; nothing here polls.
//
// An operation may leave work behind when it returns (a non-blocking send or receive still in
// flight, core/outstanding.h): it completes its own Completion later. That background work is
// advanced by whichever thread may run while nothing is queued, and an operation queued
// meanwhile interrupts it, so that later calls never wait behind a transfer that their peer
// only answers after them.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "base/call.h"
#include "base/status.h"
#include "core/completion.h"

namespace weft {
namespace device {
struct StreamOrder;  // cuda/gpu_state.h
}

// One call, or a group's calls on one communicator. A single call is held inline, so the
// common case allocates nothing.
struct Op {
  CollArgs single;
  std::vector<CollArgs> group;  // empty for a single call
  std::shared_ptr<Completion> completion;
  // Stream-ordered calls: the caller streams' readiness and their release (cuda/gpu_state.h).
  std::shared_ptr<device::StreamOrder> streamOrder;
  // A non-blocking point-to-point call: it may return with its transfer still in flight, taking
  // `completion` along (the executor then completes nothing).
  bool mayLeaveOutstanding = false;

  static Op call(const CollArgs& args) {
    Op op;
    op.single = args;
    return op;
  }
  static Op grouped(std::vector<CollArgs> calls, std::shared_ptr<Completion> completion) {
    Op op;
    op.group = std::move(calls);
    op.completion = std::move(completion);
    return op;
  }
  std::span<const CollArgs> calls() const {
    return group.empty() ? std::span<const CollArgs>(&single, 1) : std::span<const CollArgs>(group);
  }
};

class Executor {
 public:
  using Clock = std::chrono::steady_clock;

  using RunFn = std::function<Status(Op&)>;
  // Work left behind by operations. advance() runs with the right to run held, until some of
  // it completes, an operation is queued (hasQueued()), or `returnBy` passes; it returns whether
  // work is still pending. interrupt() is thread-safe and makes a running advance() look again
  // at once.
  struct Background {
    std::function<bool(Clock::time_point returnBy)> advance;
    std::function<void()> interrupt;
  };

  explicit Executor(RunFn run, Background background = {});
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  void start();
  // Runs op and returns its result: at once on this thread when nothing is queued or running
  // (no allocation, no hand-off), else after the operations before it (helping run them).
  Status runBlocking(Op op);
  // The right to run on this thread now, without an Op: true when nothing is queued or running
  // (then endInline() must follow, once the caller's work on the communicator is done).
  bool tryBeginInline() {
    bool idle = false;
    return queued_.load() == 0 && running_.compare_exchange_strong(idle, true);
  }
  void endInline() {
    running_.store(false);
    notifyFinished();
  }
  void enqueue(Op op);
  // Runs op at once on this thread and completes its completion when nothing is queued or
  // running (no hand-off); false, with op untouched, otherwise.
  bool tryRunInline(Op& op);
  // How long the progress thread leaves background work to the thread that left it.
  static constexpr std::chrono::microseconds kBackgroundGrace{1000};
  // Called by the running operation when it leaves work behind.
  void noteBackgroundWork() { backgroundPending_.store(true); }
  bool hasQueued() const { return queued_.load() != 0; }
  // Waits until `completion` is done, helping as described above; false if timeoutMs (>= 0)
  // passed first.
  bool waitFor(Completion& completion, int64_t timeoutMs);
  // Waits until nothing is queued, running or left behind; with background = false, work left
  // behind may still be pending (and advancing) on return.
  void drain(bool background = true);
  // Completes every queued (not yet running) operation with `why`.
  void cancelQueued(const Status& why);
  // Stops the thread after the queue is empty.
  void stop();

 private:
  void serve();
  // Queues op (lock held) and interrupts background work so that op runs soon.
  void pushLocked(Op op);
  // Like tryRunFront, for the background work: only when nothing is queued.
  bool tryAdvanceBackground(std::unique_lock<std::mutex>& lock, Clock::time_point returnBy);
  bool mayRunSomething() const { return !queue_.empty() || backgroundPending_.load(); }
  // The helping loop of waitFor(); the caller has counted itself in helpers_.
  bool helpUntil(std::unique_lock<std::mutex>& lock, Completion& completion,
                 Clock::time_point deadline);
  // Claims the right to run and runs the front operation; called with the lock held, returns
  // with it held. False when another thread holds that right.
  bool tryRunFront(std::unique_lock<std::mutex>& lock);
  // After running without the lock: wakes whoever waits for the end of that operation or for
  // the queue.
  void notifyFinished();
  // Waits on finished_ (counted in finishWaiters_, see notifyFinished()).
  template <typename Predicate>
  void waitFinished(std::unique_lock<std::mutex>& lock, Predicate done);

  RunFn run_;
  Background background_;
  std::mutex mutex_;
  std::condition_variable workQueued_;  // the progress thread waits for work (or stop)
  std::condition_variable finished_;    // helpers and drain() wait for an operation to end
  std::deque<Op> queue_;
  // Who runs is decided by compare-and-swap on running_, so that a blocking call on an idle
  // communicator takes no lock at all; the queue itself is guarded by mutex_, and queued_
  // mirrors its size for that lock-free check.
  std::atomic<bool> running_{false};
  std::atomic<size_t> queued_{0};
  std::atomic<int> finishWaiters_{0};  // threads waiting on finished_
  int helpers_ = 0;                    // threads inside waitFor(): the progress thread stands aside
  std::atomic<bool> stopping_{false};
  // Set by the runner when an operation leaves work behind, cleared by advance()'s result;
  // advancing_ while an advance() runs (then queueing interrupts it).
  std::atomic<bool> backgroundPending_{false};
  std::atomic<bool> advancing_{false};
  // The progress thread is waiting out kBackgroundGrace and will look at background work then.
  std::atomic<bool> backgroundWatched_{false};
  std::thread thread_;
};

}  // namespace weft
