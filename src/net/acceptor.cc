#include "net/acceptor.h"

#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <map>
#include <utility>

#include "base/log.h"
#include "net/server_handshake.h"

namespace weft::net {
namespace {

using Clock = std::chrono::steady_clock;

// After an accept() failure that concerns the listener (out of descriptors, say), the listener is
// left alone this long rather than polled in a tight loop.
constexpr int kListenerPauseMs = 100;
// epoll's keys for the listener and the timer; connections are keyed by their serial number,
// counted from 2.
constexpr uint64_t kListenerKey = 0;
constexpr uint64_t kTimerKey = 1;
constexpr int kEventsPerWake = 256;

// Unix-domain peers have no address to name.
std::string sourceOf(const SocketAddress& from) {
  return from.isValid() ? from.toString() : "a local peer";
}

int64_t millisSince(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
}

}  // namespace

namespace detail {

// One connection between accept() and the judge. In detail with the Acceptor that holds
// them: a unity build would otherwise warn that a class type uses an anonymous one.
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
  Acceptor(const Socket& listener, AcceptSpec spec, std::function<Status(Arrival&)> judge,
           std::function<std::string()> describeMissing)
      : listener_(listener),
        spec_(std::move(spec)),
        judge_(std::move(judge)),
        describeMissing_(std::move(describeMissing)) {}

  // stepped: driven by a caller's loop (AcceptLoop), which sleeps on epollFd() rather than in
  // step(), so a timer makes that descriptor readable when a connection's cap or an eviction
  // is due.
  Status start(bool stepped);
  // One round: waits up to waitMs for events, serves them, drops what expired, accepts.
  Status step(int waitMs);
  Status run();
  int epollFd() const { return epoll_.fd(); }
  int kept() const { return kept_; }
  void dropAll(const std::string& why);

 private:
  // By serial number, which is accept order and so also deadline order (every connection gets
  // the same cap): the first entry is the oldest and the next to time out.
  using Connections = std::map<uint64_t, InFlight>;

  size_t capacity() const;
  bool full() const { return inFlight_.size() >= capacity(); }
  // The oldest connection whose hello has not passed: the only kind dropped to make room.
  Connections::iterator evictionCandidate();
  // When full, the moment a place may be made; never while nothing may be dropped.
  Deadline evictionTime();
  bool mayAccept();
  bool backlogWaiting() const;
  Status armListener(bool armed);
  Deadline nextWake();
  Status acceptPending();
  Status admit(Socket socket, const SocketAddress& from);
  void step(Connections::iterator connection);
  void judge(Connections::iterator connection);
  void drop(Connections::iterator connection, const std::string& why);
  void dropExpired();
  Status timedOut() const;
  std::string stuckAt(const InFlight& connection) const;
  Status armTimer();

