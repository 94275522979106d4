#include "launcher/signal_channel.h"

#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace weftrun {

SignalChannel::~SignalChannel() {
  if (fd_ >= 0) close(fd_);
}

bool SignalChannel::Open(std::string* error) {
  sigset_t handled;
  sigemptyset(&handled);
  sigaddset(&handled, SIGCHLD);
  for (int sig : kForwardedSignals) {
    struct sigaction current;
    sigaction(sig, nullptr, &current);
    // A signal weftrun was started with ignored (nohup, a background job of a script) stays
    // ignored, for weftrun and, through exec, for the ranks: that is what the caller asked for.
    // Blocking it would instead queue it for the signalfd.
    if (current.sa_handler != SIG_IGN) sigaddset(&handled, sig);
  }
  // waitid() needs SIGCHLD at its default: an inherited SIG_IGN or SA_NOCLDWAIT would make the
  // kernel reap the ranks itself and lose their exit status.
  struct sigaction default_action;
  std::memset(&default_action, 0, sizeof default_action);
  default_action.sa_handler = SIG_DFL;
  sigemptyset(&default_action.sa_mask);
  sigaction(SIGCHLD, &default_action, nullptr);

  if (sigprocmask(SIG_BLOCK, &handled, &original_mask_) != 0) {
    *error = std::string("sigprocmask: ") + std::strerror(errno);
    return false;
  }
  struct sigaction ignore = default_action;
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ignore, &original_sigpipe_);

  fd_ = signalfd(-1, &handled, SFD_NONBLOCK | SFD_CLOEXEC);
  if (fd_ < 0) {
    *error = std::string("signalfd: ") + std::strerror(errno);
    return false;
  }
  return true;
}

std::vector<int> SignalChannel::ReadPending() {
  std::vector<int> signals;
  signalfd_siginfo info[16];
  for (;;) {
    ssize_t n = read(fd_, info, sizeof info);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // EAGAIN: nothing more pending
    for (size_t i = 0; i < static_cast<size_t>(n) / sizeof info[0]; ++i) {
      signals.push_back(static_cast<int>(info[i].ssi_signo));
    }
  }
  return signals;
}

}  // namespace weftrun
