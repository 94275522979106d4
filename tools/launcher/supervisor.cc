#include "launcher/supervisor.h"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "launcher/output_relay.h"
#include "launcher/process_group.h"
#include "launcher/rank_env.h"
#include "launcher/rank_starter.h"
#include "launcher/signal_channel.h"

namespace weftrun {
namespace {

using Clock = std::chrono::steady_clock;

// Failures caused by the teardown are listed up to this many and then only counted, so that a
// large job does not bury the line that names the real cause.
constexpr int kMaxListedEndedRanks = 8;

struct Rank {
  pid_t pid = -1;       // -1: not started
  bool exited = false;  // the leader has exited; it stays a zombie until Finish() reaps it
  std::unique_ptr<OutputRelay> out;
  std::unique_ptr<OutputRelay> err;
};

enum class Phase {
  kRunning,  // the job runs normally
  kEnding,   // ranks were sent SIGTERM (or the signal weftrun got); SIGKILL at kill_deadline_
  kKilled,   // ranks were sent SIGKILL; waiting for the leaders to go
};

Clock::duration Seconds(double seconds) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

class Supervisor {
 public:
  explicit Supervisor(const LaunchOptions& options) : options_(options), ranks_(options.nranks) {}
  int Run();

 private:
  bool Prepare(EnvBlock* job_env);
  void StartRanks(const EnvBlock& job_env);
  void Loop();
  int PollTimeoutMs() const;
  void OnSignal(int sig);
  void CollectExits();
  void OnRankExit(int rank, const ExitInfo& info);
  void CheckDeadlines();
  void BeginEnding(int sig);
  void SignalAll(int sig);
  int Finish();
  void SetCause(int exit_code) {
    if (!exit_code_) exit_code_ = exit_code;
  }
  void Report(const char* format, ...) __attribute__((format(printf, 2, 3)));

