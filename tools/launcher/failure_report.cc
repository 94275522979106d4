#include "launcher/failure_report.h"

#include <algorithm>
#include <cstdio>

namespace weftrun {
namespace {

// Failures caused by the teardown are listed up to this many and then only counted, so that a
// large job does not bury the line that names the real cause.
constexpr int kMaxListedEndedRanks = 8;

}  // namespace

bool FailureReport::Suspect(const Failure& failure) {
  if (!across_hosts_) {
    Write("weftrun: " + Where(failure) + " " + DescribeExit(failure.info) + "\n");
    return true;
  }
  suspects_.push_back(failure);
  return suspects_.size() == 1;
}

void FailureReport::Later(const Failure& failure) {
  Write("weftrun: " + Where(failure) + " " + DescribeExit(failure.info) + "\n");
}

void FailureReport::Ended(const Failure& failure) {
  if (listed_ended_ >= kMaxListedEndedRanks) {
    ++unlisted_ended_;
    return;
  }
  ++listed_ended_;
  std::string line =
      "weftrun: " + Where(failure) + " " + DescribeExit(failure.info) + " (ended by weftrun)\n";
  // Until the cause is named, so that it comes first.
  if (collecting()) {
    deferred_.push_back(line);
  } else {
    Write(line);
  }
}

std::optional<int> FailureReport::Blame() {
  if (!collecting()) return std::nullopt;
  blamed_ = true;
  const Failure& first =
      *std::min_element(suspects_.begin(), suspects_.end(),
                        [](const Failure& a, const Failure& b) { return a.time_ns < b.time_ns; });
  Write("weftrun: " + Where(first) + " " + DescribeExit(first.info) +
        (keep_going_ ? "\n" : "; ending the job\n"));
  for (const Failure& other : suspects_) {
    if (&other == &first) continue;
    std::string after = first.rank >= 0 ? "rank " + std::to_string(first.rank) : first.host;
    Write("weftrun: " + Where(other) + " " + DescribeExit(other.info) + " (after " + after + ")\n");
  }
  for (const std::string& line : deferred_) Write(line);
  deferred_.clear();
  return first.info.ShellStatus();
}

void FailureReport::Summary() {
  if (unlisted_ended_ > 0) {
    Write("weftrun: " + std::to_string(unlisted_ended_) + " more ranks ended by weftrun\n");
  }
}

std::string FailureReport::Where(const Failure& failure) const {
  char text[512];
  if (failure.rank < 0) {
    std::snprintf(text, sizeof text, "weftrun on %s (agent pid %d)", failure.host.c_str(),
                  failure.pid);
  } else if (across_hosts_) {
    std::snprintf(text, sizeof text, "rank %d on %s (pid %d)", failure.rank, failure.host.c_str(),
                  failure.pid);
  } else {
    std::snprintf(text, sizeof text, "rank %d (pid %d)", failure.rank, failure.pid);
  }
  return text;
}

}  // namespace weftrun
