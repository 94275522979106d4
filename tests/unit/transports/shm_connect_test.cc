// The shm transport's set-up under attack: while a communicator of ranks-as-threads on one host
// sets up, other local clients hit its Unix-socket listeners. Set-up must succeed in far less
// than the 5 s cap that each stray would cost a listener serving connections one at a time, and
// every stray must be dropped and logged; descriptors go only to peers that proved the secret.
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

// The listeners' names, from the transports' "shm: listening on @<name>" lines.
std::vector<std::string> awaitShmListeners(const LogCapture& capture, size_t count) {
  const std::string marker = "shm: listening on @";
  auto until = Clock::now() + std::chrono::seconds(10);
  std::vector<std::string> lines;
  while ((lines = capture.matching(log::Level::kInfo, {marker})).size() < count &&
         Clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::vector<std::string> names;
  for (const std::string& line : lines)
    names.push_back(line.substr(line.find(marker) + marker.size()));
  return names;
}

}  // namespace

TEST_CASE("strays at the shm listeners neither stall nor break a communicator's set-up",
          "[shm][strays]") {
  ScopedEnv env({{"WEFT_TRANSPORT", "shm"}});
  LogCapture capture(log::Level::kInfo);
  constexpr int n = 4;
  HeldBackSetup setup(n);
  std::vector<std::string> listeners = awaitShmListeners(capture, n - 1);
  std::vector<std::unique_ptr<StrayMix>> strays;
  for (const std::string& name : listeners) {
    strays.push_back(std::make_unique<StrayMix>(StrayTarget::unixSocket(name), net::Purpose::kShm));
  }
  setup.releaseAndJoin();
  REQUIRE(listeners.size() == n - 1);
  INFO(setup.initErrors());
  REQUIRE(setup.initErrors().empty());
  CHECK(setup.sums() == std::vector<float>(n, 4.0f));
  // One at a time, rank 0's listener alone would have spent 45 s on its strays.
  CHECK(setup.slowestInit() < 3.0);

  // Every stray was accepted (they queued before any real connection) and dropped, with why.
  const size_t accepting = listeners.size();
  CHECK(capture.warnings({"shm: dropped a connection from a local peer"}) ==
        StrayMix::kConnections * accepting);
  CHECK(capture.warnings({"shm: dropped", "not needed any more"}) == 9 * accepting);
  CHECK(capture.warnings({"shm: dropped", "closed by peer during the hello (7 of 32 bytes)"}) ==
        accepting);
  CHECK(capture.warnings({"shm: dropped", "bad magic"}) == accepting);
  CHECK(capture.warnings({"shm: dropped", "unexpected purpose 2"}) == accepting);
  CHECK(capture.warnings({"shm: dropped", "unexpected communicator id 0x0000000000000000"}) ==
        accepting);
  for (auto& mix : strays) CHECK(mix->wrongPurpose.outcome().code() == weftRemoteError);
}

}  // namespace weft::test
