// Completion: the result of one queued operation. Waiting for it is the Executor's job (waiters
// help run the queue), so this only records the outcome.
#pragma once

#include <atomic>

#include "base/status.h"

namespace weft {

// Written once by the thread that ran the operation; the result is published by the release
// store of `done_`, so readers need no lock.
class Completion {
 public:
  void complete(Status result) {
    result_ = std::move(result);
    done_.store(true, std::memory_order_release);
  }
  bool isDone() const { return done_.load(std::memory_order_acquire); }
  // Valid once isDone().
  const Status& result() const { return result_; }

 private:
  std::atomic<bool> done_{false};
  Status result_;
};

}  // namespace weft
