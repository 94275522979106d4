// Executor: runs a communicator's operations one at a time, in the order they were issued.
// A blocking call that finds nothing queued or running runs on the caller's own thread (no
// hand-off latency); anything else goes to a queue served by the communicator's progress
// thread, so non-blocking calls advance while the caller computes. The thread sleeps on a
// condition variable when idle.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/completion.h"
#include "core/op.h"
#include "core/status.h"

namespace weft {

struct Op {
  std::vector<CollArgs> calls;  // one call, or a group's calls on this communicator
  std::shared_ptr<Completion> completion;
};

class Executor {
 public:
  using RunFn = std::function<Status(const Op&)>;

  explicit Executor(RunFn run);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  void start();
  Status runBlocking(Op op);
  void enqueue(Op op);
  // Waits until nothing is queued or running.
  void drain();
  // Completes every queued (not yet running) operation with `why`.
  void cancelQueued(const Status& why);
  // Stops the thread after the queue is empty.
  void stop();

 private:
  void serve();

  RunFn run_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Op> queue_;
  bool running_ = false;  // an operation is executing (on any thread)
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace weft
