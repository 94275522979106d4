// Collects the log lines written while it lives (at least WARN, or INFO when asked), so that
// tests can check what was reported: that each dropped stray was named, say.
#pragma once

#include <mutex>
#include <string>
#include <vector>

#include "base/log.h"

namespace weft::test {

class LogCapture {
 public:
  explicit LogCapture(log::Level atLeast = log::Level::kWarn) : savedLevel_(log::level()) {
    if (savedLevel_ < atLeast) log::setLevel(atLeast);
    log::setObserver([this](log::Level level, const std::string& message) {
      std::lock_guard<std::mutex> lock(mutex_);
      lines_.push_back({level, message});
    });
  }
  ~LogCapture() {
    log::setObserver(nullptr);
    log::setLevel(savedLevel_);
  }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;

  // The messages at `level` that contain every one of `needles`.
  std::vector<std::string> matching(log::Level level,
                                    const std::vector<std::string>& needles) const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<std::string> found;
    for (const Line& line : lines_) {
      if (line.level != level) continue;
      bool all = true;
      for (const std::string& needle : needles)
        all &= line.message.find(needle) != std::string::npos;
      if (all) found.push_back(line.message);
    }
    return found;
  }
  size_t warnings(const std::vector<std::string>& needles) const {
    return matching(log::Level::kWarn, needles).size();
  }

 private:
  struct Line {
    log::Level level;
    std::string message;
  };

  log::Level savedLevel_;
  mutable std::mutex mutex_;
  std::vector<Line> lines_;
};

}  // namespace weft::test
