// Turns the signals weftrun cares about into readable events on a file descriptor (signalfd), so
// the main loop handles them one at a time between polls, with no handler racing the loop.
#pragma once

#include <signal.h>

#include <string>
#include <vector>

namespace weftrun {

class SignalChannel {
 public:
  SignalChannel() = default;
  ~SignalChannel();
  SignalChannel(const SignalChannel&) = delete;
  SignalChannel& operator=(const SignalChannel&) = delete;

  // Blocks SIGCHLD and the forwarded signals and opens the signalfd; also ignores SIGPIPE so a
  // closed stdout cannot kill weftrun. Must run before the first fork so no SIGCHLD is lost.
  bool Open(std::string* error);

  int fd() const { return fd_; }
  // The mask and SIGPIPE action weftrun started with, to restore in each rank.
  const sigset_t& original_mask() const { return original_mask_; }
  const struct sigaction& original_sigpipe() const { return original_sigpipe_; }

  // Returns the signals received since the last call, in arrival order (never blocks).
  std::vector<int> ReadPending();

 private:
  int fd_ = -1;
  sigset_t original_mask_;
  struct sigaction original_sigpipe_;
};

// The signals weftrun passes on to every rank's process group.
inline constexpr int kForwardedSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

}  // namespace weftrun
