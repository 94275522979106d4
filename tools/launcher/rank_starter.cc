#include "launcher/rank_starter.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>

namespace weftrun {
namespace {

// A pipe whose read end weftrun polls: non-blocking, so draining at exit cannot hang.
bool OpenOutputPipe(int fds[2]) {
  if (pipe2(fds, O_CLOEXEC) != 0) return false;
  fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK);
  return true;
}

void CloseIfOpen(int fd) {
  if (fd >= 0) close(fd);
}

}  // namespace

void PrepareDescriptors(const LaunchOptions& options, ChildSetup* setup) {
  // With 0-2 open, the pipes and /dev/null handed to ranks are >= 3, so dup2 onto 0-2 always
  // creates a fresh descriptor (one without O_CLOEXEC). open() takes the lowest free number.
  for (int fd = 0; fd <= 2; ++fd) {
    if (fcntl(fd, F_GETFD) < 0) open("/dev/null", O_RDWR);
  }
  getrlimit(RLIMIT_NOFILE, &setup->original_nofile);
  if (!PipesRankOutput(options) && options.hosts.empty()) return;
  // Two pipes per rank (or per host's agent) stay open all job long: 1024 ranks exceed the usual
  // soft limit of 1024.
  rlimit raised = setup->original_nofile;
  rlim_t ranks = static_cast<rlim_t>(options.nranks);
  if (ranks == 0) {
    for (const HostSlots& host : options.hosts) ranks += static_cast<rlim_t>(host.slots);
  }
  rlim_t needed = 2 * ranks + 64;
  if (raised.rlim_cur != RLIM_INFINITY && raised.rlim_cur < needed) {
    raised.rlim_cur = raised.rlim_max == RLIM_INFINITY ? needed : std::min(needed, raised.rlim_max);
    setrlimit(RLIMIT_NOFILE, &raised);
  }
}

bool PipesRankOutput(const LaunchOptions& options) {
  return options.tag_output || options.remote.has_value();
}

std::vector<StartedRank> StartRanks(const LaunchOptions& options, const JobLayout& layout,
                                    const EnvBlock& job_env, const ChildSetup& setup,
                                    StartFailure* failure) {
  std::vector<char*> argv;
  for (const std::string& arg : options.command) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  // Only rank 0 reads weftrun's stdin, as with mpirun, and not from a terminal: a rank is in a
  // background process group, and reading the terminal would stop it with SIGTTIN. A remote
  // part's stdin is its line to the top, never a rank's.
  int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  bool rank0_gets_stdin = !isatty(STDIN_FILENO) && !options.remote;
  bool pipes = PipesRankOutput(options);

  std::vector<StartedRank> started;
  for (size_t local = 0; local < layout.local_ranks.size(); ++local) {
    int r = layout.local_ranks[local];
    EnvBlock env = RankEnvironment(job_env, r, static_cast<int>(local));
    std::vector<char*> envp = env.Pointers();
    SpawnRequest request{argv.data(), envp.data()};
    request.stdin_fd = r == 0 && rank0_gets_stdin ? -1 : null_fd;
    int out_pipe[2] = {-1, -1};
    int err_pipe[2] = {-1, -1};
    SpawnResult result;
    if (pipes && (!OpenOutputPipe(out_pipe) || !OpenOutputPipe(err_pipe))) {
      result.error = errno;
      result.failed_step = "pipe";
    } else {
      request.stdout_fd = out_pipe[1];
      request.stderr_fd = err_pipe[1];
      result = SpawnRank(request, setup);
    }
    // weftrun keeps only the read ends, so the pipes reach EOF once the rank's group is gone.
    CloseIfOpen(out_pipe[1]);
    CloseIfOpen(err_pipe[1]);
    if (result.pid < 0) {
      CloseIfOpen(out_pipe[0]);
      CloseIfOpen(err_pipe[0]);
      failure->rank = r;
      failure->result = result;
      break;
    }
    started.push_back(StartedRank{result.pid, out_pipe[0], err_pipe[0]});
  }
  CloseIfOpen(null_fd);
  return started;
}

}  // namespace weftrun
