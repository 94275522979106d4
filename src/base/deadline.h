// Deadline: a point on the monotonic clock that every internal wait is bounded by.
#pragma once

#include <chrono>
#include <cstdint>

namespace weft {

class Deadline {
 public:
  using Clock = std::chrono::steady_clock;

  static Deadline after(int64_t milliseconds) {
    Deadline d;
    d.when_ = milliseconds < 0 ? Clock::time_point::max()
                               : Clock::now() + std::chrono::milliseconds(milliseconds);
    return d;
  }
  static Deadline never() { return after(-1); }

  bool expired() const { return Clock::now() >= when_; }
  bool isNever() const { return when_ == Clock::time_point::max(); }
  // Milliseconds left, clamped to [0, cap]; a convenient poll/epoll timeout.
  int remainingMs(int cap = 1 << 30) const {
    if (isNever()) return cap;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(when_ - Clock::now()).count();
    if (left < 0) return 0;
    return left > cap ? cap : static_cast<int>(left);
  }
  // The earlier of two deadlines.
  static Deadline earliest(const Deadline& a, const Deadline& b) {
    return a.when_ < b.when_ ? a : b;
  }

 private:
  Clock::time_point when_ = Clock::time_point::max();
};

}  // namespace weft
