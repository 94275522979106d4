// The TCP transport's set-up under attack: while a communicator of ranks-as-threads sets up over
// tcp, hostile clients hit its data listeners; set-up must succeed in far less than the 5 s cap
// that each stray would have cost a listener serving connections one at a time, and every
// stray must be dropped and named.
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "net/auth.h"
#include "scoped_env.h"
#include "unit/held_setup.h"
#include "unit/log_capture.h"
#include "unit/strays.h"

namespace weft::test {
namespace {

using Clock = std::chrono::steady_clock;

// The data listeners' addresses, from the transports' "tcp: listening on <address> (<if>)" lines.
std::vector<net::SocketAddress> awaitDataListeners(const LogCapture& capture, size_t count) {
  const std::string marker = "tcp: listening on ";
  auto until = Clock::now() + std::chrono::seconds(10);
  std::vector<std::string> lines;
  while ((lines = capture.matching(log::Level::kInfo, {marker})).size() < count &&
         Clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::vector<net::SocketAddress> addresses;
  for (const std::string& line : lines) {
    size_t start = line.find(marker) + marker.size();
    net::SocketAddress address;
    REQUIRE(net::SocketAddress::parse(line.substr(start, line.find(' ', start) - start), &address)
                .isOk());
    addresses.push_back(address);
  }
  return addresses;
}

}  // namespace

TEST_CASE("strays at the tcp data listeners neither stall nor break a communicator's set-up",
          "[tcp][strays]") {
  ScopedEnv env({{"WEFT_TRANSPORT", "tcp"}, {"WEFT_SOCKET_IFNAME", "lo"}});
  LogCapture capture(log::Level::kInfo);
  constexpr int n = 4;
  HeldBackSetup setup(n);
  std::vector<net::SocketAddress> listeners = awaitDataListeners(capture, n - 1);
  std::vector<std::unique_ptr<StrayMix>> strays;
  for (const net::SocketAddress& address : listeners) {
    strays.push_back(std::make_unique<StrayMix>(address, net::Purpose::kTcpData));
  }
  setup.releaseAndJoin();
  REQUIRE(listeners.size() == n - 1);
  INFO(setup.initErrors());
  REQUIRE(setup.initErrors().empty());
  CHECK(setup.sums() == std::vector<float>(n, 4.0f));
  // One at a time, rank 0's listener alone would have spent 45 s on its strays.
  CHECK(setup.slowestInit() < 3.0);

  // Each stray was accepted (they queued before any real connection) and dropped by name.
  CHECK(capture.warnings({"tcp: dropped a connection from 127.0.0.1:"}) ==
        StrayMix::kConnections * listeners.size());
  CHECK(capture.warnings({"tcp: dropped", "bad magic"}) == listeners.size());
  CHECK(capture.warnings({"tcp: dropped", "unexpected purpose 2 (expected 3)"}) ==
        listeners.size());
  CHECK(capture.warnings({"tcp: dropped", "unexpected communicator id 0x0000000000000000"}) ==
        listeners.size());
  CHECK(capture.warnings({"tcp: dropped", "closed by peer during the hello (7 of 32 bytes)"}) ==
        listeners.size());
  CHECK(capture.warnings({"tcp: dropped", "not needed any more"}) == 9 * listeners.size());
  for (auto& mix : strays) CHECK(mix->wrongPurpose.outcome().code() == weftRemoteError);
}

}  // namespace weft::test
