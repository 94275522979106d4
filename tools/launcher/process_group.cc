#include "launcher/process_group.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace weftrun {
namespace {

// Runs in the forked child. weftrun is single-threaded, so the child may use any function, but
// it keeps to plain system calls anyway. Never returns.
[[noreturn]] void ExecRank(const SpawnRequest& request, const ChildSetup& setup, int status_fd,
                           pid_t parent) {
  // Also done by the parent; whichever runs first wins, and the group exists before either of
  // them goes on, so a signal sent to the group right after fork cannot miss the child.
  setpgid(0, 0);
  // The descriptors weftrun passes are >= 3 (it keeps 0-2 open), so dup2 always makes a copy
  // without FD_CLOEXEC.
  if (request.stdin_fd >= 0) dup2(request.stdin_fd, STDIN_FILENO);
  if (request.stdout_fd >= 0) dup2(request.stdout_fd, STDOUT_FILENO);
  if (request.stderr_fd >= 0) dup2(request.stderr_fd, STDERR_FILENO);
  sigaction(SIGPIPE, &setup.original_sigpipe, nullptr);
  setrlimit(RLIMIT_NOFILE, &setup.original_nofile);
  if (setup.parent_death_signal != 0) {
    prctl(PR_SET_PDEATHSIG, setup.parent_death_signal);
    if (getppid() != parent) _exit(128 + setup.parent_death_signal);  // it died before prctl
  }
  // Last: a signal forwarded from now on gets the rank's default action, as it should.
  sigprocmask(SIG_SETMASK, &setup.original_mask, nullptr);
  execvpe(request.argv[0], request.argv, request.envp);
  int error = errno;
  ssize_t ignored = write(status_fd, &error, sizeof error);
  (void)ignored;
  _exit(127);
}

}  // namespace

SpawnResult SpawnRank(const SpawnRequest& request, const ChildSetup& setup) {
  SpawnResult result;
  // The child writes errno here if exec fails; a successful exec closes it (O_CLOEXEC), so the
  // parent reads either 4 bytes or end-of-file.
  int status_pipe[2];
  if (pipe2(status_pipe, O_CLOEXEC) != 0) {
    result.error = errno;
    result.failed_step = "pipe";
    return result;
  }
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    result.error = errno;
    result.failed_step = "fork";
    close(status_pipe[0]);
    close(status_pipe[1]);
    return result;
  }
  if (pid == 0) ExecRank(request, setup, status_pipe[1], parent);
  close(status_pipe[1]);
  setpgid(pid, pid);  // fails with EACCES once the child has exec'd; it did it itself by then
  int child_error = 0;
  ssize_t n;
  do {
    n = read(status_pipe[0], &child_error, sizeof child_error);
  } while (n < 0 && errno == EINTR);
  close(status_pipe[0]);
  if (n == static_cast<ssize_t>(sizeof child_error)) {
    // Reap it here so that it is never mistaken for a rank that ran and failed.
    while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    result.error = child_error;
    result.failed_step = "exec";
    return result;
  }
  result.pid = pid;
  return result;
}

void SignalRankGroup(pid_t leader, int sig) {
  kill(-leader, sig);
  // A rank that moved itself to another group (setsid) is no longer reached through its old
  // group id; signal it directly. Its pid is still ours: it has not been reaped.
  if (getpgid(leader) != leader) kill(leader, sig);
}

std::string DescribeExit(const ExitInfo& info) {
  if (!info.signaled) return "exited with status " + std::to_string(info.code);
  const char* name = strsignal(info.code);
  std::string text = "was killed by signal " + std::to_string(info.code);
  if (name) text += std::string(" (") + name + ")";
  if (info.core_dumped) text += " (core dumped)";
  return text;
}

std::optional<ExitInfo> PeekExit(pid_t pid) {
  siginfo_t info;
  std::memset(&info, 0, sizeof info);  // si_pid stays 0 when WNOHANG finds nothing
  if (waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0) {
    // ECHILD cannot happen while SIGCHLD is not ignored and only weftrun reaps; treat it as
    // "gone" rather than wait forever for an exit that will never be seen.
    if (errno == EINTR) return std::nullopt;
    return ExitInfo{true, SIGKILL, false};
  }
  if (info.si_pid == 0) return std::nullopt;
  ExitInfo exit;
  exit.signaled = info.si_code == CLD_KILLED || info.si_code == CLD_DUMPED;
  exit.core_dumped = info.si_code == CLD_DUMPED;
  exit.code = info.si_status;
  return exit;
}

void Reap(pid_t pid) {
  while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
}

}  // namespace weftrun
