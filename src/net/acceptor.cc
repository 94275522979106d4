#include "net/acceptor.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <utility>
#include <vector>

#include "base/log.h"
#include "net/server_handshake.h"

namespace weft::net {
namespace {

using Clock = std::chrono::steady_clock;

// After an accept() failure that concerns the listener (out of descriptors, say), the listener is
// left alone this long rather than polled in a tight loop.
constexpr int kListenerPauseMs = 100;

// Unix-domain peers have no address to name.
std::string sourceOf(const SocketAddress& from) {
  return from.isValid() ? from.toString() : "a local peer";
}

int64_t millisSince(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
}

// One connection between accept() and the judge.
struct InFlight {
  InFlight(Socket acceptedSocket, SocketAddress peer, const AcceptSpec& spec)
      : socket(std::move(acceptedSocket)),
        from(peer),
        handshake(spec.secret, spec.purpose, spec.commId),
        started(Clock::now()),
        deadline(Deadline::earliest(spec.deadline, Deadline::after(spec.perConnectionMs))) {}

  Socket socket;
  SocketAddress from;
  ServerHandshake handshake;
  std::array<uint8_t, kMaxHelloBytes> hello{};
  size_t helloDone = 0;
  Clock::time_point started;
  Deadline deadline;
};

class Acceptor {
 public:
  Acceptor(const Socket& listener, const AcceptSpec& spec,
           const std::function<Status(Arrival&)>& judge,
           const std::function<std::string()>& describeMissing)
      : listener_(listener), spec_(spec), judge_(judge), describeMissing_(describeMissing) {}

  Status run();

 private:
  bool full() const { return inFlight_.size() >= static_cast<size_t>(spec_.maxInFlight); }
  size_t oldest() const;
  // When full, the moment the oldest connection may be dropped to make room.
  Deadline evictionTime() const;
  bool listening() const;
  Deadline nextWake() const;
  Status acceptPending();
  void step(size_t index);
  void judge(size_t index);
  void drop(size_t index, const std::string& why);
  void dropExpired();
  Status timedOut() const;
  std::string stuckAt(const InFlight& connection) const;

  const Socket& listener_;
  const AcceptSpec& spec_;
  const std::function<Status(Arrival&)>& judge_;
  const std::function<std::string()>& describeMissing_;
  std::vector<InFlight> inFlight_;
  std::vector<pollfd> polled_;
  Deadline listenerPause_ = Deadline::after(0);
  int kept_ = 0;
  std::string lastDrop_;
};

std::string Acceptor::stuckAt(const InFlight& connection) const {
  if (!connection.handshake.done()) return connection.handshake.progress();
  return "the hello after authentication (" + std::to_string(connection.helloDone) + " of " +
         std::to_string(spec_.helloBytes) + " bytes)";
}

size_t Acceptor::oldest() const {
  auto first =
      std::min_element(inFlight_.begin(), inFlight_.end(),
                       [](const InFlight& a, const InFlight& b) { return a.started < b.started; });
  return static_cast<size_t>(first - inFlight_.begin());
}

Deadline Acceptor::evictionTime() const {
  int64_t waitMs = spec_.perConnectionMs / 4 - millisSince(inFlight_[oldest()].started);
  return Deadline::after(std::max<int64_t>(waitMs, 0));
}

bool Acceptor::listening() const {
  return listenerPause_.expired() && (!full() || evictionTime().expired());
}

Deadline Acceptor::nextWake() const {
  Deadline wake = spec_.deadline;
  for (const InFlight& connection : inFlight_) wake = Deadline::earliest(wake, connection.deadline);
  if (!listenerPause_.expired()) wake = Deadline::earliest(wake, listenerPause_);
  if (full()) wake = Deadline::earliest(wake, evictionTime());
  return wake;
}

void Acceptor::drop(size_t index, const std::string& why) {
  InFlight& connection = inFlight_[index];
  std::string from = sourceOf(connection.from);
  WEFT_WARN("%s: dropped a connection from %s: %s", spec_.logName, from.c_str(), why.c_str());
  lastDrop_ = from + " (" + why + ")";
  std::swap(inFlight_[index], inFlight_.back());
  inFlight_.pop_back();
}

void Acceptor::dropExpired() {
  for (size_t i = inFlight_.size(); i-- > 0;) {
    if (!inFlight_[i].deadline.expired()) continue;
    drop(i, "timed out after " + std::to_string(millisSince(inFlight_[i].started)) + " ms in " +
                stuckAt(inFlight_[i]));
  }
}

Status Acceptor::acceptPending() {
  while (listening()) {
    sockaddr_storage storage{};
    socklen_t length = sizeof(storage);
    int fd = accept4(listener_.fd(), reinterpret_cast<sockaddr*>(&storage), &length,
                     SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || isTransientAcceptError(errno)) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return Status::ok();
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        WEFT_WARN("%s: accept failed (%s); pausing the listener for %d ms", spec_.logName,
                  std::strerror(errno), kListenerPauseMs);
        listenerPause_ = Deadline::after(kListenerPauseMs);
        return Status::ok();
      }
      return systemError(std::string(spec_.logName) + ": accept", errno);
    }
    Socket socket(fd);
    SocketAddress from = SocketAddress::fromSockaddr(reinterpret_cast<sockaddr*>(&storage), length);
    // Unix sockets have no TCP_NODELAY; only TCP needs it.
    if (from.isValid()) (void)setNoDelay(socket.fd());
    if (full()) {
      size_t index = oldest();
      const InFlight& victim = inFlight_[index];
      drop(index, "making room (" + std::to_string(spec_.maxInFlight) +
                      " connections in flight), after " +
                      std::to_string(millisSince(victim.started)) + " ms in " + stuckAt(victim));
    }
    inFlight_.emplace_back(std::move(socket), from, spec_);
    // The client usually sent its hello with its connect, so start at once.
    step(inFlight_.size() - 1);
    if (kept_ == spec_.expected) return Status::ok();
  }
  return Status::ok();
}

