// Fabric: a communicator's point-to-point layer. It routes each peer to the transport serving it
// (and a rank to itself through memory), and owns the one wait loop every algorithm blocks in:
// progress all transports, spin briefly, then sleep in epoll until a transport has work, the
// deadline passes or the communicator is aborted. A failure of any peer fails the fabric for
// good, so every later wait reports the same culprit instead of hanging.
#pragma once

#include <atomic>
#include <chrono>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "base/deadline.h"
#include "base/status.h"
#include "transports/capabilities.h"
#include "transports/shared_windows.h"
#include "transports/transport.h"

namespace weft {

class Fabric {
 public:
  Fabric(int rank, int nranks, std::vector<std::string> peerNames);
  ~Fabric();
  Fabric(const Fabric&) = delete;
  Fabric& operator=(const Fabric&) = delete;

  Status init();
  // Routes `peers` to `transport`, which must be connected already.
  Status attach(std::unique_ptr<Transport> transport, const std::vector<int>& peers);

  void post(Xfer* xfer);
  // Waits until every listed transfer is done. Returns the first failure (the fabric is then
  // failed), weftTimeout naming what was awaited, or weftAborted.
  Status waitAll(Xfer* const* xfers, size_t count);
  Status wait(Xfer* xfer) { return waitAll(&xfer, 1); }

  // The general wait: until ready(&failure) returns true (a failure it reports fails the wait
  // and the fabric). describe(&rank) says what was awaited, for the timeout message, and from
  // which rank (-1 if none), whom the failure notices then name. Transports keep
  // progressing meanwhile; ready() is checked again after the sleep has been announced, so a
  // condition set by another rank in shared memory (which then wakes sleepers) is never missed.
  // returnBy: no sleep lasts past it (ready() must then say so); it does not end the wait.
  // due: a deadline set before the wait began (a transfer posted earlier); the wait times out
  // at it when it comes before the timeout counted from the wait's start.
  template <typename Ready, typename Describe>
  Status waitUntil(
      Ready&& ready, Describe&& describe,
      std::chrono::steady_clock::time_point returnBy = std::chrono::steady_clock::time_point::max(),
      Deadline due = Deadline::never()) {
    if (!failure_.isOk()) return failure_;
    WaitLoop loop(*this, returnBy, due);
    for (;;) {
      Status failure;
      if (ready(&failure)) return failure.isOk() ? loop.finish() : fail(failure);
      if (loop.progressed()) {
        Status stop = loop.checkStop();
        if (!stop.isOk()) {
          if (stop.code() != weftTimeout) return fail(stop);
          int awaited = -1;
          std::string what = describe(&awaited);
          return fail(timeoutStatus(what), awaited);
        }
        if (loop.spinOver() && loop.prepareSleep()) {
          if (ready(&failure)) {
            loop.cancelSleep();
            return failure.isOk() ? loop.finish() : fail(failure);
          }
          loop.sleep();
        }
      }
      Status progressed = loop.progress();
      if (!progressed.isOk()) return fail(progressed);
    }
  }

  // Shared memory of the ranks of this host, when a transport provides it (else nullptr).
  SharedWindows* windows() const { return windows_; }

  void setTimeoutMs(int64_t timeoutMs) { timeoutMs_ = timeoutMs; }
  // How long a wait polls before it sleeps. With `yieldWhilePolling` every poll gives the core
  // away first (sched_yield), which is how oversubscribed ranks poll without starving the peer
  // they wait for.
  void setPolling(int64_t micros, bool yieldWhilePolling) {
    spinMicros_ = spinBudget_ = micros;
    yieldWhilePolling_ = yieldWhilePolling;
  }
  // The operation named in timeout messages: "allreduce #12 (ring)". Static strings only.
  void setCurrentOp(const char* name, uint64_t seq, const char* algorithm) {
    opName_ = name;
    opSeq_ = seq;
    opAlgorithm_ = algorithm;
  }

  // See TransportCapabilities::operationDone().
  void operationDone() {
    for (TransportCapabilities* extra : capable_) extra->operationDone();
  }
  void memoryFreed(const void* buf, size_t bytes) {
    for (TransportCapabilities* extra : capable_) extra->memoryFreed(buf, bytes);
  }
  // See TransportCapabilities::userMemoryRegistered().
  void userMemoryRegistered(const void* buf, size_t bytes, bool registered) {
    for (TransportCapabilities* extra : capable_) {
      if (registered) {
        extra->userMemoryRegistered(buf, bytes);
      } else {
        extra->userMemoryDeregistered(buf, bytes);
      }
    }
  }

