// The Work object torch.distributed hands back for each call, and the thread that completes them.
//
// A call issues weft's non-blocking form and gets one request (or several: a batch of sends and
// receives). One completer thread per process group waits on the requests in issue order, which
// is the order weft runs them in, so waiting never overtakes the communicator. When a call's
// requests are done it copies staged results into the user's tensors, completes the Work (waking
// wait()) and then the Future (which DDP's communication hooks chain on).
#pragma once

#include <ATen/ATen.h>
#include <ATen/core/ivalue.h>
#include <weft/weft.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace weft_torch {

class WeftWork : public c10d::Work {
 public:
  // `outputs` become the Future's value; `keepAlive` holds every tensor weft reads or writes until
  // the call completes; `finisher` runs after success (copying staged results out).
  WeftWork(int rank, c10d::OpType opType, std::string what, std::vector<at::Tensor> outputs,
           std::vector<at::Tensor> keepAlive, std::function<void()> finisher);
  ~WeftWork() override;

  void addRequest(weftRequest_t request) { requests_.push_back(request); }

  bool wait(std::chrono::milliseconds timeout) override;
  std::vector<at::Tensor> result() override { return outputs_; }
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }

 private:
  friend class Completer;
  // Waits on the requests; the first failure's message comes from weft, naming what failed.
  void complete(weftComm_t comm);

  std::string what_;
  std::vector<weftRequest_t> requests_;
  std::vector<at::Tensor> outputs_;
  std::vector<at::Tensor> keepAlive_;
  std::function<void()> finisher_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

class Completer {
 public:
  explicit Completer(weftComm_t comm);
  ~Completer();  // completes what is queued, then stops
  Completer(const Completer&) = delete;
  Completer& operator=(const Completer&) = delete;

  void add(c10::intrusive_ptr<WeftWork> work);

 private:
  void serve();

  weftComm_t comm_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<c10::intrusive_ptr<WeftWork>> queue_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace weft_torch
