// Starting all ranks of a job: the per-rank environment, stdin, and the output pipes of
// --tag-output. Kept apart from the supervisor, which only deals with running ranks.
#pragma once

#include <sys/types.h>

#include <vector>

#include "launcher/job_layout.h"
#include "launcher/launch_options.h"
#include "launcher/process_group.h"
#include "launcher/rank_env.h"

namespace weftrun {

// Process-wide preparation before the first fork: makes sure descriptors 0-2 are open and, for
// --tag-output, raises the open-file limit for the pipes. Records the original limit in *setup.
void PrepareDescriptors(const LaunchOptions& options, ChildSetup* setup);

struct StartedRank {
  pid_t pid = -1;
  int stdout_fd = -1;  // read ends of the rank's pipes with --tag-output (non-blocking), else -1
  int stderr_fd = -1;
};

struct StartFailure {
  int rank = -1;  // -1: every rank started
  SpawnResult result;
};

// Whether ranks' output goes through pipes to weftrun: with --tag-output, and always in a remote
// part (which sends it to the top in frames).
bool PipesRankOutput(const LaunchOptions& options);

// Starts this weftrun's ranks (layout.local_ranks) in order and stops at the first that cannot
// be started, reporting its rank in *failure. Returns the ranks that were started, in order.
std::vector<StartedRank> StartRanks(const LaunchOptions& options, const JobLayout& layout,
                                    const EnvBlock& job_env, const ChildSetup& setup,
                                    StartFailure* failure);

}  // namespace weftrun
