#include "core/executor.h"

#include <chrono>

namespace weft {

Executor::Executor(RunFn run) : run_(std::move(run)) {}

Executor::~Executor() {
  stop();
}

void Executor::start() {
  thread_ = std::thread([this] { serve(); });
}

bool Executor::tryRunFront(std::unique_lock<std::mutex>& lock) {
  bool idle = false;
  if (queue_.empty() || !running_.compare_exchange_strong(idle, true)) return false;
  Op op = std::move(queue_.front());
  queue_.pop_front();
  queued_.store(queue_.size());
  lock.unlock();
  Status result = run_(op);
  if (op.completion) op.completion->complete(std::move(result));
  running_.store(false);
  lock.lock();
  finished_.notify_all();
  // The progress thread may be waiting for this operation to end, to stop or to take the next.
  if (stopping_ || (helpers_ == 0 && !queue_.empty())) workQueued_.notify_one();
  return true;
}

template <typename Predicate>
void Executor::waitFinished(std::unique_lock<std::mutex>& lock, Predicate done) {
  // Counted before the condition is checked: a lock-free runner that clears running_ and then
  // finds no waiter counted knows the waiter's check comes later and will see the cleared flag.
  finishWaiters_.fetch_add(1);
  finished_.wait(lock, done);
  finishWaiters_.fetch_sub(1);
}

void Executor::notifyFinished() {
  if (finishWaiters_.load() == 0 && queued_.load() == 0 && !stopping_) return;
  std::lock_guard<std::mutex> lock(mutex_);
  finished_.notify_all();
  if (stopping_ || (helpers_ == 0 && !queue_.empty())) workQueued_.notify_one();
}

Status Executor::runBlocking(Op op) {
  // The common case: nothing queued or running. Claimed by compare-and-swap, run on this
  // thread, no lock and no allocation.
  if (tryBeginInline()) {
    Status result = run_(op);
    endInline();
    return result;
  }
  auto completion = std::make_shared<Completion>();
  op.completion = completion;
  std::unique_lock<std::mutex> lock(mutex_);
  // Registered as a helper before queueing, so the progress thread is not woken for a call
  // that this thread is about to run itself.
  ++helpers_;
  queue_.push_back(std::move(op));
  queued_.store(queue_.size());
  helpUntil(lock, *completion, Clock::time_point::max());
  return completion->result();
}

void Executor::enqueue(Op op) {
  std::lock_guard<std::mutex> lock(mutex_);
  queue_.push_back(std::move(op));
  queued_.store(queue_.size());
  // With a helper waiting the progress thread stands aside, so the helper must be the one woken:
  // it may be waiting for exactly this operation (a request of a group issued just now by
  // another thread).
  if (helpers_ == 0) {
    workQueued_.notify_one();
  } else {
    finished_.notify_all();
  }
}

bool Executor::waitFor(Completion& completion, int64_t timeoutMs) {
  const auto deadline = timeoutMs < 0 ? Clock::time_point::max()
                                      : Clock::now() + std::chrono::milliseconds(timeoutMs);
  std::unique_lock<std::mutex> lock(mutex_);
  ++helpers_;
  return helpUntil(lock, completion, deadline);
}

bool Executor::helpUntil(std::unique_lock<std::mutex>& lock, Completion& completion,
                         Clock::time_point deadline) {
  bool done;
  while (!(done = completion.isDone())) {
    if (tryRunFront(lock)) continue;
    if (Clock::now() >= deadline) break;
    // Another thread runs an operation (or the call is another thread's group still being
    // issued): wait for it to end.
    finishWaiters_.fetch_add(1);
    auto ended = [&] { return completion.isDone() || (!running_.load() && !queue_.empty()); };
    if (deadline == Clock::time_point::max()) {
      finished_.wait(lock, ended);
    } else {
      finished_.wait_until(lock, deadline, ended);
    }
    finishWaiters_.fetch_sub(1);
  }
  if (--helpers_ == 0 && !queue_.empty()) workQueued_.notify_one();
  return done;
}

void Executor::serve() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    auto mayRun = [&] { return !running_.load() && helpers_ == 0 && !queue_.empty(); };
    auto finished = [&] { return stopping_ && !running_.load() && queue_.empty(); };
    workQueued_.wait(lock, [&] { return mayRun() || finished(); });
    if (finished()) return;
    tryRunFront(lock);
  }
}

void Executor::drain() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (running_.load() || !queue_.empty()) {
    if (!tryRunFront(lock)) {
      waitFinished(lock, [&] { return !running_.load(); });
    }
  }
}

void Executor::cancelQueued(const Status& why) {
  std::deque<Op> cancelled;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    cancelled.swap(queue_);
    queued_.store(0);
  }
  for (Op& op : cancelled) {
    if (op.completion) op.completion->complete(why);
  }
  // Waiters check their completion under the lock, so this notification cannot be missed.
  std::lock_guard<std::mutex> lock(mutex_);
  finished_.notify_all();
}

void Executor::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    workQueued_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
}

}  // namespace weft
