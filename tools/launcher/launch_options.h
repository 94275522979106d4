// What the command line asked weftrun to do. Parsed in weftrun.cc, consumed by the supervisor.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace weftrun {

inline constexpr int kMaxRanks = 1024;

struct LaunchOptions {
  int nranks = 0;
  // Relay each rank's stdout/stderr through pipes, prefixing every line with "[rank] ".
  bool tag_output = false;
  // The -x arguments as given: "NAME" (pass weftrun's own value) or "NAME=VALUE".
  std::vector<std::string> exports;
  // End the whole job after this many seconds (exit 124); unset means no limit.
  std::optional<double> timeout_s;
  // When a rank fails, leave the others running (the job still fails with its status).
  bool keep_going = false;
  // Time between SIGTERM and SIGKILL when ending ranks.
  double grace_s = 3.0;
  // The program and its arguments, run once per rank.
  std::vector<std::string> command;
};

}  // namespace weftrun
