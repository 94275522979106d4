#include "fabric/fabric.h"

#include <sched.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "base/log.h"
#include "topo/process_state.h"

namespace weft {

Fabric::Fabric(int rank, int nranks, std::vector<std::string> peerNames)
    : rank_(rank), nranks_(nranks), peerNames_(std::move(peerNames)), route_(nranks, nullptr) {}

Fabric::~Fabric() {
  close(false);
}

Status Fabric::init() {
  epollFd_ = epoll_create1(EPOLL_CLOEXEC);
  if (epollFd_ < 0) return systemError("epoll_create1", errno);
  for (int* fd : {&abortFd_, &wakeFd_}) {
    *fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (*fd < 0) return systemError("eventfd", errno);
    epoll_event event{};
    event.events = EPOLLIN;
    event.data.fd = *fd;
    if (epoll_ctl(epollFd_, EPOLL_CTL_ADD, *fd, &event) != 0) {
      return systemError("epoll_ctl", errno);
    }
  }
  return Status::ok();
}

Status Fabric::attach(std::unique_ptr<Transport> transport, const std::vector<int>& peers) {
  int fd = transport->waitFd();
  if (fd >= 0) {
    epoll_event event{};
    event.events = EPOLLIN;
    event.data.fd = fd;
    if (epoll_ctl(epollFd_, EPOLL_CTL_ADD, fd, &event) != 0) {
      return systemError("epoll_ctl", errno);
    }
  }
  for (int peer : peers) route_[peer] = transport.get();
  if (TransportCapabilities* extra = transport->capabilities()) {
    capable_.push_back(extra);
    if (windows_ == nullptr) windows_ = extra->windows();
  }
  transports_.push_back(std::move(transport));
  return Status::ok();
}

void Fabric::post(Xfer* xfer) {
  xfer->done = false;
  xfer->status = Status::ok();
  if (!failure_.isOk()) {
    xfer->complete(failure_);
  } else if (xfer->peer == rank_) {
    postToSelf(xfer);
  } else {
    route_[xfer->peer]->post(xfer);
  }
}

// A rank talking to itself (a group's Send/Recv to self) is a copy once both sides are posted.
void Fabric::postToSelf(Xfer* xfer) {
  (xfer->kind == Xfer::Kind::kSend ? selfSends_ : selfRecvs_).push_back(xfer);
  while (!selfSends_.empty() && !selfRecvs_.empty()) {
    Xfer* send = selfSends_.front();
    Xfer* recv = selfRecvs_.front();
    selfSends_.pop_front();
    selfRecvs_.pop_front();
    if (send->bytes != recv->bytes) {
      Status mismatch = invalidUsage("send to self of " + std::to_string(send->bytes) +
                                     " bytes met a receive of " + std::to_string(recv->bytes));
      send->complete(mismatch);
      recv->complete(mismatch);
      continue;
    }
    if (send->bytes > 0 && send->buf != recv->buf) std::memmove(recv->buf, send->buf, send->bytes);
    send->complete();
    recv->complete();
  }
}

Status Fabric::progressAll(bool woken) {
  for (auto& transport : transports_) {
    Status status = transport->progress(woken);
    if (!status.isOk()) return status;
  }
  return Status::ok();
}

int Fabric::findStoppedPeer(Status* why) const {
  for (const LocalProcess& process : localProcesses_) {
    topo::ProcessStat stat;
    if (!topo::readProcessStat(process.pid, &stat) || stat.startTicks != process.startTicks ||
        !topo::isStopped(stat.state)) {
      continue;
    }
    *why = Status(why->code(), why->message() + " (" + peerNames_[process.rank] +
                                   " is stopped: process state " + stat.state +
                                   ", from SIGSTOP or a debugger)");
    return process.rank;
  }
  return -1;
}

Status Fabric::fail(Status why, int awaited) {
  if (!failure_.isOk()) return failure_;
  // A stopped peer is certain evidence; notices and the awaited rank are guesses beside it.
  int culprit = why.code() == weftTimeout ? findStoppedPeer(&why) : -1;
  for (auto& transport : transports_) {
    int found = transport->findCulprit();
    if (culprit < 0) culprit = found;
  }
  if (culprit < 0) culprit = awaited;
  // The wait may have tripped over a rank that merely left after failing itself; name the origin.
  if (culprit >= 0 && culprit != rank_ &&
      why.message().find(peerNames_[culprit]) == std::string::npos) {
    why =
        Status(why.code(), why.message() + " (the failure started at " + peerNames_[culprit] + ")");
  }
  failure_ = std::move(why);
  for (auto& transport : transports_) transport->announceFailure(culprit);
  return failure_;
}

Status Fabric::waitAll(Xfer* const* xfers, size_t count) {
  size_t first = 0;  // transfers before it are known to be done
  return waitUntil(
      [&](Status* failure) {
        // Checked before progressing, so waiting on finished transfers costs no system call.
        while (first < count && xfers[first]->done) {
          if (!xfers[first]->status.isOk()) {
            *failure = xfers[first]->status;
            return true;
          }
          ++first;
        }
        return first == count;
      },
      [&](int* awaited) { return describePending(xfers + first, count - first, awaited); });
}

// Polling before sleeping saves the wake-up latency when the peer answers within the budget,
// and wastes a core when it does not (or when ranks outnumber cores and the peer needs this
// one). So the budget adapts: after a wait that ended within the largest budget (polling that
// long would have caught it) the budget returns to the largest; after a longer one it halves,
// never below kMinSpin, so that a quiet period can still be noticed.
void Fabric::WaitLoop::startClock() {
  if (waited_) return;
  waited_ = true;
  started_ = std::chrono::steady_clock::now();
  deadline_ = Deadline::earliest(Deadline::after(fabric_.timeoutMs_), deadline_);
  spinUntil_ = started_ + std::chrono::microseconds(fabric_.spinBudget_);
}

Status Fabric::WaitLoop::checkStop() {
  // Most waits end within a few polls; while polling, the clock is read only every
  // kPollsPerClock polls, and the deadline is set at the first reading (a wait that ends before
  // costs no clock at all). After a sleep it is always read.
  if (polls_ % kPollsPerClock != 0 && !slept_) return Status::ok();
  slept_ = false;
  startClock();
  if (fabric_.aborted_.load(std::memory_order_acquire)) {
    return Status(weftAborted, "the communicator was aborted");
  }
  if (deadline_.expired()) return timeoutError("");
  return Status::ok();
}

bool Fabric::WaitLoop::spinOver() {
  if (fabric_.spinBudget_ == 0) return true;
  if (fabric_.yieldWhilePolling_) sched_yield();
  return waited_ && polls_ % kPollsPerClock == 0 && std::chrono::steady_clock::now() >= spinUntil_;
}

bool Fabric::WaitLoop::prepareSleep() {
  auto& transports = fabric_.capable_;
  for (size_t i = 0; i < transports.size(); ++i) {
    if (!transports[i]->prepareToSleep()) {
      for (size_t j = 0; j < i; ++j) transports[j]->finishSleep();
      return false;
    }
  }
  return true;
}

void Fabric::WaitLoop::cancelSleep() {
  for (TransportCapabilities* extra : fabric_.capable_) extra->finishSleep();
}

void Fabric::WaitLoop::sleep() {
  startClock();
  woken_ = slept_ = true;
  epoll_event events[8];
  int64_t sleepMs = deadline_.remainingMs(1000);
  if (returnBy_ != std::chrono::steady_clock::time_point::max()) {
    const auto left =
        std::chrono::ceil<std::chrono::milliseconds>(returnBy_ - std::chrono::steady_clock::now());
    sleepMs = std::clamp<int64_t>(left.count(), 0, sleepMs);
  }
  epoll_wait(fabric_.epollFd_, events, 8, static_cast<int>(sleepMs));
  // A wake() only ends this sleep; the next one must not end at once for it.
  uint64_t wakes = 0;
  [[maybe_unused]] ssize_t ignored = read(fabric_.wakeFd_, &wakes, sizeof(wakes));
  cancelSleep();
}

Status Fabric::WaitLoop::progress() {
  ++polls_;
  Status status = fabric_.progressAll(woken_);
  woken_ = false;
  progressed_ = true;
  return status;
}

Status Fabric::WaitLoop::finish() {
  constexpr int64_t kMinSpin = 2;
  // A wait that ended before the clock was first read was short: polling caught it.
  if (fabric_.spinMicros_ > 0 && !waited_) {
    fabric_.spinBudget_ = fabric_.spinMicros_;
  } else if (fabric_.spinMicros_ > 0) {
    auto waitedFor = std::chrono::duration_cast<std::chrono::microseconds>(
                         std::chrono::steady_clock::now() - started_)
                         .count();
    fabric_.spinBudget_ = waitedFor <= fabric_.spinMicros_
                              ? fabric_.spinMicros_
                              : std::max(kMinSpin, fabric_.spinBudget_ / 2);
  }
  return Status::ok();
}

std::string Fabric::describePending(Xfer* const* xfers, size_t count, int* awaited) const {
  const Xfer* pending = xfers[0];
  for (size_t i = 0; i < count; ++i) {
    if (!xfers[i]->done) {
      pending = xfers[i];
      break;
    }
  }
  bool sending = pending->kind == Xfer::Kind::kSend;
  *awaited = pending->peer;
  return peerNames_[pending->peer] + (sending ? " to receive " : " to send ") +
         std::to_string(pending->bytes) + " bytes (message " +
         std::to_string(pending->tag & 0xffffffffu) + " of the operation)";
}

Status Fabric::timeoutStatus(const std::string& awaited) const {
  char seconds[32];
  std::snprintf(seconds, sizeof(seconds), "%g", timeoutMs_ / 1000.0);
  return timeoutError("timed out after " + std::string(seconds) + " s in " + opName_ + " #" +
                      std::to_string(opSeq_) + " (" + opAlgorithm_ + "), waiting for " + awaited);
}

void Fabric::abort() {
  aborted_.store(true, std::memory_order_release);
  uint64_t one = 1;
  if (abortFd_ >= 0) [[maybe_unused]]
    ssize_t ignored = write(abortFd_, &one, sizeof(one));
}

void Fabric::wake() {
  uint64_t one = 1;
  if (wakeFd_ >= 0) [[maybe_unused]]
    ssize_t ignored = write(wakeFd_, &one, sizeof(one));
}

void Fabric::close(bool graceful) {
  for (auto& transport : transports_) transport->close(graceful && failure_.isOk());
  capable_.clear();
  transports_.clear();
  if (epollFd_ >= 0) ::close(epollFd_);
  if (abortFd_ >= 0) ::close(abortFd_);
  if (wakeFd_ >= 0) ::close(wakeFd_);
  epollFd_ = abortFd_ = wakeFd_ = -1;
}

}  // namespace weft
