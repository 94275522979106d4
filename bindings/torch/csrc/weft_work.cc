#include "weft_work.h"

#include <ATen/core/jit_type.h>
#include <c10/util/Exception.h>

#include <stdexcept>

namespace weft_torch {

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

void WeftWork::complete(weftComm_t comm) {
  std::string failure;
  for (weftRequest_t& request : requests_) {
    weftResult_t result = weftWait(&request, -1);
    if (result != weftSuccess && failure.empty()) {
      const char* detail = weftGetLastError(comm);
      failure = "weft: " + what_ + " failed: " + weftGetErrorString(result) +
                (detail && *detail ? std::string(": ") + detail : std::string());
    }
    request = nullptr;
  }
  std::exception_ptr error;
  if (failure.empty()) {
    try {
      if (finisher_) finisher_();
    } catch (const std::exception& e) {
      failure = "weft: " + what_ + ": copying the result out failed: " + e.what();
    }
  }
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

Completer::Completer(weftComm_t comm) : comm_(comm), thread_([this] { serve(); }) {}

Completer::~Completer() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

void Completer::add(c10::intrusive_ptr<WeftWork> work) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(std::move(work));
  }
  wake_.notify_one();
}

void Completer::serve() {
  for (;;) {
    c10::intrusive_ptr<WeftWork> work;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;
      work = std::move(queue_.front());
      queue_.pop_front();
    }
    work->complete(comm_);
  }
}

}  // namespace weft_torch
