#include "weft_work.h"

#include <ATen/core/jit_type.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <stdexcept>

namespace weft_torch {

namespace {

// After this long without a deferred call the completer stops ticking (see lastDeferred_): a
// loop of small blocking calls keeps it ticking, a call now and then (DDP's) costs a few
// wake-ups of its own. Ticking through longer pauses cost the seed's DDP step 10% on 8 ranks
// sharing 2 cores (docs/PERFORMANCE.md, issue 16).
constexpr auto kQuietAfter = 2 * Completer::kDeferredFor;

std::string failureText(const std::string& what, weftResult_t result, weftComm_t comm) {
  const char* detail = weftGetLastError(comm);
  return "weft: " + what + " failed: " + weftGetErrorString(result) +
         (detail && *detail ? std::string(": ") + detail : std::string());
}

}  // namespace

WeftWork::WeftWork(int rank, c10d::OpType opType, std::string what, std::vector<at::Tensor> outputs,
                   std::vector<at::Tensor> keepAlive, std::function<void()> finisher)
    : c10d::Work(rank, opType),
      what_(std::move(what)),
      outputs_(std::move(outputs)),
      keepAlive_(std::move(keepAlive)),
      finisher_(std::move(finisher)),
      future_(
          c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()))) {
}

WeftWork::~WeftWork() {
  // A Work dropped before completion still owns requests only if it was never queued (an issue
  // failed half way); waiting releases them without leaking.
  for (weftRequest_t& request : requests_) {
    if (request != nullptr) weftWait(&request, -1);
  }
}

void WeftWork::complete() {
  std::string failure;
  for (weftRequest_t& request : requests_) {
    weftResult_t result = weftWait(&request, -1);
    if (result != weftSuccess && failure.empty()) failure = failureText(what_, result, comm_);
    request = nullptr;
  }
  finishWith(std::move(failure));
  completer_->workDone();
}

void WeftWork::runCall() {
  weftResult_t result = call_(nullptr);
  // Read before the next call may run and replace the communicator's last error.
  std::string failure = result == weftSuccess ? std::string() : failureText(what_, result, comm_);
  call_ = nullptr;
  completer_->ranCall();
  finishWith(std::move(failure));
  completer_->workDone();
}

void WeftWork::finishWith(std::string failure) {
  if (failure.empty()) {
    try {
      if (finisher_) finisher_();
    } catch (const std::exception& e) {
      failure = "weft: " + what_ + ": copying the result out failed: " + e.what();
    }
  }
  std::exception_ptr error;
  if (!failure.empty()) error = std::make_exception_ptr(std::runtime_error(failure));
  keepAlive_.clear();
  finish(error);
  if (error) {
    future_->setError(error);
  } else {
    future_->markCompleted(c10::IValue(outputs_));
  }
}

bool WeftWork::wait(std::chrono::milliseconds timeout) {
  // Waiting without a limit runs the call here when it is next (a held one, or the next one
  // handed over with none running), or helps weft run one issued with requests: the caller
  // needs the result, so another thread only adds wake-ups.
  if (completer_ != nullptr && !c10d::Work::isCompleted()) {
    if (timeout != kNoTimeout) {
      completer_->flushDeferred(this);
    } else if (completer_->takeDeferred(this) || completer_->takeNext(this)) {
      runCall();
    } else if (issued_ && claim()) {
      complete();
    }
  }
  std::unique_lock<std::mutex> lock(mutex_);
  if (timeout == kNoTimeout) {
    cv_.wait(lock, [&] { return completed_; });
  } else if (!cv_.wait_for(lock, timeout, [&] { return completed_; })) {
    TORCH_CHECK(false, "weft: ", what_, " did not complete within ", timeout.count(),
                " ms (Work.wait timeout; the call keeps running)");
  }
  if (exception_) std::rethrow_exception(exception_);
  return true;
}

bool WeftWork::isCompleted() {
  // Whoever polls for completion will not wait: the call must progress by itself.
  if (completer_ != nullptr) completer_->flushDeferred(this);
  return c10d::Work::isCompleted();
}

c10::intrusive_ptr<c10::ivalue::Future> WeftWork::getFuture() {
  // Whoever chains on the future may never wait: the call must progress by itself.
  if (completer_ != nullptr) completer_->flushDeferred(this);
  return future_;
}

Completer::Completer(weftComm_t comm)
    : comm_(comm), thread_([this] {
        serve();
        if (commToDestroy_ == nullptr) return;
        // Retired on this thread: nothing else refers to this completer any more.
        std::shared_ptr<Completer> self = std::move(retiredSelf_);
        weftCommDestroy(commToDestroy_);
        self.reset();  // runs the destructor here, the last use of `this`
      }) {}

void Completer::retireOnItsThread(std::shared_ptr<Completer> self, weftComm_t comm) {
  Completer* completer = self.get();
  std::lock_guard<std::mutex> lock(completer->mutex_);
  completer->stopping_ = true;
  completer->commToDestroy_ = comm;
  completer->thread_.detach();
  completer->retiredSelf_ = std::move(self);
  completer->wake_.notify_one();  // called from another completer's thread, this one may sleep
}

Completer::~Completer() {
  if (thread_.joinable()) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_one();
    thread_.join();
  }
  // Works their waiters took may still be running on those threads.
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] { return outstanding_.load() == 0; });
}

void Completer::adopt(WeftWork& work) {
  work.comm_ = comm_;
  work.completer_ = this;
  outstanding_.fetch_add(1, std::memory_order_acq_rel);
}

