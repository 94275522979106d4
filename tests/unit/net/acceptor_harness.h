// What the acceptor's tests share: a loopback listener, a spec with the tests' secret, and
// acceptAuthenticated run on its own thread with a judge that keeps every wanted id.
#pragma once

#include <sys/socket.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "net/acceptor.h"
#include "net/wire.h"
#include "unit/log_capture.h"

namespace weft::test {

using Clock = std::chrono::steady_clock;
constexpr uint64_t kCommId = 0x5eed5eed;
constexpr uint32_t kUnwantedId = 1u << 20;  // the judge refuses ids from here on

inline net::Secret testSecret() {
  net::Secret secret;
  secret.fill(3);
  return secret;
}

inline double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

inline net::AcceptSpec specFor(int expected) {
  net::AcceptSpec spec;
  spec.secret = testSecret();
  spec.purpose = net::Purpose::kTcpData;
  spec.commId = kCommId;
  spec.helloBytes = 4;
  spec.expected = expected;
  spec.deadline = Deadline::after(10000);
  spec.logName = "acceptor test";
  return spec;
}

struct LoopbackListener {
  explicit LoopbackListener(int backlog = 128) {
    net::SocketAddress any;
    REQUIRE(net::SocketAddress::parse("127.0.0.1:0", &any).isOk());
    REQUIRE(net::listenOn(any, backlog, &socket, &address).isOk());
  }
  net::Socket socket;
  net::SocketAddress address;
};

inline std::vector<uint8_t> helloOf(uint32_t id) {
  std::vector<uint8_t> hello(4);
  net::wire::putU32(hello.data(), id);
  return hello;
}

// acceptAuthenticated on its own thread; the judge keeps ids below kUnwantedId.
class AcceptRun {
 public:
  AcceptRun(const net::Socket& listener, const net::AcceptSpec& spec) : spec_(spec) {
    thread_ = std::thread([this, &listener] {
      status_ = net::acceptAuthenticated(
          listener, spec_,
          [this](net::Arrival& arrival) {
            uint32_t id = net::wire::getU32(arrival.hello.data());
            if (id >= kUnwantedId)
              return invalidUsage("id " + std::to_string(id) + " is not wanted");
            std::lock_guard<std::mutex> lock(mutex_);
            ids_.insert(id);
            kept_.push_back(std::move(arrival.socket));
            return Status::ok();
          },
          [] { return std::string("acceptor test: waiting for the honest clients"); });
      seconds_ = secondsSince(started_);
    });
  }
  ~AcceptRun() { (void)finish(); }
  AcceptRun(const AcceptRun&) = delete;
  AcceptRun& operator=(const AcceptRun&) = delete;

  Status finish() {
    if (thread_.joinable()) thread_.join();
    return status_;
  }
  double seconds() const { return seconds_; }
  std::set<uint32_t> ids() {
    std::lock_guard<std::mutex> lock(mutex_);
    return ids_;
  }

 private:
  net::AcceptSpec spec_;
  Clock::time_point started_ = Clock::now();
  std::thread thread_;
  Status status_;
  double seconds_ = 0;
  std::mutex mutex_;
  std::set<uint32_t> ids_;
  std::vector<net::Socket> kept_;
};

// Waits until `count` WARN lines contain every needle (or 5 s pass); returns how many did.
inline size_t awaitWarnings(const LogCapture& capture, const std::vector<std::string>& needles,
                            size_t count) {
  auto until = Clock::now() + std::chrono::seconds(5);
  while (capture.warnings(needles) < count && Clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return capture.warnings(needles);
}

// What every stray test starts from: the log captured and a listener on loopback.
struct StraysFixture {
  LogCapture capture;
  LoopbackListener listening;
  const net::SocketAddress& address = listening.address;
};

}  // namespace weft::test