  // The other processes of this communicator on this machine. A timed-out wait reads their state
  // (/proc) and names a stopped one (SIGSTOP, a debugger) as the culprit, rather than the rank
  // it waited for, which may only be waiting too.
  struct LocalProcess {
    int rank;
    int pid;
    uint64_t startTicks;  // must match, so that a reused pid is not taken for the rank
  };
  void setLocalProcesses(std::vector<LocalProcess> processes) {
    localProcesses_ = std::move(processes);
  }

  // Thread-safe: wakes the waiting thread, whose wait then returns weftAborted.
  void abort();
  // Thread-safe: ends the waiting thread's sleep, so that its wait checks ready() again at once.
  void wake();
  bool failed() const { return !failure_.isOk(); }
  const Status& failure() const { return failure_; }
  // Fails the fabric with the current operation's timeout, as a wait would: `awaited`
  // describes what did not come, from rank `awaitedRank` (-1 if none).
  Status timeOut(const std::string& awaited, int awaitedRank) {
    return fail(timeoutStatus(awaited), awaitedRank);
  }
  const std::string& peerName(int rank) const { return peerNames_[rank]; }
  void close(bool graceful);

 private:
  // One wait's state: deadline, polling budget, sleeping.
  class WaitLoop {
   public:
    WaitLoop(Fabric& fabric, std::chrono::steady_clock::time_point returnBy, Deadline due)
        : fabric_(fabric), returnBy_(returnBy), deadline_(due) {}
    bool progressed() const { return progressed_; }
    Status checkStop();  // weftAborted, or weftTimeout (the caller words the message)
    bool spinOver();
    bool prepareSleep();  // every transport announced the sleep
    void cancelSleep();
    void sleep();
    Status progress();
    Status finish();  // adapts the polling budget

   private:
    void startClock();

    Fabric& fabric_;
    std::chrono::steady_clock::time_point returnBy_;
    Deadline deadline_;  // `due` until the clock starts; then also the timeout from the start
    std::chrono::steady_clock::time_point started_;
    std::chrono::steady_clock::time_point spinUntil_;
    bool progressed_ = false;
    bool waited_ = false;
    bool woken_ = false;  // slept since the last progress
    // Slept since the last checkStop(). Not woken_, which the progress after the sleep clears
    // before checkStop() runs.
    bool slept_ = false;
    static constexpr unsigned kPollsPerClock = 16;
    unsigned polls_ = 0;  // the clock is read every kPollsPerClock polls only
  };

  Status progressAll(bool woken);
  void postToSelf(Xfer* xfer);
  // awaited: after a timeout, the rank that did not answer (named as the culprit when the
  // transports know of no failure).
  Status fail(Status why, int awaited = -1);
  // A local peer whose process is stopped (its rank, and *why says so), else -1.
  int findStoppedPeer(Status* why) const;
  Status timeoutStatus(const std::string& awaited) const;
  std::string describePending(Xfer* const* xfers, size_t count, int* awaited) const;

  int rank_;
  int nranks_;
  std::vector<std::string> peerNames_;
  std::vector<std::unique_ptr<Transport>> transports_;
  std::vector<TransportCapabilities*> capable_;  // of the transports that have any
  std::vector<Transport*> route_;                // route_[peer]
  std::vector<LocalProcess> localProcesses_;
  SharedWindows* windows_ = nullptr;
  std::deque<Xfer*> selfSends_;
  std::deque<Xfer*> selfRecvs_;
  int epollFd_ = -1;
  int abortFd_ = -1;
  int wakeFd_ = -1;
  std::atomic<bool> aborted_{false};
  Status failure_;
  int64_t timeoutMs_ = 300000;
  int64_t spinMicros_ = 0;  // the most a wait may poll before sleeping
  int64_t spinBudget_ = 0;  // what the next wait polls: adapts between kMinSpin and spinMicros_
  bool yieldWhilePolling_ = false;
  const char* opName_ = "an operation";
  uint64_t opSeq_ = 0;
  const char* opAlgorithm_ = "";
};

}  // namespace weft