  const Socket& listener_;
  const AcceptSpec spec_;
  const std::function<Status(Arrival&)> judge_;
  const std::function<std::string()> describeMissing_;
  Socket epoll_;
  Socket timer_;  // stepped mode only
  bool listenerArmed_ = false;
  Connections inFlight_;
  uint64_t nextSerial_ = kTimerKey + 1;
  // Serials of connections still in the hello stage, in accept order; entries that passed their
  // hello or left are skipped when met at the front, so each costs O(1) over its life.
  std::deque<uint64_t> stillInHello_;
  Deadline listenerPause_ = Deadline::after(0);
  int kept_ = 0;
  std::string lastDrop_;
};

std::string Acceptor::stuckAt(const InFlight& connection) const {
  if (!connection.handshake.done()) return connection.handshake.progress();
  return "the hello after authentication (" + std::to_string(connection.helloDone) + " of " +
         std::to_string(spec_.helloBytes) + " bytes)";
}

// Every connection still expected may be in flight at once, plus maxInFlight others. The caller
// holds `expected` connections once this returns, so in descriptors this is its own need plus
// maxInFlight; honest peers alone never fill it, so a storm of them never makes room by dropping.
size_t Acceptor::capacity() const {
  return static_cast<size_t>(spec_.maxInFlight) + static_cast<size_t>(spec_.expected - kept_);
}

Acceptor::Connections::iterator Acceptor::evictionCandidate() {
  while (!stillInHello_.empty()) {
    auto candidate = inFlight_.find(stillInHello_.front());
    if (candidate != inFlight_.end() && !candidate->second.handshake.helloAccepted()) {
      return candidate;
    }
    stillInHello_.pop_front();
  }
  return inFlight_.end();
}

// A quarter of the cap: honest peers send their hello with their connect, while a stray in the
// hello stage has then used its share. Peers whose hello passed are left to their own cap, since
// on a crowded machine an honest one may wait seconds for a core between its messages.
Deadline Acceptor::evictionTime() {
  auto candidate = evictionCandidate();
  if (candidate == inFlight_.end()) return Deadline::never();
  int64_t waitMs = spec_.perConnectionMs / 4 - millisSince(candidate->second.started);
  return Deadline::after(std::max<int64_t>(waitMs, 0));
}

bool Acceptor::mayAccept() {
  return listenerPause_.expired() && (!full() || evictionTime().expired());
}

// Whether a connection waits in the listen backlog, so that none is dropped to make room for
// nobody.
bool Acceptor::backlogWaiting() const {
  pollfd listener{listener_.fd(), POLLIN, 0};
  return poll(&listener, 1, 0) == 1 && (listener.revents & POLLIN);
}

// The listener is level-triggered and watched only while a connection could be taken, so that
// a full acceptor with a queue is not woken for it over and over.
Status Acceptor::armListener(bool armed) {
  if (armed == listenerArmed_) return Status::ok();
  epoll_event event{};
  event.events = armed ? static_cast<uint32_t>(EPOLLIN) : 0u;
  event.data.u64 = kListenerKey;
  if (epoll_ctl(epoll_.fd(), EPOLL_CTL_MOD, listener_.fd(), &event) != 0) {
    return systemError(std::string(spec_.logName) + ": epoll_ctl (listener)", errno);
  }
  listenerArmed_ = armed;
  return Status::ok();
}

Deadline Acceptor::nextWake() {
  Deadline wake = spec_.deadline;
  if (!inFlight_.empty()) wake = Deadline::earliest(wake, inFlight_.begin()->second.deadline);
  if (!listenerPause_.expired()) wake = Deadline::earliest(wake, listenerPause_);
  if (full()) wake = Deadline::earliest(wake, evictionTime());
  return wake;
}

void Acceptor::drop(Connections::iterator connection, const std::string& why) {
  std::string from = sourceOf(connection->second.from);
  WEFT_WARN("%s: dropped a connection from %s: %s", spec_.logName, from.c_str(), why.c_str());
  lastDrop_ = from + " (" + why + ")";
  inFlight_.erase(connection);  // closing the socket also takes it out of the epoll set
}

void Acceptor::dropExpired() {
  while (!inFlight_.empty() && inFlight_.begin()->second.deadline.expired()) {
    const InFlight& oldest = inFlight_.begin()->second;
    drop(inFlight_.begin(), "timed out after " + std::to_string(millisSince(oldest.started)) +
                                " ms in " + stuckAt(oldest));
  }
}

Status Acceptor::acceptPending() {
  while (kept_ < spec_.expected && mayAccept()) {
    if (full()) {
      if (!backlogWaiting()) return Status::ok();
      auto victim = evictionCandidate();
      const InFlight& stalled = victim->second;
      drop(victim, "making room (" + std::to_string(inFlight_.size()) +
                       " connections in flight: room for the " +
                       std::to_string(spec_.expected - kept_) + " still expected and " +
                       std::to_string(spec_.maxInFlight) + " more), after " +
                       std::to_string(millisSince(stalled.started)) + " ms in " + stuckAt(stalled));
    }
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
    WEFT_TRY(admit(Socket(fd),
                   SocketAddress::fromSockaddr(reinterpret_cast<sockaddr*>(&storage), length)));
  }
  return Status::ok();
}

Status Acceptor::admit(Socket socket, const SocketAddress& from) {
  // Unix sockets have no TCP_NODELAY; only TCP needs it.
  if (from.isValid()) (void)setNoDelay(socket.fd());
  uint64_t serial = nextSerial_++;
  // Edge-triggered: step() always reads and writes until the socket would block (or the
  // connection is through), so every later byte raises a fresh edge. Added before the first
  // step, so that nothing arriving in between goes unnoticed.
  epoll_event event{};
  event.events = EPOLLIN | EPOLLOUT | EPOLLET;
  event.data.u64 = serial;
  if (epoll_ctl(epoll_.fd(), EPOLL_CTL_ADD, socket.fd(), &event) != 0) {
    return systemError(std::string(spec_.logName) + ": epoll_ctl (connection)", errno);
  }
  auto connection = inFlight_.try_emplace(serial, std::move(socket), from, spec_).first;
  stillInHello_.push_back(serial);
  // The client usually sent its hello with its connect, so start at once.
  step(connection);
  return Status::ok();
}

void Acceptor::step(Connections::iterator connection) {
  InFlight& flight = connection->second;
  if (!flight.handshake.done()) {
    Status status = flight.handshake.advance(flight.socket.fd());
    if (!status.isOk()) return drop(connection, status.message());
    if (!flight.handshake.done()) return;
  }
  bool complete = false;
  Status status = recvToward(flight.socket.fd(), flight.hello.data(), spec_.helloBytes,
                             &flight.helloDone, "the hello after authentication", &complete);
  if (!status.isOk()) return drop(connection, status.message());
  if (complete) judge(connection);
}

void Acceptor::judge(Connections::iterator connection) {
  InFlight& flight = connection->second;
  // The socket leaves this loop whatever the verdict; a kept one must not wake it any more.
  (void)epoll_ctl(epoll_.fd(), EPOLL_CTL_DEL, flight.socket.fd(), nullptr);
  Arrival arrival;
  arrival.socket = std::move(flight.socket);
  arrival.from = flight.from;
  arrival.hello = flight.hello;
  arrival.helloBytes = spec_.helloBytes;
  Status verdict = judge_(arrival);
  if (!verdict.isOk()) return drop(connection, verdict.message());
  ++kept_;
  inFlight_.erase(connection);
}

Status Acceptor::timedOut() const {
  std::string message = describeMissing_() + ": " + std::to_string(kept_) + " of " +
                        std::to_string(spec_.expected) + " connections arrived before the deadline";
  if (!inFlight_.empty()) {
    const InFlight& oldest = inFlight_.begin()->second;
    message += "; " + std::to_string(inFlight_.size()) + " still in flight (one from " +
               sourceOf(oldest.from) + " in " + stuckAt(oldest) + ")";
  }
  if (!lastDrop_.empty()) message += "; the last one dropped came from " + lastDrop_;
  return timeoutError(message);
}

Status Acceptor::start(bool stepped) {
  epoll_ = Socket(epoll_create1(EPOLL_CLOEXEC));
  if (!epoll_.isOpen()) return systemError(std::string(spec_.logName) + ": epoll_create1", errno);
  epoll_event listening{};
  listening.data.u64 = kListenerKey;
  if (epoll_ctl(epoll_.fd(), EPOLL_CTL_ADD, listener_.fd(), &listening) != 0) {
    return systemError(std::string(spec_.logName) + ": epoll_ctl (listener)", errno);
  }
  if (stepped) {
    timer_ = Socket(timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
    if (!timer_.isOpen()) {
      return systemError(std::string(spec_.logName) + ": timerfd_create", errno);
    }
    epoll_event timing{};
    timing.events = EPOLLIN;
    timing.data.u64 = kTimerKey;
    if (epoll_ctl(epoll_.fd(), EPOLL_CTL_ADD, timer_.fd(), &timing) != 0) {
      return systemError(std::string(spec_.logName) + ": epoll_ctl (timer)", errno);
    }
  }
  return armListener(mayAccept());
}

Status Acceptor::armTimer() {
  const Deadline wake = nextWake();
  itimerspec when{};
  if (!wake.isNever()) {
    // remainingMs rounds down; the extra millisecond avoids waking just before the moment.
    const int64_t ms = static_cast<int64_t>(wake.remainingMs()) + 1;
    when.it_value.tv_sec = ms / 1000;
    when.it_value.tv_nsec = (ms % 1000) * 1000000;
  }
  if (timerfd_settime(timer_.fd(), 0, &when, nullptr) != 0) {
    return systemError(std::string(spec_.logName) + ": timerfd_settime", errno);
  }
  return Status::ok();
}

Status Acceptor::step(int waitMs) {
  std::array<epoll_event, kEventsPerWake> events;
  int count = epoll_wait(epoll_.fd(), events.data(), kEventsPerWake, waitMs);
  if (count < 0 && errno != EINTR) {
    return systemError(std::string(spec_.logName) + ": epoll_wait", errno);
  }
  // Connections first: accepting may drop one to make room, and its event may be in this batch;
  // and a connection that finished its handshake while nobody stepped is served before its
  // cap is checked.
  bool listenerReady = false;
  for (int i = 0; i < count && kept_ < spec_.expected; ++i) {
    if (events[i].data.u64 == kListenerKey) {
      listenerReady = true;
      continue;
    }
    if (events[i].data.u64 == kTimerKey) {
      uint64_t expirations;
      [[maybe_unused]] ssize_t got = read(timer_.fd(), &expirations, sizeof(expirations));
      continue;
    }
    // A connection dropped or judged earlier in this batch is gone from the map.
    auto connection = inFlight_.find(events[i].data.u64);
    if (connection != inFlight_.end()) step(connection);
  }
  // A stepped acceptor checks the caps after serving what arrived (a caller that did not step
  // for a while should not drop a connection whose proof is waiting); run() checks before it
  // waits, so that its own deadline finds what was still in flight.
  if (timer_.isOpen()) dropExpired();
  if (listenerReady && kept_ < spec_.expected) WEFT_TRY(acceptPending());
  WEFT_TRY(armListener(kept_ < spec_.expected && mayAccept()));
  return timer_.isOpen() ? armTimer() : Status::ok();
}

Status Acceptor::run() {
  if (spec_.expected == 0) return Status::ok();
  WEFT_TRY(start(false));
  while (kept_ < spec_.expected) {
    if (spec_.deadline.expired()) return timedOut();
    dropExpired();
    WEFT_TRY(step(nextWake().remainingMs() + 1));
  }
  dropAll("not needed any more (all " + std::to_string(spec_.expected) + " connections arrived)");
  return Status::ok();
}

void Acceptor::dropAll(const std::string& why) {
  while (!inFlight_.empty()) {
    drop(inFlight_.begin(), why + " while still in " + stuckAt(inFlight_.begin()->second));
  }
}

}  // namespace detail

namespace {

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
  return detail::Acceptor(listener, spec, judge, describeMissing).run();
}

AcceptLoop::AcceptLoop(const Socket& listener, const AcceptSpec& spec,
                       std::function<Status(Arrival&)> judge)
    : listener_(listener), spec_(spec), judge_(std::move(judge)) {
  spec_.deadline = Deadline::never();
}

AcceptLoop::~AcceptLoop() = default;

Status AcceptLoop::start() {
  WEFT_TRY(checkSpec(listener_, spec_));
  if (!judge_) return invalidArgument("AcceptLoop: the judge must be set");
  acceptor_ = std::make_unique<detail::Acceptor>(
      listener_, spec_, judge_, [] { return std::string("(accepting on first use)"); });
  return acceptor_->start(true);
}

int AcceptLoop::waitFd() const {
  return acceptor_ ? acceptor_->epollFd() : -1;
}

Status AcceptLoop::step() {
  return acceptor_ ? acceptor_->step(0) : Status::ok();
}

int AcceptLoop::kept() const {
  return acceptor_ ? acceptor_->kept() : 0;
}

void AcceptLoop::dropAll(const std::string& why) {
  if (acceptor_) acceptor_->dropAll(why);
}

}  // namespace weft::net
