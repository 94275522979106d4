#include "launcher/supervisor.h"

#include <fcntl.h>
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

#include "launcher/failure_report.h"
#include "launcher/job_layout.h"
#include "launcher/output_relay.h"
#include "launcher/process_group.h"
#include "launcher/rank_env.h"
#include "launcher/rank_starter.h"
#include "launcher/remote_host.h"
#include "launcher/remote_protocol.h"
#include "launcher/signal_channel.h"

namespace weftrun {
namespace {

using Clock = std::chrono::steady_clock;

// Across hosts, how long the top collects failures after the first it hears of before naming
// the earliest (failure_report.h).
constexpr auto kBlameWindow = std::chrono::milliseconds(300);
// How long a remote weftrun may take to exit once its stdin is closed, before its agent is
// killed outright (its ranks then die through PR_SET_PDEATHSIG).
constexpr auto kAgentKillDelay = std::chrono::seconds(2);
// How long a remote part waits for the secret on stdin.
constexpr int kSecretTimeoutMs = 30000;

struct Rank {
  int id = 0;           // the rank in the job
  std::string host;     // for messages
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
  explicit Supervisor(const LaunchOptions& options) : options_(options) {}
  int Run();

 private:
  bool Prepare(EnvBlock* job_env);
  void StartRanks(const EnvBlock& job_env);
  void StartHosts();
  void Loop();
  int PollTimeoutMs() const;
  void OnSignal(int sig, bool from_top);
  void OnControl();
  void CollectExits();
  void OnRankExit(Rank& rank, const ExitInfo& info);
  void OnHostExit(RemoteHost& host, const ExitInfo& info);
  void OnFailure(const Failure& failure, bool own);
  void Blame();
  void Write(const std::string& line) { stderr_sink_.Write(line); }
  void CheckDeadlines();
  void BeginEnding(int sig);
  void SignalAll(int sig);
  int Finish();
  void SetCause(int exit_code) {
    if (!exit_code_) exit_code_ = exit_code;
  }
  void Report(const char* format, ...) __attribute__((format(printf, 2, 3)));

