#include "core/executor.h"

#include <chrono>

namespace weft {

Executor::Executor(RunFn run) : run_(std::move(run)) {}

Executor::~Executor() { stop(); }

void Executor::start() { thread_ = std::thread([this] { serve(); }); }

void Executor::runFront(std::unique_lock<std::mutex>& lock) {
  Op op = std::move(queue_.front());
  queue_.pop_front();
  running_ = true;
  lock.unlock();
  Status result = run_(op);
  if (op.completion) op.completion->complete(std::move(result));
  lock.lock();
  running_ = false;
  finished_.notify_all();
  // The progress thread may be waiting for this operation to end, to stop or to take the next.
  if (stopping_ || (helpers_ == 0 && !queue_.empty())) workQueued_.notify_one();
}

Status Executor::runBlocking(Op op) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!running_ && queue_.empty()) {
    running_ = true;
    lock.unlock();
    Status result = run_(op);
    lock.lock();
    running_ = false;
    finished_.notify_all();
    if (stopping_ || (helpers_ == 0 && !queue_.empty())) workQueued_.notify_one();
    return result;
  }
  auto completion = std::make_shared<Completion>();
  op.completion = completion;
  // Registered as a helper before queueing, so the progress thread is not woken for a call
  // that this thread is about to run itself.
  ++helpers_;
  queue_.push_back(std::move(op));
  helpUntil(lock, *completion, Clock::time_point::max());
  return completion->result();
}

void Executor::enqueue(Op op) {
  std::lock_guard<std::mutex> lock(mutex_);
  queue_.push_back(std::move(op));
  if (helpers_ == 0) workQueued_.notify_one();
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
    if (!running_ && !queue_.empty()) {
      runFront(lock);
      continue;
    }
    if (Clock::now() >= deadline) break;
    // Another thread runs an operation (or the call is another thread's group still being
    // issued): wait for it to end.
    if (deadline == Clock::time_point::max()) {
      finished_.wait(lock);
    } else {
      finished_.wait_until(lock, deadline);
    }
  }
  if (--helpers_ == 0 && !queue_.empty()) workQueued_.notify_one();
  return done;
}

void Executor::serve() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    auto mayRun = [&] { return !running_ && helpers_ == 0 && !queue_.empty(); };
    auto finished = [&] { return stopping_ && !running_ && queue_.empty(); };
    workQueued_.wait(lock, [&] { return mayRun() || finished(); });
    if (finished()) return;
    runFront(lock);
  }
}

void Executor::drain() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (running_ || !queue_.empty()) {
    if (!running_) {
      runFront(lock);
    } else {
      finished_.wait(lock);
    }
  }
}

void Executor::cancelQueued(const Status& why) {
  std::deque<Op> cancelled;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    cancelled.swap(queue_);
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