void Completer::run(c10::intrusive_ptr<WeftWork> work, WeftCall call) {
  adopt(*work);
  work->call_ = std::move(call);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++toRun_;
    queue_.push_back(std::move(work));
  }
  wake_.notify_one();
}

void Completer::add(c10::intrusive_ptr<WeftWork> work) {
  adopt(*work);
  work->issued_ = true;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(std::move(work));
  }
  wake_.notify_one();
}

void Completer::addForWaiter(c10::intrusive_ptr<WeftWork> work) {
  adopt(*work);
  work->issued_ = true;
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    forWaiters_.emplace_back(std::move(work), Clock::now());
    lastDeferred_ = forWaiters_.back().second;
    wake = dormant_;
  }
  if (wake) wake_.notify_one();
}

void Completer::queueForWaiters(Clock::time_point until) {
  while (!forWaiters_.empty() && forWaiters_.front().second <= until) {
    queue_.push_back(std::move(forWaiters_.front().first));
    forWaiters_.pop_front();
  }
}

void Completer::defer(c10::intrusive_ptr<WeftWork> work, WeftCall call) {
  adopt(*work);
  work->call_ = std::move(call);
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (deferred_) {
      flushDeferredLocked();
      wake = true;
    }
    deferred_ = std::move(work);
    deferredAt_ = lastDeferred_ = Clock::now();
    wake = wake || dormant_;
  }
  if (wake) wake_.notify_one();
}

void Completer::flushDeferred(const WeftWork* only) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // Only a named work can be among those left to their waiters (every call passes here).
    auto left = only == nullptr
                    ? forWaiters_.end()
                    : std::find_if(forWaiters_.begin(), forWaiters_.end(),
                                   [&](const auto& entry) { return entry.first.get() == only; });
    if (left != forWaiters_.end()) {
      queue_.push_back(std::move(left->first));
      forWaiters_.erase(left);
    } else if (!deferred_ || (only != nullptr && deferred_.get() != only)) {
      return;
    } else {
      flushDeferredLocked();
    }
  }
  wake_.notify_one();
}

void Completer::flushDeferredLocked() {
  ++toRun_;
  queue_.push_back(std::move(deferred_));
  deferred_.reset();
}

void Completer::waitUntilRun() {
  std::unique_lock<std::mutex> lock(mutex_);
  if (deferred_) flushDeferredLocked();
  // A future's callback runs on the completer thread; if it issues a batch, the calls before it
  // can only run here.
  const bool onCompleter = onItsThread();
  if (!onCompleter && toRun_ > 0) wake_.notify_one();
  while (toRun_ > 0) {
    if (!(onCompleter && runFront(lock))) changed_.wait(lock);
  }
}

bool Completer::runFront(std::unique_lock<std::mutex>& lock) {
  // A call to run waits while another runs (a waiter took it); one issued with requests is
  // already in weft's order and can be waited on at any time.
  if (queue_.empty() || (queue_.front()->call_ && running_)) return false;
  c10::intrusive_ptr<WeftWork> work = std::move(queue_.front());
  queue_.pop_front();
  if (work->call_) {
    running_ = true;
    lock.unlock();
    work->runCall();
  } else {
    lock.unlock();
    if (work->claim()) work->complete();
  }
  work.reset();  // the last reference may free tensors: not under the lock
  lock.lock();
  return true;
}

bool Completer::takeDeferred(const WeftWork* work) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (deferred_.get() != work) return false;
  deferred_.reset();
  ++toRun_;
  running_ = true;
  return true;
}

bool Completer::takeNext(const WeftWork* work) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (running_ || queue_.empty() || queue_.front().get() != work || !work->call_) return false;
  queue_.pop_front();
  running_ = true;
  return true;
}

void Completer::ranCall() {
  bool next = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    running_ = false;
    --toRun_;
    changed_.notify_all();
    next = !queue_.empty();
  }
  // Only a queued call can be waiting for this one: a held call run by its waiter, the common
  // case, must not wake the completer.
  if (next) wake_.notify_one();
}

void Completer::workDone() {
  if (outstanding_.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  std::lock_guard<std::mutex> lock(mutex_);
  changed_.notify_all();
}

void Completer::serve() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    if (runFront(lock)) continue;
    Clock::time_point now = Clock::now();
    if (deferred_ && (stopping_ || now - deferredAt_ >= kDeferredFor)) {
      flushDeferredLocked();
      continue;
    }
    if (!forWaiters_.empty() && (stopping_ || now - forWaiters_.front().second >= kDeferredFor)) {
      queueForWaiters(stopping_ ? Clock::time_point::max() : now - kDeferredFor);
      continue;
    }
    if (stopping_ && queue_.empty()) return;
    if (deferred_ || !forWaiters_.empty()) {
      Clock::time_point next = Clock::time_point::max();
      if (deferred_) next = deferredAt_ + kDeferredFor;
      if (!forWaiters_.empty()) next = std::min(next, forWaiters_.front().second + kDeferredFor);
      wake_.wait_until(lock, next);
    } else if (!queue_.empty() || now - lastDeferred_ < kQuietAfter) {
      wake_.wait_for(lock, kDeferredFor);
    } else {
      dormant_ = true;
      wake_.wait(lock,
                 [&] { return stopping_ || !queue_.empty() || deferred_ || !forWaiters_.empty(); });
      dormant_ = false;
    }
  }
}

}  // namespace weft_torch
