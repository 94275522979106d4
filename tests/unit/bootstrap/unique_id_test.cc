#include "bootstrap/unique_id.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "bootstrap/bootstrap.h"
#include "net/auth.h"
#include "net/socket.h"

using weft::Deadline;
using weft::Status;
using weft::bootstrap::UniqueIdContents;

namespace {

// Sets WEFT_SOCKET_IFNAME=lo for one test case so that only loopback is used.
class LoopbackOnly {
 public:
  LoopbackOnly() {
    if (const char* old = std::getenv("WEFT_SOCKET_IFNAME")) saved_ = old;
    setenv("WEFT_SOCKET_IFNAME", "lo", 1);
  }
  ~LoopbackOnly() {
    if (saved_) {
      setenv("WEFT_SOCKET_IFNAME", saved_->c_str(), 1);
    } else {
      unsetenv("WEFT_SOCKET_IFNAME");
    }
  }

 private:
  std::optional<std::string> saved_;
};

UniqueIdContents sampleContents(const std::string& root) {
  UniqueIdContents contents;
  REQUIRE(weft::net::SocketAddress::parse(root, &contents.root).isOk());
  for (size_t i = 0; i < contents.secret.size(); ++i) contents.secret[i] = static_cast<uint8_t>(i);
  return contents;
}

}  // namespace

TEST_CASE("unique id encoding round-trips", "[bootstrap][uniqueid]") {
  for (const char* root : {"10.0.0.1:1234", "[2001:db8::1]:9"}) {
    UniqueIdContents contents = sampleContents(root);
    weftUniqueId id;
    std::memset(&id, 0xEE, sizeof(id));
    weft::bootstrap::encodeUniqueId(contents, &id);
    CHECK(std::memcmp(id.internal, "WFT1", 4) == 0);
    CHECK(id.internal[WEFT_UNIQUE_ID_BYTES - 1] == 0);  // padding is zeroed
    UniqueIdContents decoded;
    REQUIRE(weft::bootstrap::decodeUniqueId(id, &decoded).isOk());
    CHECK(decoded.root == contents.root);
    CHECK(decoded.secret == contents.secret);
  }
}

TEST_CASE("unique id decoding rejects bad magic, family and port", "[bootstrap][uniqueid]") {
  weftUniqueId id;
  weft::bootstrap::encodeUniqueId(sampleContents("10.0.0.1:1234"), &id);
  UniqueIdContents decoded;
  SECTION("magic") {
    id.internal[0] = 'X';
    Status status = weft::bootstrap::decodeUniqueId(id, &decoded);
    CHECK(status.code() == weftInvalidArgument);
    CHECK(status.message().find("uniqueId") != std::string::npos);
  }
  SECTION("all zero") {
    std::memset(&id, 0, sizeof(id));
    CHECK(weft::bootstrap::decodeUniqueId(id, &decoded).code() == weftInvalidArgument);
  }
  SECTION("family") {
    id.internal[4] = 9;
    Status status = weft::bootstrap::decodeUniqueId(id, &decoded);
    CHECK(status.code() == weftInvalidArgument);
    CHECK(status.message().find("uniqueId") != std::string::npos);
  }
  SECTION("port 0") {
    weft::bootstrap::encodeUniqueId(sampleContents("10.0.0.1:0"), &id);
    CHECK(weft::bootstrap::decodeUniqueId(id, &decoded).code() == weftInvalidArgument);
  }
}

TEST_CASE("createUniqueId starts a root that authenticates with the id's secret",
          "[bootstrap][uniqueid]") {
  LoopbackOnly loopback;
  weftUniqueId first, second;
  REQUIRE(weft::bootstrap::createUniqueId(&first).isOk());
  REQUIRE(weft::bootstrap::createUniqueId(&second).isOk());
  UniqueIdContents a, b;
  REQUIRE(weft::bootstrap::decodeUniqueId(first, &a).isOk());
  REQUIRE(weft::bootstrap::decodeUniqueId(second, &b).isOk());
  CHECK(a.root.isLoopback());
  CHECK(a.root.port() != 0);
  CHECK_FALSE(a.root == b.root);
  CHECK(a.secret != b.secret);
  CHECK(a.secret != weft::net::Secret{});

  weft::net::Socket socket;
  REQUIRE(weft::net::connectTo(a.root, Deadline::after(2000), &socket).isOk());
  CHECK(weft::net::authenticateClient(socket.fd(), a.secret, weft::net::Purpose::kRendezvous, 0,
                                      Deadline::after(2000))
            .isOk());
  weft::net::Socket other;
  REQUIRE(weft::net::connectTo(b.root, Deadline::after(2000), &other).isOk());
  CHECK(weft::net::authenticateClient(other.fd(), a.secret, weft::net::Purpose::kRendezvous, 0,
                                      Deadline::after(2000))
            .code() == weftInvalidUsage);

  // Finish both rounds so that their servers exit.
  for (const UniqueIdContents* contents : {&a, &b}) {
    std::unique_ptr<weft::bootstrap::Bootstrap> bootstrap;
    REQUIRE(
        weft::bootstrap::Bootstrap::create(*contents, 0, 1, "x", Deadline::after(3000), &bootstrap)
            .isOk());
  }
}

TEST_CASE("finished root servers are reaped", "[bootstrap][uniqueid]") {
  LoopbackOnly loopback;
  auto waitForIdle = [](size_t target) {
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(3);
    while (weft::bootstrap::activeRootServers() > target &&
           std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return weft::bootstrap::activeRootServers();
  };
  // Earlier tests may leave servers that still wait for their round; count only ours.
  size_t before = weft::bootstrap::activeRootServers();
  for (int i = 0; i < 20; ++i) {
    weftUniqueId id;
    REQUIRE(weft::bootstrap::createUniqueId(&id).isOk());
    UniqueIdContents contents;
    REQUIRE(weft::bootstrap::decodeUniqueId(id, &contents).isOk());
    std::unique_ptr<weft::bootstrap::Bootstrap> bootstrap;
    REQUIRE(
        weft::bootstrap::Bootstrap::create(contents, 0, 1, "", Deadline::after(3000), &bootstrap)
            .isOk());
  }
  CHECK(waitForIdle(before) <= before);
}
