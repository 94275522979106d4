// Where the ranks of a job run and how they find each other: the hosts' shares of the ranks
// (block placement: the first host's slots fill first), the rendezvous address and the secret.
// The weftrun a user starts (the top) plans the job; a remote part is told its share.
#pragma once

#include <string>
#include <vector>

#include "launcher/launch_options.h"
#include "launcher/rank_env.h"

namespace weftrun {

// One host's share: ranks first_rank .. first_rank + count - 1.
struct HostPart {
  std::string host;
  bool local = false;  // this machine: the ranks are started directly, without the launch agent
  int first_rank = 0;
  int count = 0;
};

struct JobLayout {
  int nranks = 0;
  // Hosts with at least one rank, in rank order. Without -H/--hostfile: one local part.
  std::vector<HostPart> parts;
  // The ranks this weftrun starts itself, ascending, and the host name each is reported under.
  std::vector<int> local_ranks;
  std::vector<std::string> local_hosts;
  // Some ranks run on other hosts (reached through the launch agent or, in a remote part, the
  // top): rank 0 listens on a real interface rather than loopback.
  bool several_hosts = false;
  std::string root_addr;  // WEFT_ROOT_ADDR, "host:port"
  std::string secret;     // WEFT_SECRET, the same on every host
};

// Plans the job for the top weftrun. env is weftrun's environment (an inherited WEFT_SECRET is
// kept, as is one given with -x). Returns false with a message naming the arguments at fault,
// e.g. "-n 10 exceeds the 8 slots of -H".
bool PlanJob(const LaunchOptions& options, const EnvBlock& env, JobLayout* layout,
             std::string* error);

// The layout of a remote part, as the top described it on the command line, with the secret
// the top sends as the first line of stdin (waited for up to timeout_ms).
bool ReceiveJob(const LaunchOptions& options, int timeout_ms, JobLayout* layout,
                std::string* error);

}  // namespace weftrun
