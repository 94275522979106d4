// Every transport's set-up under attack: hostile clients (tests/unit/strays.h) queue at the
// accepting ranks' listeners before the real peers connect. connect() must succeed in far less
// than the 5 s cap that each stray would cost a listener serving connections one at a time, the
// connections must work, and every stray must be dropped and logged once, with its reason.
#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "transports/conformance/harness.h"
#include "unit/log_capture.h"
#include "unit/strays.h"

namespace weft::test::conformance {

TEMPLATE_TEST_CASE(
    "strays at the listeners neither stall nor break connect, and each is dropped "
    "with its reason",
    "[conformance][strays]", WEFT_CONFORMANCE_KINDS) {
  const Kind kind = TestType::kind;
  CAPTURE(nameOf(kind));
  NothingLeftBehind leaks(kind);
  {
    LogCapture capture;
    // Over tcp every rank accepts (each connects its own sending side, on first use: strays
    // meet the listener during the exchange below); over shm only the host's lowest rank
    // accepts (the others send it their segments). Strays go to all but the last rank.
    constexpr int n = 4;
    const size_t accepting = kind == Kind::kShm ? 1 : n - 1;
    Cluster cluster(kind, n);
    std::string listened = cluster.listenAll();
    REQUIRE(listened.empty());
    std::vector<std::unique_ptr<StrayMix>> strays;
    for (int rank = 0; rank < static_cast<int>(accepting); ++rank) {
      strays.push_back(std::make_unique<StrayMix>(strayTarget(kind, cluster.address(rank)),
                                                  listenerPurpose(kind)));
    }
    const auto start = std::chrono::steady_clock::now();
    std::string connected = cluster.connectAll();
    REQUIRE(connected.empty());
    std::string used = smallExchange(cluster, cluster.members());
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    CHECK(used.empty());
    // One at a time, rank 0's listener alone would have spent 45 s on its strays.
    CHECK(seconds < 3.0);
    closeAll(cluster, cluster.members(), true);

    // Each stray was accepted (they queued before any real connection) and dropped by name.
    const std::string dropped = std::string(nameOf(kind)) + ": dropped";
    const std::string from = dropped + (kind == Kind::kShm ? " a connection from a local peer"
                                                           : " a connection from 127.0.0.1:");
    const std::string purpose = "unexpected purpose 2 (expected " +
                                std::to_string(static_cast<int>(listenerPurpose(kind))) + ")";
    CHECK(capture.warnings({from}) == StrayMix::kConnections * accepting);
    CHECK(capture.warnings({dropped, "bad magic"}) == accepting);
    CHECK(capture.warnings({dropped, purpose}) == accepting);
    CHECK(capture.warnings({dropped, "unexpected communicator id 0x0000000000000000"}) ==
          accepting);
    CHECK(capture.warnings({dropped, "closed by peer during the hello (7 of 32 bytes)"}) ==
          accepting);
    CHECK(capture.warnings({dropped, "not needed any more"}) == 9 * accepting);
    // A stray that spoke the handshake heard the refusal.
    for (auto& mix : strays) CHECK(mix->wrongPurpose.outcome().code() == weftRemoteError);
  }
  leaks.check();
}

}  // namespace weft::test::conformance