  const LaunchOptions& options_;
  JobLayout layout_;
  std::vector<Rank> ranks_;
  std::vector<std::unique_ptr<RemoteHost>> hosts_;
  SignalChannel signals_;
  ChildSetup child_setup_{};
  OutputSink stdout_sink_{STDOUT_FILENO};
  OutputSink stderr_sink_{STDERR_FILENO};
  ControlReader control_;  // a remote part's stdin
  bool control_open_ = false;
  int running_ = 0;  // started leaders (ranks and agents) that have not exited
  Phase phase_ = Phase::kRunning;
  std::optional<int> exit_code_;  // set by the first cause only
  Clock::time_point job_deadline_ = Clock::time_point::max();
  Clock::time_point kill_deadline_ = Clock::time_point::max();
  Clock::time_point agent_kill_deadline_ = Clock::time_point::max();
  std::optional<FailureReport> report_;  // made once the layout is known
  Clock::time_point blame_deadline_ = Clock::time_point::max();
};

int Supervisor::Run() {
  EnvBlock job_env;
  if (!Prepare(&job_env)) return 1;
  if (options_.timeout_s) job_deadline_ = Clock::now() + Seconds(*options_.timeout_s);
  StartRanks(job_env);
  StartHosts();
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
  // Should weftrun itself be killed outright, its ranks die with it rather than run on as
  // orphans (on other hosts, a weftrun whose agent is killed).
  child_setup_.parent_death_signal = SIGKILL;
  if (options_.remote) {
    if (!ReceiveJob(options_, kSecretTimeoutMs, &layout_, &error)) {
      Report("weftrun (%s): %s\n", options_.remote->host.c_str(), error.c_str());
      return false;
    }
    fcntl(STDIN_FILENO, F_SETFL, fcntl(STDIN_FILENO, F_GETFL) | O_NONBLOCK);
    control_open_ = true;
    if (!options_.remote->wdir.empty() && chdir(options_.remote->wdir.c_str()) != 0) {
      Report("weftrun (%s): warning: cannot enter %s: %s\n", options_.remote->host.c_str(),
             options_.remote->wdir.c_str(), std::strerror(errno));
    }
  } else if (!PlanJob(options_, EnvBlock::FromProcess(), &layout_, &error)) {
    Report("weftrun: %s\n", error.c_str());
    return false;
  }
  PrepareJobEnvironment(options_, layout_, job_env);
  report_.emplace(layout_.several_hosts, options_.keep_going,
                  [this](const std::string& line) { Write(line); });
  return true;
}

void Supervisor::StartRanks(const EnvBlock& job_env) {
  ranks_.resize(layout_.local_ranks.size());
  StartFailure failure;
  std::vector<StartedRank> started =
      weftrun::StartRanks(options_, layout_, job_env, child_setup_, &failure);
  RelayFormat format = options_.remote ? RelayFormat::kFrames : RelayFormat::kTaggedLines;
  for (size_t r = 0; r < ranks_.size(); ++r) {
    Rank& rank = ranks_[r];
    rank.id = layout_.local_ranks[r];
    rank.host = layout_.local_hosts[r];
    if (r >= started.size()) continue;
    rank.pid = started[r].pid;
    ++running_;
    if (started[r].stdout_fd >= 0) {
      rank.out = std::make_unique<OutputRelay>(started[r].stdout_fd, &stdout_sink_, rank.id, format,
                                               false);
      rank.err = std::make_unique<OutputRelay>(started[r].stderr_fd,
                                               options_.remote ? &stdout_sink_ : &stderr_sink_,
                                               rank.id, format, true);
    }
  }
  if (failure.rank < 0) return;
  const SpawnResult& result = failure.result;
  bool exec_failed = std::strcmp(result.failed_step, "exec") == 0;
  const char* what = exec_failed ? options_.command[0].c_str() : result.failed_step;
  if (options_.remote) {
    Report("weftrun (%s): cannot start rank %d: %s: %s\n", options_.remote->host.c_str(),
           failure.rank, what, std::strerror(result.error));
  } else {
    Report("weftrun: cannot start rank %d: %s: %s\n", failure.rank, what,
           std::strerror(result.error));
  }
  // The shell's convention: 127 for a program that is not there, 126 for one that cannot run.
  SetCause(!exec_failed ? 1 : result.error == ENOENT ? 127 : 126);
  BeginEnding(SIGTERM);
}

void Supervisor::StartHosts() {
  if (phase_ != Phase::kRunning) return;  // a local rank could not start: the job is over
  for (const HostPart& part : layout_.parts) {
    if (part.local) continue;
    auto host = std::make_unique<RemoteHost>(
        part, options_.tag_output, &stdout_sink_, &stderr_sink_,
        [this](const RemoteHost& from, const RankFailure& failure) {
          Failure cause{failure.rank, from.part().host, failure.pid, failure.info, failure.time_ns};
          OnFailure(cause, failure.own);
        });
    SpawnResult result = host->Start(options_, layout_, child_setup_);
    if (result.pid < 0) {
      Report("weftrun: cannot start the launch agent for %s: %s: %s\n", part.host.c_str(),
             options_.launch_agent[0].c_str(), std::strerror(result.error));
      SetCause(result.error == ENOENT ? 127 : 1);
      BeginEnding(SIGTERM);
      return;
    }
    ++running_;
    hosts_.push_back(std::move(host));
  }
}

void Supervisor::Loop() {
  std::vector<pollfd> fds;
  // What each of fds[1..] is: a local rank's relay, a host's frames, or the control stdin.
  std::vector<OutputRelay*> relays;
  std::vector<RemoteHost*> hosts;
  while (running_ > 0) {
    fds.assign(1, pollfd{signals_.fd(), POLLIN, 0});
    relays.clear();
    hosts.clear();
    for (Rank& rank : ranks_) {
      for (OutputRelay* relay : {rank.out.get(), rank.err.get()}) {
        if (relay && relay->fd() >= 0) {
          fds.push_back(pollfd{relay->fd(), POLLIN, 0});
          relays.push_back(relay);
          hosts.push_back(nullptr);
        }
      }
    }
    for (auto& host : hosts_) {
      if (host->stdout_fd() >= 0) {
        fds.push_back(pollfd{host->stdout_fd(), POLLIN, 0});
        relays.push_back(nullptr);
        hosts.push_back(host.get());
      }
    }
    size_t control_index = fds.size();
    if (control_open_) fds.push_back(pollfd{STDIN_FILENO, POLLIN, 0});
    if (poll(fds.data(), fds.size(), PollTimeoutMs()) < 0 && errno != EINTR) {
      Report("weftrun: poll: %s\n", std::strerror(errno));
      SetCause(1);
      SignalAll(SIGKILL);
      phase_ = Phase::kKilled;
    }
    // Output first, so a rank's last lines come before weftrun's report of its exit.
    for (size_t i = 1; i < control_index; ++i) {
      if (fds[i].revents == 0) continue;
      if (relays[i - 1]) relays[i - 1]->ReadOnce();
      if (hosts[i - 1]) hosts[i - 1]->ReadOnce();
    }
    if (control_open_ && fds[control_index].revents != 0) OnControl();
    if (fds[0].revents & POLLIN) {
      for (int sig : signals_.ReadPending()) OnSignal(sig, false);
      // SIGCHLDs coalesce, so every pass looks at all ranks rather than counting signals.
      CollectExits();
    }
    CheckDeadlines();
  }
}

int Supervisor::PollTimeoutMs() const {
  Clock::time_point deadline = phase_ == Phase::kRunning  ? job_deadline_
                               : phase_ == Phase::kEnding ? kill_deadline_
                                                          : agent_kill_deadline_;
  deadline = std::min(deadline, blame_deadline_);
  if (deadline == Clock::time_point::max()) return -1;
  Clock::duration remaining = deadline - Clock::now();
  if (remaining <= Clock::duration::zero()) return 0;
  auto ms = std::chrono::ceil<std::chrono::milliseconds>(remaining).count();
  return static_cast<int>(std::min<decltype(ms)>(ms, INT_MAX));
}

// from_top: a remote part asked by the top (which reports the cause itself).
void Supervisor::OnSignal(int sig, bool from_top) {
  if (sig == SIGCHLD) return;  // the caller collects exits after each batch
  if (sig == SIGUSR1 || sig == SIGUSR2) {
    SignalAll(sig);
    return;
  }
  // SIGINT, SIGTERM, SIGHUP, SIGQUIT: the ranks get the same signal and the grace period.
  if (phase_ == Phase::kRunning) {
    if (!from_top) Report("weftrun: received signal %d (%s); ending ranks\n", sig, strsignal(sig));
    SetCause(128 + sig);
    BeginEnding(sig);
  } else if (phase_ == Phase::kEnding && !from_top) {
    // Asked again while ranks are being ended (a second Ctrl-C): stop waiting out the grace.
    // (The top passes its own second signal on by closing stdin.)
    SignalAll(SIGKILL);
    phase_ = Phase::kKilled;
  }
}

// A remote part's stdin: signals the top passes on, and end of file when the top is gone or
// gives up on this host.
void Supervisor::OnControl() {
  bool eof = false;
  for (int sig : control_.ReadPending(STDIN_FILENO, &eof)) OnSignal(sig, true);
  if (!eof) return;
  control_open_ = false;
  if (phase_ == Phase::kRunning) {
    SetCause(128 + SIGHUP);
    BeginEnding(SIGTERM);
  } else if (phase_ == Phase::kEnding) {
    SignalAll(SIGKILL);
    phase_ = Phase::kKilled;
  }
}

void Supervisor::CollectExits() {
  for (Rank& rank : ranks_) {
    if (rank.pid < 0 || rank.exited) continue;
    std::optional<ExitInfo> info = PeekExit(rank.pid);
    if (!info) continue;
    rank.exited = true;
    --running_;
    OnRankExit(rank, *info);
  }
  for (auto& host : hosts_) {
    if (host->exited()) continue;
    std::optional<ExitInfo> info = PeekExit(host->pid());
    if (!info) continue;
    host->set_exited();
    --running_;
    OnHostExit(*host, *info);
  }
}

void Supervisor::OnRankExit(Rank& rank, const ExitInfo& info) {
  if (rank.out) rank.out->Drain();
  if (rank.err) rank.err->Drain();
  if (!info.Failed()) return;
  bool own = phase_ == Phase::kRunning;
  Failure failure{rank.id, rank.host, static_cast<int>(rank.pid), info, RealtimeNs()};
  if (options_.remote) {
    // The top names the cause; this host only reports, and ends its own ranks at once.
    stdout_sink_.Write(FailureFrame(RankFailure{rank.id, failure.pid, info, own, failure.time_ns}));
    if (own) {
      SetCause(info.ShellStatus());
      if (!options_.keep_going) BeginEnding(SIGTERM);
    }
    return;
  }
  OnFailure(failure, own);
}

void Supervisor::OnHostExit(RemoteHost& host, const ExitInfo& info) {
  host.Drain();  // its last frames, failures included
  // Once the job is ending, its status only says that it was ended; its ranks were named.
  if (!info.Failed() || host.reported_failure() || phase_ != Phase::kRunning) return;
  // The remote weftrun could not run (ssh failed, no weftrun there) or was ended on its host.
  Failure failure{-1, host.part().host, static_cast<int>(host.pid()), info, RealtimeNs()};
  OnFailure(failure, phase_ == Phase::kRunning);
}

// A failure seen by this weftrun or reported by a remote one. own: it happened while the job
// ran, rather than as weftrun was ending it.
void Supervisor::OnFailure(const Failure& failure, bool own) {
  if (!own) {
    report_->Ended(failure);
  } else if (exit_code_ && !report_->collecting()) {
    report_->Later(failure);  // the cause is known already (--keep-going, or a timeout)
  } else if (report_->Suspect(failure)) {
    if (!layout_.several_hosts) {
      SetCause(failure.info.ShellStatus());
    } else {
      blame_deadline_ = Clock::now() + kBlameWindow;
    }
    if (!options_.keep_going) BeginEnding(SIGTERM);
  }
}

void Supervisor::Blame() {
  blame_deadline_ = Clock::time_point::max();
  // The failure happened before anything else could end the job, so its status is the job's.
  if (std::optional<int> status = report_->Blame()) exit_code_ = *status;
}

void Supervisor::CheckDeadlines() {
  Clock::time_point now = Clock::now();
  if (now >= blame_deadline_) Blame();
  if (phase_ == Phase::kRunning && now >= job_deadline_) {
    Report("weftrun: timeout after %g s; ending ranks\n", *options_.timeout_s);
    SetCause(124);
    BeginEnding(SIGTERM);
  }
  if (phase_ == Phase::kEnding && now >= kill_deadline_) {
    SignalAll(SIGKILL);
    phase_ = Phase::kKilled;
  }
  if (phase_ == Phase::kKilled && now >= agent_kill_deadline_) {
    // A remote weftrun that did not exit after its stdin closed: kill its agent.
    for (auto& host : hosts_) {
      if (!host->exited()) SignalRankGroup(host->pid(), SIGKILL);
    }
    agent_kill_deadline_ = Clock::time_point::max();
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
  // Other hosts end their ranks themselves, with their own grace period; SIGKILL closes their
  // stdin, which makes them kill their ranks at once.
  for (auto& host : hosts_) {
    if (sig == SIGKILL) {
      host->HangUp();
    } else if (sig != SIGCONT) {
      host->Signal(sig);
    }
  }
  if (sig == SIGKILL && !hosts_.empty() && agent_kill_deadline_ == Clock::time_point::max()) {
    agent_kill_deadline_ = Clock::now() + kAgentKillDelay;
  }
}

int Supervisor::Finish() {
  // Every leader has exited but is not yet reaped, so each group id is still weftrun's own: kill
  // anything a rank left running in its group, so that nothing outlives the job, then reap.
  SignalAll(SIGKILL);
  for (const Rank& rank : ranks_) {
    if (rank.pid > 0) Reap(rank.pid);
  }
  for (auto& host : hosts_) {
    SignalRankGroup(host->pid(), SIGKILL);
    Reap(host->pid());
  }
  for (Rank& rank : ranks_) {
    if (rank.out) rank.out->Finish();
    if (rank.err) rank.err->Finish();
  }
  for (auto& host : hosts_) host->Finish();
  Blame();
  report_->Summary();
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
