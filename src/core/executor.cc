#include "core/executor.h"

namespace weft {

Executor::Executor(RunFn run) : run_(std::move(run)) {}

Executor::~Executor() { stop(); }

void Executor::start() { thread_ = std::thread([this] { serve(); }); }

Status Executor::runBlocking(Op op) {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!running_ && queue_.empty()) {
      running_ = true;
      lock.unlock();
      Status result = run_(op);
      lock.lock();
      running_ = false;
      changed_.notify_all();
      return result;
    }
  }
  auto completion = std::make_shared<Completion>();
  op.completion = completion;
  enqueue(std::move(op));
  completion->waitFor(-1);
  return completion->result();
}

void Executor::enqueue(Op op) {
  std::lock_guard<std::mutex> lock(mutex_);
  queue_.push_back(std::move(op));
  changed_.notify_all();
}

void Executor::serve() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    changed_.wait(lock, [&] { return (!queue_.empty() && !running_) || (stopping_ && queue_.empty() && !running_); });
    if (queue_.empty()) return;  // stopping
    Op op = std::move(queue_.front());
    queue_.pop_front();
    running_ = true;
    lock.unlock();
    Status result = run_(op);
    if (op.completion) op.completion->complete(std::move(result));
    lock.lock();
    running_ = false;
    changed_.notify_all();
  }
}

void Executor::drain() {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] { return queue_.empty() && !running_; });
}

void Executor::cancelQueued(const Status& why) {
  std::deque<Op> cancelled;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    cancelled.swap(queue_);
    changed_.notify_all();
  }
  for (Op& op : cancelled) {
    if (op.completion) op.completion->complete(why);
  }
}

void Executor::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    changed_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
}

}  // namespace weft
