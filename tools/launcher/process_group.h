// Starting ranks in their own process groups, signalling those groups, and learning how a rank
// ended, without ever touching a process weftrun did not start.
#pragma once

#include <signal.h>
#include <sys/resource.h>
#include <sys/types.h>

#include <optional>
#include <string>

namespace weftrun {

// Process state that weftrun changes for itself but a rank must start without: weftrun blocks
// the signals it reads through a signalfd, ignores SIGPIPE and may raise its open-file limit.
struct ChildSetup {
  sigset_t original_mask;
  struct sigaction original_sigpipe;
  rlimit original_nofile;
  // Non-zero: the signal a rank gets if weftrun dies (PR_SET_PDEATHSIG) without ending it.
  int parent_death_signal = 0;
};

struct SpawnRequest {
  char* const* argv;  // argv[0] is looked up in PATH
  char* const* envp;
  int stdin_fd = -1;  // -1: inherit weftrun's
  int stdout_fd = -1;
  int stderr_fd = -1;
};

struct SpawnResult {
  pid_t pid = -1;                     // also the id of the rank's process group
  int error = 0;                      // errno of the step that failed, 0 on success
  const char* failed_step = nullptr;  // "pipe", "fork" or "exec"
};

// Forks and execs one rank as the leader of a new process group. Waits until the exec has
// happened, so an exec failure (program not found) is reported here rather than as an exit 127
// that would look like the program's own.
SpawnResult SpawnRank(const SpawnRequest& request, const ChildSetup& setup);

// Sends sig to the rank's process group, so helpers the rank started get it too. Only called
// while the leader is unreaped (running or a zombie): that keeps its pid, and therefore the group
// id, from being reused by an unrelated process.
void SignalRankGroup(pid_t leader, int sig);

// How a rank's leader process ended.
struct ExitInfo {
  bool signaled = false;
  int code = 0;  // exit status, or the signal number when signaled
  bool core_dumped = false;

  bool Failed() const { return signaled || code != 0; }
  // The status a shell would report: the exit status, or 128 + signal.
  int ShellStatus() const { return signaled ? 128 + code : code; }
};

// "exited with status 3" or "was killed by signal 9 (Killed)".
std::string DescribeExit(const ExitInfo& info);

// Reports whether the leader has exited, leaving it a zombie (WNOWAIT) so that its group id stays
// reserved until weftrun has dealt with whatever else is in the group.
std::optional<ExitInfo> PeekExit(pid_t pid);

// Reaps an exited leader.
void Reap(pid_t pid);

}  // namespace weftrun
