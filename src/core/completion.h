// Completion: the result of one queued operation, awaited by a blocking caller or a request.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "core/status.h"

namespace weft {

class Completion {
 public:
  void complete(Status result) {
    std::lock_guard<std::mutex> lock(mutex_);
    result_ = std::move(result);
    done_ = true;
    changed_.notify_all();
  }
  bool isDone() {
    std::lock_guard<std::mutex> lock(mutex_);
    return done_;
  }
  // Blocks until done; timeoutMs < 0 waits without a limit. Returns false on timeout.
  bool waitFor(int64_t timeoutMs) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (timeoutMs < 0) {
      changed_.wait(lock, [&] { return done_; });
      return true;
    }
    return changed_.wait_for(lock, std::chrono::milliseconds(timeoutMs), [&] { return done_; });
  }
  // Valid once done.
  Status result() {
    std::lock_guard<std::mutex> lock(mutex_);
    return result_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  bool done_ = false;
  Status result_;
};

}  // namespace weft
