// The Work object torch.distributed hands back for each call, and the thread that completes them.
//
// A queued call issues weft's non-blocking form and gets one request (or several: a batch of
// sends and receives). Whoever gets to a work first completes it: the thread that waits on it
// (Work.wait, which then runs the call itself through weft's helping wait) or the group's
// completer thread, which walks the works in issue order for the futures nobody waits on (DDP's
// communication hooks chain on them). Completing copies staged results into the user's tensors,
// completes the Work (waking other waiters) and then the Future.
//
// A small collective issued while nothing else is outstanding is deferred instead: the backend
// cannot tell a blocking dist.all_reduce from an async_op=True one, but a blocking one waits at
// once. So the call is held, and Work.wait() runs it blocking on the waiting thread, as weft's
// blocking C calls run: no thread hand-off, no wake-up. Anything else that needs the call to
// progress issues it as a queued call first: the group's next call, get_future(),
// is_completed(), a wait with a timeout, destroying the group, and, for a call nobody waits on,
// the completer after kDeferredFor (so that an async call still progresses while its issuer
// computes or talks to its peers by other means).
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
  // The one thread that completes this work; false if another already does.
  bool claim() { return !claimed_.exchange(true); }
  // Waits on the requests; the first failure's message comes from weft, naming what failed.
  void complete();
  // A deferred call taken back by its waiter: runs it blocking here.
  void runDeferred();
  // A deferred call that must progress without its waiter: issues it with a request.
  void issueDeferred();
  // Runs the finisher after success, then completes the Work and the Future.
  void finishWith(std::string failure);

  std::string what_;
  std::vector<weftRequest_t> requests_;
  std::vector<at::Tensor> outputs_;
  std::vector<at::Tensor> keepAlive_;
  std::function<void()> finisher_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
  std::atomic<bool> claimed_{false};
  WeftCall deferredCall_;
  std::string issueFailure_;  // a deferred call that failed when issued
  weftComm_t comm_ = nullptr;
  Completer* completer_ = nullptr;  // counts the work outstanding until it completes
};

class Completer {
 public:
  // How long a deferred call waits for its waiter before the completer issues it.
  static constexpr std::chrono::microseconds kDeferredFor{1000};

  explicit Completer(weftComm_t comm);
  ~Completer();  // issues what is deferred, completes what is queued, waits for every work
  Completer(const Completer&) = delete;
  Completer& operator=(const Completer&) = delete;

  // Takes a work whose requests are issued.
  void add(c10::intrusive_ptr<WeftWork> work);
  // Holds `call` for `work` until it is waited on or must progress (see the file comment).
  void defer(c10::intrusive_ptr<WeftWork> work, WeftCall call);
  // Issues the deferred call, if any (and if it is `only`'s), as a queued one.
  void flushDeferred(const WeftWork* only = nullptr);
  // Nothing issued through here is still to complete: a call issued now runs next.
  bool idle() const { return outstanding_.load(std::memory_order_acquire) == 0; }

 private:
  friend class WeftWork;
  using Clock = std::chrono::steady_clock;

  void serve();
  void queueLocked(c10::intrusive_ptr<WeftWork> work);
  void flushDeferredLocked();
  // Whether `work` is the deferred one; if so it is no longer (its waiter runs it).
  bool takeDeferred(const WeftWork* work);
  void workDone();

  weftComm_t comm_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable drained_;
  std::deque<c10::intrusive_ptr<WeftWork>> queue_;
  c10::intrusive_ptr<WeftWork> deferred_;
  Clock::time_point deferredAt_;
  // The completer ticks (every kDeferredFor) while calls are being deferred, so that deferring
  // one wakes nobody; after a quiet spell it sleeps until woken (dormant_).
  Clock::time_point lastDeferred_;
  bool dormant_ = false;
  std::atomic<int> outstanding_{0};
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace weft_torch
