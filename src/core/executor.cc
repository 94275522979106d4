#include "core/executor.h"

#include <chrono>

namespace weft {

Executor::Executor(RunFn run, Background background)
    : run_(std::move(run)), background_(std::move(background)) {}

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
  if (stopping_ || (helpers_ == 0 && mayRunSomething())) workQueued_.notify_one();
  return true;
}

bool Executor::tryAdvanceBackground(std::unique_lock<std::mutex>& lock,
                                    Clock::time_point returnBy) {
  bool idle = false;
  if (!queue_.empty() || !backgroundPending_.load() ||
      !running_.compare_exchange_strong(idle, true)) {
    return false;
  }
  // Set under the lock: a thread queueing after this sees it and interrupts; one queueing
  // before has made the queue non-empty, which advance() checks before it sleeps.
  advancing_.store(true);
  lock.unlock();
  const bool pending = background_.advance(returnBy);
  backgroundPending_.store(pending);
  advancing_.store(false);
  running_.store(false);
  lock.lock();
  finished_.notify_all();
  if (stopping_ || (helpers_ == 0 && mayRunSomething())) workQueued_.notify_one();
  return true;
}

void Executor::pushLocked(Op op) {
  queue_.push_back(std::move(op));
  queued_.store(queue_.size());
  if (advancing_.load()) background_.interrupt();
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
  const bool backgroundUnwatched = backgroundPending_.load() && !backgroundWatched_.load();
  if (finishWaiters_.load() == 0 && queued_.load() == 0 && !stopping_ && !backgroundUnwatched) {
    return;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  finished_.notify_all();
  if (stopping_ || (helpers_ == 0 && (!queue_.empty() || backgroundUnwatched))) {
    workQueued_.notify_one();
  }
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
  pushLocked(std::move(op));
  helpUntil(lock, *completion, Clock::time_point::max());
  return completion->result();
}

bool Executor::tryRunInline(Op& op) {
  if (!tryBeginInline()) return false;
  Status result = run_(op);
  if (op.completion) op.completion->complete(std::move(result));
  endInline();
  return true;
}

void Executor::enqueue(Op op) {
  std::lock_guard<std::mutex> lock(mutex_);
  pushLocked(std::move(op));
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
    if (tryAdvanceBackground(lock, deadline)) continue;
    // Another thread runs an operation (or the call is another thread's group still being
    // issued): wait for it to end.
    finishWaiters_.fetch_add(1);
    auto ended = [&] { return completion.isDone() || (!running_.load() && mayRunSomething()); };
    if (deadline == Clock::time_point::max()) {
      finished_.wait(lock, ended);
    } else {
      finished_.wait_until(lock, deadline, ended);
    }
    finishWaiters_.fetch_sub(1);
  }
  if (--helpers_ == 0 && mayRunSomething()) workQueued_.notify_one();
  return done;
}

void Executor::serve() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    auto mayRun = [&] { return !running_.load() && helpers_ == 0 && mayRunSomething(); };
    auto finished = [&] { return stopping_ && !running_.load() && !mayRunSomething(); };
    workQueued_.wait(lock, [&] { return mayRun() || finished(); });
    if (finished()) return;
    if (tryRunFront(lock)) continue;
    // Only background work: the thread that left it usually waits for it soon and advances it
    // itself, so this thread lets it be for a while first (else every transfer costs two
    // thread hand-offs), then moves it on for nobody waiting.
    if (!stopping_) {
      const auto until = Clock::now() + kBackgroundGrace;
      // Meanwhile more background work needs no notification (one per transfer otherwise).
      backgroundWatched_.store(true);
      const bool changed =
          workQueued_.wait_until(lock, until, [&] { return !mayRun() || !queue_.empty(); });
      backgroundWatched_.store(false);
      if (changed) continue;
    }
    tryAdvanceBackground(lock, Clock::time_point::max());
  }
}

void Executor::drain(bool background) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!background) {
    // An operation running is waited for; background work advancing is not.
    while ((running_.load() && !advancing_.load()) || !queue_.empty()) {
      if (tryRunFront(lock)) continue;
      // Advancing background work gives way to a queued operation at once.
      waitFinished(lock, [&] { return !running_.load() || (advancing_.load() && queue_.empty()); });
    }
    return;
  }
  while (running_.load() || mayRunSomething()) {
    if (!tryRunFront(lock) && !tryAdvanceBackground(lock, Clock::time_point::max())) {
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
