// A communicator of ranks-as-threads whose set-up a test can attack: the last rank's init is held
// back until release(), so that the others are listening (and held at the rendezvous) while the
// test throws strays at their listeners. Each rank then makes one all-reduce of 1.0.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "multirank/rank_threads.h"

namespace weft::test {

class HeldBackSetup {
 public:
  using Clock = std::chrono::steady_clock;

  explicit HeldBackSetup(int n) : n_(n), initDone_(n), sums_(n, 0) {
    thread_ = std::thread([this] {
      init_ = runAsThreadsWith(
          n_,
          [this](weftComm_t comm, int rank) {
            initDone_[rank] = Clock::now();
            float one = 1;
            weftAllReduce(&one, &sums_[rank], 1, weftFloat32, weftSum, comm, nullptr);
          },
          [this](int rank) -> const weftConfig_t* {
            // Called on the rank's thread just before its init.
            auto until = Clock::now() + std::chrono::seconds(20);
            while (rank == n_ - 1 && !released_ && Clock::now() < until) {
              std::this_thread::sleep_for(std::chrono::milliseconds(1));
            }
            return nullptr;
          });
    });
  }
  ~HeldBackSetup() { releaseAndJoin(); }
  HeldBackSetup(const HeldBackSetup&) = delete;
  HeldBackSetup& operator=(const HeldBackSetup&) = delete;

  // Lets the last rank start, then waits for every rank to finish.
  void releaseAndJoin() {
    if (!thread_.joinable()) return;
    releasedAt_ = Clock::now();
    released_ = true;
    thread_.join();
  }
  const std::string& initErrors() const { return init_; }
  const std::vector<float>& sums() const { return sums_; }
  // Seconds from the release to the last rank's completed init.
  double slowestInit() const {
    double slowest = 0;
    for (const Clock::time_point& done : initDone_) {
      slowest = std::max(slowest, std::chrono::duration<double>(done - releasedAt_).count());
    }
    return slowest;
  }

 private:
  const int n_;
  std::atomic<bool> released_{false};
  Clock::time_point releasedAt_;
  std::vector<Clock::time_point> initDone_;
  std::vector<float> sums_;
  std::string init_;
  std::thread thread_;
};

}  // namespace weft::test
