// Config resolution: the struct is validated by magic and size, environment variables override
// it, and bad values are refused by name.
#include <catch2/catch.hpp>

#include <cstdlib>

#include "base/env.h"
#include "bootstrap/peer_info.h"
#include "core/config.h"
#include "scoped_env.h"

namespace weft {

using test::ScopedEnv;

TEST_CASE("defaults without a config", "[config]") {
  CommConfig config;
  REQUIRE(resolveConfig(nullptr, &config).isOk());
  CHECK(config.timeoutMs == 300000);
  CHECK(config.transports.socketsPerPeer == 1);
  CHECK(config.transports.forced.empty());
  CHECK(config.sliceBytes == 512 * 1024);
}

TEST_CASE("config fields apply and the environment overrides them", "[config]") {
  weftConfig_t user = WEFT_CONFIG_INITIALIZER;
  user.timeoutMs = 1234;
  user.nSocks = 4;
  user.commName = "trainer";
  CommConfig config;
  REQUIRE(resolveConfig(&user, &config).isOk());
  CHECK(config.timeoutMs == 1234);
  CHECK(config.transports.socketsPerPeer == 4);
  CHECK(config.commName == "trainer");
  ScopedEnv timeout("WEFT_TIMEOUT", "7");
  ScopedEnv sockets("WEFT_NSOCKS", "3");
  REQUIRE(resolveConfig(&user, &config).isOk());
  CHECK(config.timeoutMs == 7000);
  CHECK(config.transports.socketsPerPeer == 3);
}

TEST_CASE("bad config values are refused by name", "[config]") {
  CommConfig config;
  weftConfig_t user = WEFT_CONFIG_INITIALIZER;
  user.magic = 7;
  Status status = resolveConfig(&user, &config);
  CHECK(status.code() == weftInvalidArgument);
  CHECK(status.message().find("magic") != std::string::npos);

  user = WEFT_CONFIG_INITIALIZER;
  user.nSocks = 99;
  status = resolveConfig(&user, &config);
  CHECK(status.message().find("nSocks") != std::string::npos);

  user = WEFT_CONFIG_INITIALIZER;
  user.transport = "carrier-pigeon";
  status = resolveConfig(&user, &config);
  CHECK(status.code() == weftInvalidArgument);
  CHECK(status.message().find("carrier-pigeon") != std::string::npos);

  ScopedEnv slice("WEFT_SLICE_BYTES", "3");
  status = resolveConfig(nullptr, &config);
  CHECK(status.message().find("WEFT_SLICE_BYTES") != std::string::npos);
}

TEST_CASE("an older, shorter config struct keeps defaults for the fields it lacks", "[config]") {
  weftConfig_t user = WEFT_CONFIG_INITIALIZER;
  user.timeoutMs = 5000;
  user.nSocks = 5;
  user.size = offsetof(weftConfig_t, nSocks);  // a caller compiled before nSocks existed
  CommConfig config;
  REQUIRE(resolveConfig(&user, &config).isOk());
  CHECK(config.timeoutMs == 5000);
  CHECK(config.transports.socketsPerPeer == 1);
}

TEST_CASE("every variable the table lists has a description", "[env]") {
  for (const env::Variable& variable : env::table()) {
    CHECK(std::string(variable.description).size() > 10);
  }
  ScopedEnv bad("WEFT_NSOCKS", "lots");
  CHECK(env::getInt("WEFT_NSOCKS") == 1);  // unparsable: warned about, default used
}

TEST_CASE("peer descriptions round-trip and reject truncation", "[peer]") {
  PeerInfo info;
  info.rank = 5;
  info.hostId = 0x1234567890abcdefull;
  info.machineId = 0xfedcba0987654321ull;
  info.pid = 4242;
  info.startTicks = 0x0102030405ull;
  info.cores = 96;
  info.hostName = "node-7";
  info.tcpAddress = std::string("\x02\x00\x01", 3);
  std::string bytes = encodePeerInfo(info);
  PeerInfo decoded;
  REQUIRE(decodePeerInfo(bytes, &decoded).isOk());
  CHECK(decoded.rank == 5);
  CHECK(decoded.hostId == info.hostId);
  CHECK(decoded.machineId == info.machineId);
  CHECK(decoded.pid == 4242);
  CHECK(decoded.startTicks == info.startTicks);
  CHECK(decoded.cores == 96);
  CHECK(decoded.hostName == "node-7");
  CHECK(decoded.tcpAddress == info.tcpAddress);
  CHECK(decoded.describe() == "rank 5 (node-7:pid 4242)");
  for (size_t cut = 0; cut < bytes.size(); ++cut) {
    CHECK_FALSE(decodePeerInfo(bytes.substr(0, cut), &decoded).isOk());
  }
  CHECK_FALSE(decodePeerInfo(bytes + "x", &decoded).isOk());
}

}  // namespace weft
