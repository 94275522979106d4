// What the command line asked weftrun to do. Parsed in weftrun.cc, consumed by the supervisor.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "launcher/host_list.h"

namespace weftrun {

inline constexpr int kMaxRanks = 1024;

// Set in the hidden "--remote-part" mode: this weftrun was started on one host by the launch
// agent of the weftrun that runs the job (the top), and starts that host's share of the ranks.
struct RemotePart {
  std::string host;    // the name the top knows this host by, for messages
  int first_rank = 0;  // this host runs ranks first_rank .. first_rank + count - 1
  int count = 0;
  std::string root_addr;  // WEFT_ROOT_ADDR, chosen by the top
  std::string wdir;       // the top's working directory, entered if it exists here
};

struct LaunchOptions {
  // Ranks in the whole job; 0 until parsed (with hosts: all their slots unless -n says fewer).
  int nranks = 0;
  // From -H or --hostfile; empty: every rank on this machine, as before hosts existed.
  std::vector<HostSlots> hosts;
  // The remote shell for other hosts ("ssh" or --launch-agent), split into words.
  std::vector<std::string> launch_agent{"ssh"};
  // The weftrun to run on other hosts (--weftrun-path); empty: this one's absolute path.
  std::string remote_weftrun;
  // Relay each rank's stdout/stderr through pipes, prefixing every line with "[rank] ".
  bool tag_output = false;
  // The -x arguments as given: "NAME" (pass weftrun's own value) or "NAME=VALUE".
  std::vector<std::string> exports;
  // End the whole job after this many seconds (exit 124); unset means no limit.
  std::optional<double> timeout_s;
  // When a rank fails, leave the others running (the job still fails with its status).
  bool keep_going = false;
  // WEFT_BIND for the ranks (none, core or auto): --bind-to, else weftrun's own WEFT_BIND, else
  // auto; passed to the remote parts as --bind-to.
  std::string bind_to;
  // Time between SIGTERM and SIGKILL when ending ranks.
  double grace_s = 3.0;
  // The program and its arguments, run once per rank.
  std::vector<std::string> command;
  // Only in the hidden remote mode.
  std::optional<RemotePart> remote;
};

}  // namespace weftrun