void Acceptor::step(size_t index) {
  InFlight& connection = inFlight_[index];
  if (!connection.handshake.done()) {
    Status status = connection.handshake.advance(connection.socket.fd());
    if (!status.isOk()) return drop(index, status.message());
    if (!connection.handshake.done()) return;
  }
  bool complete = false;
  Status status = recvToward(connection.socket.fd(), connection.hello.data(), spec_.helloBytes,
                             &connection.helloDone, "the hello after authentication", &complete);
  if (!status.isOk()) return drop(index, status.message());
  if (complete) judge(index);
}

void Acceptor::judge(size_t index) {
  Arrival arrival;
  arrival.socket = std::move(inFlight_[index].socket);
  arrival.from = inFlight_[index].from;
  arrival.hello = inFlight_[index].hello;
  arrival.helloBytes = spec_.helloBytes;
  Status verdict = judge_(arrival);
  if (!verdict.isOk()) return drop(index, verdict.message());
  ++kept_;
  std::swap(inFlight_[index], inFlight_.back());
  inFlight_.pop_back();
}

Status Acceptor::timedOut() const {
  std::string message = describeMissing_() + ": " + std::to_string(kept_) + " of " +
                        std::to_string(spec_.expected) + " connections arrived before the deadline";
  if (!inFlight_.empty()) {
    message += "; " + std::to_string(inFlight_.size()) + " still in flight (one from " +
               sourceOf(inFlight_.front().from) + " in " + stuckAt(inFlight_.front()) + ")";
  }
  if (!lastDrop_.empty()) message += "; the last one dropped came from " + lastDrop_;
  return timeoutError(message);
}

Status Acceptor::run() {
  inFlight_.reserve(static_cast<size_t>(spec_.maxInFlight));
  polled_.reserve(static_cast<size_t>(spec_.maxInFlight) + 1);
  while (kept_ < spec_.expected) {
    if (spec_.deadline.expired()) return timedOut();
    dropExpired();
    polled_.clear();
    polled_.push_back(pollfd{listener_.fd(), static_cast<short>(listening() ? POLLIN : 0), 0});
    for (const InFlight& connection : inFlight_) {
      bool write = !connection.handshake.done() && connection.handshake.wantsWrite();
      polled_.push_back(
          pollfd{connection.socket.fd(), static_cast<short>(write ? POLLOUT : POLLIN), 0});
    }
    // remainingMs rounds down; the extra millisecond avoids waking just before a deadline.
    int rc = poll(polled_.data(), polled_.size(), nextWake().remainingMs() + 1);
    if (rc < 0 && errno != EINTR) return systemError(std::string(spec_.logName) + ": poll", errno);
    if (rc <= 0) continue;
    // Backwards, so that dropping a connection (swapped with the last) skips none of the others.
    for (size_t i = inFlight_.size(); i-- > 0 && kept_ < spec_.expected;) {
      if (polled_[i + 1].revents != 0) step(i);
    }
    if (kept_ < spec_.expected && (polled_[0].revents & POLLIN)) WEFT_TRY(acceptPending());
  }
  for (size_t i = inFlight_.size(); i-- > 0;) {
    drop(i, "not needed any more (all " + std::to_string(spec_.expected) +
                " connections arrived) while still in " + stuckAt(inFlight_[i]));
  }
  return Status::ok();
}

Status checkSpec(const Socket& listener, const AcceptSpec& spec) {
  if (!listener.isOpen()) return invalidArgument("acceptAuthenticated: the listener is not open");
  if (spec.helloBytes > kMaxHelloBytes) {
    return invalidArgument(
        "acceptAuthenticated: spec.helloBytes=" + std::to_string(spec.helloBytes) +
        " exceeds kMaxHelloBytes (" + std::to_string(kMaxHelloBytes) + ")");
  }
  if (spec.expected < 0) {
    return invalidArgument("acceptAuthenticated: spec.expected=" + std::to_string(spec.expected) +
                           " is negative");
  }
  if (spec.perConnectionMs < 1) {
    return invalidArgument("acceptAuthenticated: spec.perConnectionMs=" +
                           std::to_string(spec.perConnectionMs) + " (must be at least 1)");
  }
  if (spec.maxInFlight < 1) {
    return invalidArgument("acceptAuthenticated: spec.maxInFlight=" +
                           std::to_string(spec.maxInFlight) + " (must be at least 1)");
  }
  if (spec.logName == nullptr) return invalidArgument("acceptAuthenticated: spec.logName is null");
  return Status::ok();
}

}  // namespace

Status acceptAuthenticated(const Socket& listener, const AcceptSpec& spec,
                           const std::function<Status(Arrival&)>& judge,
                           const std::function<std::string()>& describeMissing) {
  WEFT_TRY(checkSpec(listener, spec));
  if (!judge || !describeMissing) {
    return invalidArgument("acceptAuthenticated: the judge and describeMissing must be set");
  }
  return Acceptor(listener, spec, judge, describeMissing).run();
}

}  // namespace weft::net
