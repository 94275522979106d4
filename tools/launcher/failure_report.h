// What weftrun says about failing ranks, and which failure it names as the job's cause. On one
// host the first failure seen is the first that happened. Across hosts a failure reaches the top
// weftrun later from some hosts than from others, and the ranks that lose a peer fail within
// milliseconds of it; so the failures heard of within a short window are collected, and the
// earliest (by the clock of the weftrun that saw it) is named.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "launcher/process_group.h"

namespace weftrun {

struct Failure {
  int rank = -1;  // -1: a whole host's weftrun (its launch agent) failed
  std::string host;
  int pid = 0;
  ExitInfo info;
  int64_t time_ns = 0;  // CLOCK_REALTIME when its weftrun saw the exit
};

class FailureReport {
 public:
  using Writer = std::function<void(const std::string& line)>;

  FailureReport(bool across_hosts, bool keep_going, Writer write)
      : across_hosts_(across_hosts), keep_going_(keep_going), write_(std::move(write)) {}

  // True while failures are being collected (across hosts, before Blame()).
  bool collecting() const { return !suspects_.empty() && !blamed_; }

  // A failure that may be the job's cause. On one host it is reported at once; across hosts it
  // is collected. Returns true for the first: the caller ends the job (and across hosts calls
  // Blame() once the window has passed).
  bool Suspect(const Failure& failure);
  // A rank that failed on its own after the cause was known (--keep-going).
  void Later(const Failure& failure);
  // A rank that failed because weftrun ended the job: listed up to a limit, then counted.
  void Ended(const Failure& failure);
  // Across hosts: names the earliest failure collected; returns its status, or nothing if none
  // was collected (or it was named already).
  std::optional<int> Blame();
  // The count of ended ranks that were not listed.
  void Summary();

 private:
  std::string Where(const Failure& failure) const;
  void Write(const std::string& line) { write_(line); }

  const bool across_hosts_;
  const bool keep_going_;
  Writer write_;
  std::vector<Failure> suspects_;
  bool blamed_ = false;
  std::vector<std::string> deferred_;  // reports of ended ranks that wait for the cause
  int listed_ended_ = 0;
  int unlisted_ended_ = 0;
};

}  // namespace weftrun
