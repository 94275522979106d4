// The Work object torch.distributed hands back for each call, and the thread that runs them.
//
// Each process group has one completer thread, which runs the group's calls in issue order:
// it makes weft's blocking call itself (on an idle communicator weft runs it right there, with
// no other thread involved), then copies staged results into the user's tensors and completes
// the Work and its Future (DDP's communication hooks chain on it). So an async call costs one
// thread hand-off, and its future completes on the thread that ran it. A thread that waits on
// a call that is next in line runs it itself instead.
//
// A small collective issued while nothing else is outstanding is not even handed over: the
// backend cannot tell a blocking dist.all_reduce from an async_op=True one, but a blocking one
// waits at once. So the call is held, and Work.wait() runs it on the waiting thread, as weft's
// blocking C calls run. Anything else that needs the call to progress hands it to the
// completer first: the group's next call, get_future(), is_completed(), a wait with a timeout,
// destroying the group, and, for a call nobody waits on, the completer after kDeferredFor (so
// that an async call still progresses while its issuer computes or talks to its peers by other
// means).
//
// Calls that must be issued inside a weft group on the issuing thread (batches, uneven
// all-to-all) are issued there with requests once nothing is left for the completer to run,
// and completed by whoever waits first: a waiter (through weft's helping wait) or the completer.
// A send or receive is issued there too (weft moves its transfer on by itself), and its Work is
// left to its waiter for kDeferredFor before the completer takes it, as a held call is.
#pragma once

#include <ATen/ATen.h>
#include <ATen/core/ivalue.h>
#include <weft/weft.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace weft_torch {

class Completer;

// One weft call: given a request it is queued, given none it runs blocking.
using WeftCall = std::function<weftResult_t(weftRequest_t*)>;

class WeftWork : public c10d::Work {
 public:
  // `outputs` become the Future's value; `keepAlive` holds every tensor weft reads or writes until
  // the call completes; `finisher` runs after success (copying staged results out).
  WeftWork(int rank, c10d::OpType opType, std::string what, std::vector<at::Tensor> outputs,
           std::vector<at::Tensor> keepAlive, std::function<void()> finisher);
  ~WeftWork() override;

  void addRequest(weftRequest_t request) { requests_.push_back(request); }

  bool wait(std::chrono::milliseconds timeout) override;
  bool isCompleted() override;
  std::vector<at::Tensor> result() override { return outputs_; }
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;

 private:
  friend class Completer;
  // For a call issued with requests: the one thread that completes it; false if another does.
  bool claim() { return !claimed_.exchange(true); }
  // Waits on the requests; the first failure's message comes from weft, naming what failed.
  void complete();
  // Runs call_ blocking on this thread (the completer, or a waiter that took it), then finishes.
  void runCall();
  // Runs the finisher after success, then completes the Work and the Future.
  void finishWith(std::string failure);

  std::string what_;
  std::vector<weftRequest_t> requests_;
  std::vector<at::Tensor> outputs_;
  std::vector<at::Tensor> keepAlive_;
  std::function<void()> finisher_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
  std::atomic<bool> claimed_{false};
  WeftCall call_;        // held or to run; empty for a call issued with requests
  bool issued_ = false;  // issued with requests (add())
  weftComm_t comm_ = nullptr;
  Completer* completer_ = nullptr;  // counts the work outstanding until it completes
};

class Completer {
 public:
  // How long a held call waits for its waiter before the completer runs it.
  static constexpr std::chrono::microseconds kDeferredFor{1000};

  explicit Completer(weftComm_t comm);
  ~Completer();  // runs what is held and queued, waits for every work, then stops
  Completer(const Completer&) = delete;
  Completer& operator=(const Completer&) = delete;

  // Queues `call` for `work`: the completer runs it after the calls before it.
  void run(c10::intrusive_ptr<WeftWork> work, WeftCall call);
  // Holds `call` for `work` until it is waited on or must progress (see the file comment).
  void defer(c10::intrusive_ptr<WeftWork> work, WeftCall call);
  // Queues the held call, if any (and if it is `only`'s), for the completer to run.
  void flushDeferred(const WeftWork* only = nullptr);
  // Before a call is issued on the calling thread: waits until every call handed over so far
  // has been run, so that weft sees the calls in issue order.
  void waitUntilRun();
  // Takes a work whose requests the calling thread has issued.
  void add(c10::intrusive_ptr<WeftWork> work);
  // The same, left to its waiter for kDeferredFor (or until flushDeferred(work)) first.
  void addForWaiter(c10::intrusive_ptr<WeftWork> work);
  // Nothing issued through here is still to complete: a call issued now runs next.
  bool idle() const { return outstanding_.load(std::memory_order_acquire) == 0; }
  bool onItsThread() const { return std::this_thread::get_id() == thread_.get_id(); }
  // For a group destroyed on a completer thread (this one's or its sibling's): the thread keeps
  // `self` alive, runs what is queued, destroys `comm` and then lets `self` go.
  static void retireOnItsThread(std::shared_ptr<Completer> self, weftComm_t comm);

 private:
  friend class WeftWork;
  using Clock = std::chrono::steady_clock;

  void serve();
  // Makes `work` this completer's: it counts as outstanding until it completes.
  void adopt(WeftWork& work);
  // Runs or completes the call at the front of the queue unless it must wait; called and
  // returns with the lock held. False if there was nothing to do.
  bool runFront(std::unique_lock<std::mutex>& lock);
  void flushDeferredLocked();
  // Queues the works left to their waiters since `until` or earlier (time_point::max(): all).
  void queueForWaiters(Clock::time_point until);
  // Whether `work` is the held call, or the next call to run with none running; if so it is
  // the caller's to run (runCall) and counts as running.
  bool takeDeferred(const WeftWork* work);
  bool takeNext(const WeftWork* work);
  // A call taken to run has returned from weft: the next one may start.
  void ranCall();
  void workDone();

  weftComm_t comm_;
  std::mutex mutex_;
  std::condition_variable wake_;     // the completer thread waits for work (or its timer)
  std::condition_variable changed_;  // waitUntilRun() and the destructor wait on it
  std::deque<c10::intrusive_ptr<WeftWork>> queue_;
  c10::intrusive_ptr<WeftWork> deferred_;
  Clock::time_point deferredAt_;
  // addForWaiter()'s works, oldest first, with when each was added.
  std::deque<std::pair<c10::intrusive_ptr<WeftWork>, Clock::time_point>> forWaiters_;
  int toRun_ = 0;         // calls handed over (queued with a call, or running) not yet run
  bool running_ = false;  // one of them is running, on the completer or on a waiter
  // The completer ticks (every kDeferredFor) while calls are being held, so that holding one
  // wakes nobody; after a quiet spell it sleeps until woken (dormant_).
  Clock::time_point lastDeferred_;
  bool dormant_ = false;
  std::atomic<int> outstanding_{0};
  bool stopping_ = false;
  std::shared_ptr<Completer> retiredSelf_;  // set by retireOnItsThread
  weftComm_t commToDestroy_ = nullptr;
  std::thread thread_;
};

}  // namespace weft_torch
