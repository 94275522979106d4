// A transport that tests script, for the fabric's tests: it records what the fabric asked of it
// (posts, progress, the sleep handshake, failure notices) and does what its plan says (complete
// or fail the transfers, refuse a sleep, wake the fabric through an eventfd as its waitFd).
#pragma once

#include <sys/eventfd.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "transports/capabilities.h"
#include "transports/transport.h"

namespace weft::test {

// What a fake transport did.
struct Record {
  int progress = 0;
  int wokenProgress = 0;  // told that the fabric slept since the last progress
  int prepareToSleep = 0;
  int finishSleep = 0;
  int findCulprit = 0;
  int operationDone = 0;
  std::vector<Xfer*> posted;
  std::vector<int> announced;
  std::vector<std::pair<const void*, size_t>> freed;
  std::vector<bool> closes;  // graceful or not
};

// What a fake transport is to do next.
struct Plan {
  bool completeAll = false;  // the next progress completes every transfer posted so far
  Status failure;            // the next progress fails the pending transfers and reports it
  int culprit = -1;          // what findCulprit() answers
  int sleepRefusals = 0;     // announcements of a sleep refused, as if work had arrived meanwhile
  // On the sleep it accepts: complete every transfer at once, as when a peer writes to shared
  // memory (the fd stays quiet, so a fabric that slept now would sleep until its deadline)...
  bool completeInMemory = false;
  // ...or make the fd readable, so that the sleep ends at once and the progress after it
  // completes every transfer.
  bool wakeToComplete = false;
};

// A fake transport's plan and record. The test owns it, so that it outlives the transport, which
// the fabric deletes when it closes. The plan may change from any thread; the transport itself
// runs on the waiting thread, as the fabric's contract has it.
class TransportScript {
 public:
  TransportScript() : wakeFd(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) { REQUIRE(wakeFd >= 0); }
  ~TransportScript() { ::close(wakeFd); }
  TransportScript(const TransportScript&) = delete;
  TransportScript& operator=(const TransportScript&) = delete;

  // Changes the plan and wakes a sleeping fabric, so that its next progress follows it.
  template <typename Change>
  void script(Change change) {
    std::lock_guard<std::mutex> lock(mutex);
    change(plan);
    wake();
  }
  bool waitUntilSleepAnnounced(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mutex);
    return sleepAnnounced.wait_for(lock, timeout, [&] { return recorded.prepareToSleep > 0; });
  }
  Record record() const {
    std::lock_guard<std::mutex> lock(mutex);
    return recorded;
  }

  // For the transport, under `mutex`.
  void wake() {
    uint64_t one = 1;
    [[maybe_unused]] ssize_t written = write(wakeFd, &one, sizeof(one));
  }
  void completePending(const Status& result = Status::ok()) {
    for (Xfer* xfer : recorded.posted) {
      if (!xfer->done) xfer->complete(result);
    }
  }

  const int wakeFd;
  mutable std::mutex mutex;
  std::condition_variable sleepAnnounced;
  Plan plan;
  Record recorded;
};

class FakeTransport : public Transport, public TransportCapabilities {
 public:
  FakeTransport(TransportScript& script, bool capable) : script_(script), capable_(capable) {}

  const char* name() const override { return "fake"; }
  Status listen(std::string*) override { return Status::ok(); }
  Status connect(const ConnectContext&, const std::vector<int>&) override { return Status::ok(); }
  void post(Xfer* xfer) override {
    change([&](Record& record) { record.posted.push_back(xfer); });
  }
  Status progress(bool woken) override {
    std::lock_guard<std::mutex> lock(script_.mutex);
    ++script_.recorded.progress;
    script_.recorded.wokenProgress += woken;
    uint64_t wakes;
    [[maybe_unused]] ssize_t drained = read(script_.wakeFd, &wakes, sizeof(wakes));
    const Plan& plan = script_.plan;
    if (!plan.failure.isOk() || plan.completeAll) script_.completePending(plan.failure);
    return plan.failure;
  }
  int waitFd() const override { return script_.wakeFd; }
  int findCulprit() override {
    std::lock_guard<std::mutex> lock(script_.mutex);
    ++script_.recorded.findCulprit;
    return script_.plan.culprit;
  }
  void announceFailure(int culprit) override {
    change([&](Record& record) { record.announced.push_back(culprit); });
  }
  void close(bool graceful) override {
    change([&](Record& record) { record.closes.push_back(graceful); });
  }
  TransportCapabilities* capabilities() override { return capable_ ? this : nullptr; }

  bool prepareToSleep() override {
    std::lock_guard<std::mutex> lock(script_.mutex);
    ++script_.recorded.prepareToSleep;
    script_.sleepAnnounced.notify_all();
    Plan& plan = script_.plan;
    if (plan.sleepRefusals > 0) {
      --plan.sleepRefusals;
      return false;
    }
    if (plan.completeInMemory) script_.completePending();
    if (plan.wakeToComplete) {
      plan.completeAll = true;
      script_.wake();
    }
    return true;
  }
  void finishSleep() override {
    change([](Record& record) { ++record.finishSleep; });
  }
  void operationDone() override {
    change([](Record& record) { ++record.operationDone; });
  }
  void memoryFreed(const void* buf, size_t bytes) override {
    change([&](Record& record) { record.freed.emplace_back(buf, bytes); });
  }

 private:
  template <typename Change>
  void change(Change apply) {
    std::lock_guard<std::mutex> lock(script_.mutex);
    apply(script_.recorded);
  }

  TransportScript& script_;
  const bool capable_;
};

}  // namespace weft::test
