// Completion: the result of one queued operation. Waiting for it is the Executor's job (waiters
// help run the queue), so this only records the outcome.
#pragma once

#include <mutex>

#include "core/status.h"

namespace weft {

class Completion {
 public:
  void complete(Status result) {
    std::lock_guard<std::mutex> lock(mutex_);
    result_ = std::move(result);
    done_ = true;
  }
  bool isDone() {
    std::lock_guard<std::mutex> lock(mutex_);
    return done_;
  }
  // Valid once done.
  Status result() {
    std::lock_guard<std::mutex> lock(mutex_);
    return result_;
  }

 private:
  std::mutex mutex_;
  bool done_ = false;
  Status result_;
};

}  // namespace weft