  const LaunchOptions& options_;
  std::vector<Rank> ranks_;
  SignalChannel signals_;
  ChildSetup child_setup_{};
  OutputSink stdout_sink_{STDOUT_FILENO};
  OutputSink stderr_sink_{STDERR_FILENO};
  int running_ = 0;  // started leaders that have not exited
  Phase phase_ = Phase::kRunning;
  std::optional<int> exit_code_;  // set by the first cause only
  Clock::time_point job_deadline_ = Clock::time_point::max();
  Clock::time_point kill_deadline_ = Clock::time_point::max();
  int listed_ended_ = 0;
  int unlisted_ended_ = 0;
};

int Supervisor::Run() {
  EnvBlock job_env;
  if (!Prepare(&job_env)) return 1;
  if (options_.timeout_s) job_deadline_ = Clock::now() + Seconds(*options_.timeout_s);
  StartRanks(job_env);
  Loop();
  return Finish();
}

bool Supervisor::Prepare(EnvBlock* job_env) {
  // First, so that the signalfd cannot take the number of a closed stdout.
  PrepareDescriptors(options_, &child_setup_);
  std::string error;
  if (!signals_.Open(&error)) {
    Report("weftrun: %s\n", error.c_str());
    return false;
  }
  child_setup_.original_mask = signals_.original_mask();
  child_setup_.original_sigpipe = signals_.original_sigpipe();
  if (!PrepareJobEnvironment(options_, job_env, &error)) {
    Report("weftrun: %s\n", error.c_str());
    return false;
  }
  return true;
}

void Supervisor::StartRanks(const EnvBlock& job_env) {
  StartFailure failure;
  std::vector<StartedRank> started = weftrun::StartRanks(options_, job_env, child_setup_, &failure);
  for (size_t r = 0; r < started.size(); ++r) {
    ranks_[r].pid = started[r].pid;
    ++running_;
    if (started[r].stdout_fd >= 0) {
      ranks_[r].out =
          std::make_unique<OutputRelay>(started[r].stdout_fd, &stdout_sink_, static_cast<int>(r));
      ranks_[r].err =
          std::make_unique<OutputRelay>(started[r].stderr_fd, &stderr_sink_, static_cast<int>(r));
    }
  }
  if (failure.rank < 0) return;
  const SpawnResult& result = failure.result;
  bool exec_failed = std::strcmp(result.failed_step, "exec") == 0;
  const char* what = exec_failed ? options_.command[0].c_str() : result.failed_step;
  Report("weftrun: cannot start rank %d: %s: %s\n", failure.rank, what,
         std::strerror(result.error));
  // The shell's convention: 127 for a program that is not there, 126 for one that cannot run.
  SetCause(!exec_failed ? 1 : result.error == ENOENT ? 127 : 126);
  BeginEnding(SIGTERM);
}

void Supervisor::Loop() {
  std::vector<pollfd> fds;
  std::vector<OutputRelay*> relays;  // relays[i] belongs to fds[i + 1]
  while (running_ > 0) {
    fds.assign(1, pollfd{signals_.fd(), POLLIN, 0});
    relays.clear();
    for (Rank& rank : ranks_) {
      for (OutputRelay* relay : {rank.out.get(), rank.err.get()}) {
        if (relay && relay->fd() >= 0) {
          fds.push_back(pollfd{relay->fd(), POLLIN, 0});
          relays.push_back(relay);
        }
      }
    }
    if (poll(fds.data(), fds.size(), PollTimeoutMs()) < 0 && errno != EINTR) {
      Report("weftrun: poll: %s\n", std::strerror(errno));
      SetCause(1);
      SignalAll(SIGKILL);
      phase_ = Phase::kKilled;
    }
    // Output first, so a rank's last lines come before weftrun's report of its exit.
    for (size_t i = 1; i < fds.size(); ++i) {
      if (fds[i].revents != 0) relays[i - 1]->ReadOnce();
    }
    if (fds[0].revents & POLLIN) {
      for (int sig : signals_.ReadPending()) OnSignal(sig);
      // SIGCHLDs coalesce, so every pass looks at all ranks rather than counting signals.
      CollectExits();
    }
    CheckDeadlines();
  }
}

int Supervisor::PollTimeoutMs() const {
  Clock::time_point deadline = phase_ == Phase::kRunning  ? job_deadline_
                               : phase_ == Phase::kEnding ? kill_deadline_
                                                          : Clock::time_point::max();
  if (deadline == Clock::time_point::max()) return -1;
  Clock::duration remaining = deadline - Clock::now();
  if (remaining <= Clock::duration::zero()) return 0;
  auto ms = std::chrono::ceil<std::chrono::milliseconds>(remaining).count();
  return static_cast<int>(std::min<decltype(ms)>(ms, INT_MAX));
}

void Supervisor::OnSignal(int sig) {
  if (sig == SIGCHLD) return;  // the caller collects exits after each batch
  if (sig == SIGUSR1 || sig == SIGUSR2) {
    SignalAll(sig);
    return;
  }
  // SIGINT, SIGTERM, SIGHUP, SIGQUIT: the ranks get the same signal and the grace period.
  if (phase_ == Phase::kRunning) {
    Report("weftrun: received signal %d (%s); ending ranks\n", sig, strsignal(sig));
    SetCause(128 + sig);
    BeginEnding(sig);
  } else if (phase_ == Phase::kEnding) {
    // Asked again while ranks are being ended (a second Ctrl-C): stop waiting out the grace.
    SignalAll(SIGKILL);
    phase_ = Phase::kKilled;
  }
}

void Supervisor::CollectExits() {
  for (int r = 0; r < options_.nranks; ++r) {
    Rank& rank = ranks_[r];
    if (rank.pid < 0 || rank.exited) continue;
    std::optional<ExitInfo> info = PeekExit(rank.pid);
    if (!info) continue;
    rank.exited = true;
    --running_;
    OnRankExit(r, *info);
  }
}

void Supervisor::OnRankExit(int rank, const ExitInfo& info) {
  Rank& state = ranks_[rank];
  if (state.out) state.out->Drain();
  if (state.err) state.err->Drain();
  if (!info.Failed()) return;
  std::string what = DescribeExit(info);
  if (phase_ == Phase::kRunning) {
    Report("weftrun: rank %d (pid %d) %s\n", rank, static_cast<int>(state.pid), what.c_str());
    SetCause(info.ShellStatus());
    if (!options_.keep_going) BeginEnding(SIGTERM);
  } else if (listed_ended_ < kMaxListedEndedRanks) {
    Report("weftrun: rank %d (pid %d) %s (ended by weftrun)\n", rank, static_cast<int>(state.pid),
           what.c_str());
    ++listed_ended_;
  } else {
    ++unlisted_ended_;
  }
}

void Supervisor::CheckDeadlines() {
  Clock::time_point now = Clock::now();
  if (phase_ == Phase::kRunning && now >= job_deadline_) {
    Report("weftrun: timeout after %g s; ending ranks\n", *options_.timeout_s);
    SetCause(124);
    BeginEnding(SIGTERM);
  }
  if (phase_ == Phase::kEnding && now >= kill_deadline_) {
    SignalAll(SIGKILL);
    phase_ = Phase::kKilled;
  }
}

void Supervisor::BeginEnding(int sig) {
  phase_ = Phase::kEnding;
  kill_deadline_ = Clock::now() + Seconds(options_.grace_s);
  SignalAll(sig);
  // A stopped rank would only act on the signal once continued, after the grace period.
  SignalAll(SIGCONT);
}

void Supervisor::SignalAll(int sig) {
  // Exited leaders are included: their zombies hold the group ids, and helpers they left behind
  // in the group must be ended too.
  for (const Rank& rank : ranks_) {
    if (rank.pid > 0) SignalRankGroup(rank.pid, sig);
  }
}

int Supervisor::Finish() {
  // Every leader has exited but is not yet reaped, so each group id is still weftrun's own: kill
  // anything a rank left running in its group, so that nothing outlives the job, then reap.
  SignalAll(SIGKILL);
  for (const Rank& rank : ranks_) {
    if (rank.pid > 0) Reap(rank.pid);
  }
  for (Rank& rank : ranks_) {
    if (rank.out) rank.out->Finish();
    if (rank.err) rank.err->Finish();
  }
  if (unlisted_ended_ > 0) Report("weftrun: %d more ranks ended by weftrun\n", unlisted_ended_);
  return exit_code_.value_or(0);
}

void Supervisor::Report(const char* format, ...) {
  char line[1024];
  va_list args;
  va_start(args, format);
  int length = std::vsnprintf(line, sizeof line, format, args);
  va_end(args);
  if (length < 0) return;
  // One write per message; output relayed to stderr goes through the same sink, so it stays in
  // order with these messages.
  stderr_sink_.Write(std::string_view(line, std::min<size_t>(length, sizeof line - 1)));
}

}  // namespace

int RunJob(const LaunchOptions& options) {
  return Supervisor(options).Run();
}

}  // namespace weftrun
