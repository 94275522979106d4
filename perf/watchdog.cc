#include "watchdog.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "launch.h"

namespace weft::perf::watchdog {
namespace {

struct Slot {
  std::atomic<int64_t> armedSinceNs{0};  // 0: not waiting on weft
  int depth = 0;                         // touched by the owning thread only
  int rank = -1;
};

struct State {
  int timeoutSec = 0;
  std::unique_ptr<Slot[]> slots;
  int nslots = 0;
  std::mutex commsMutex;
  std::vector<weftComm_t> comms;
  std::atomic<bool> fired{false};
  std::mutex stopMutex;
  std::condition_variable stopCv;
  bool stopping = false;
  std::thread monitor;
};

State& state() {
  static State instance;
  return instance;
}

thread_local Slot* tlsSlot = nullptr;

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

[[noreturn]] void expire(int rank) {
  State& s = state();
  s.fired = true;
  if (rank >= 0) {
    std::printf("%s: Test timeout (%ds) waiting on weft in rank %d\n", shortHostName().c_str(),
                s.timeoutSec, rank);
  } else {
    std::printf("%s: Test timeout (%ds) waiting on weft while setting up\n",
                shortHostName().c_str(), s.timeoutSec);
  }
  std::fflush(stdout);
  {
    std::lock_guard<std::mutex> lock(s.commsMutex);
    for (weftComm_t comm : s.comms) weftCommAbort(comm);
    s.comms.clear();
  }
  std::fflush(stdout);
  std::fflush(stderr);
  _exit(1);  // rank threads are still inside aborted calls: no destructors, no atexit
}

void monitorLoop() {
  State& s = state();
  const int64_t limitNs = int64_t(s.timeoutSec) * 1000000000;
  std::unique_lock<std::mutex> lock(s.stopMutex);
  while (!s.stopCv.wait_for(lock, std::chrono::milliseconds(100), [&] { return s.stopping; })) {
    const int64_t now = nowNs();
    for (int i = 0; i < s.nslots; ++i) {
      const int64_t since = s.slots[i].armedSinceNs.load(std::memory_order_relaxed);
      if (since != 0 && now - since > limitNs) expire(s.slots[i].rank);
    }
  }
}

}  // namespace

void start(int timeoutSec, int slots) {
  State& s = state();
  if (timeoutSec <= 0) return;
  s.timeoutSec = timeoutSec;
  s.nslots = slots;
  s.slots = std::make_unique<Slot[]>(size_t(slots));
  s.monitor = std::thread(monitorLoop);
}

void stop() {
  State& s = state();
  if (!s.monitor.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(s.stopMutex);
    s.stopping = true;
  }
  s.stopCv.notify_all();
  s.monitor.join();
}

void bindThread(int slot, int rank) {
  State& s = state();
  if (slot < 0 || slot >= s.nslots) return;
  tlsSlot = &s.slots[slot];
  tlsSlot->rank = rank;
}

void addComm(weftComm_t comm) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.commsMutex);
  s.comms.push_back(comm);
}

void removeComm(weftComm_t comm) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.commsMutex);
  s.comms.erase(std::remove(s.comms.begin(), s.comms.end(), comm), s.comms.end());
}

bool fired() {
  return state().fired.load();
}

Scope::Scope(bool arm) : armed_(arm && tlsSlot != nullptr) {
  if (armed_ && tlsSlot->depth++ == 0) {
    tlsSlot->armedSinceNs.store(nowNs(), std::memory_order_relaxed);
  }
}

Scope::~Scope() {
  if (armed_ && --tlsSlot->depth == 0) tlsSlot->armedSinceNs.store(0, std::memory_order_relaxed);
}

}  // namespace weft::perf::watchdog
