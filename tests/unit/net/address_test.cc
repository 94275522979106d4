#include "net/address.h"

#include <arpa/inet.h>
#include <net/if.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "scoped_env.h"

using weft::net::chooseLocalInterface;
using weft::net::Interface;
using weft::net::interfaceMatches;
using weft::net::SocketAddress;
using weft::test::ScopedEnv;

namespace {

SocketAddress parsed(const std::string& text) {
  SocketAddress address;
  weft::Status status = SocketAddress::parse(text, &address);
  INFO(status.message());
  REQUIRE(status.isOk());
  return address;
}

bool ipv6LoopbackUsable() {
  int fd = socket(AF_INET6, SOCK_STREAM, 0);
  if (fd < 0) return false;
  SocketAddress address = parsed("[::1]:0");
  bool ok = bind(fd, address.get(), address.length()) == 0;
  close(fd);
  return ok;
}

}  // namespace

TEST_CASE("SocketAddress parses IPv4, IPv6, scoped IPv6 and host names", "[net][address]") {
  SocketAddress v4 = parsed("1.2.3.4:5");
  CHECK(v4.family() == AF_INET);
  CHECK(v4.port() == 5);
  CHECK(v4.toString() == "1.2.3.4:5");
  CHECK_FALSE(v4.isLoopback());

  SocketAddress v6 = parsed("[::1]:65535");
  CHECK(v6.family() == AF_INET6);
  CHECK(v6.port() == 65535);
  CHECK(v6.isLoopback());
  CHECK(v6.toString() == "[::1]:65535");

  SocketAddress scoped = parsed("[fe80::1%lo]:7");
  const auto* sa = reinterpret_cast<const sockaddr_in6*>(scoped.get());
  CHECK(sa->sin6_scope_id == if_nametoindex("lo"));
  CHECK(scoped.toString() == "[fe80::1%lo]:7");
  CHECK(parsed("[fe80::1%1]:7").toString() == "[fe80::1%lo]:7");

  SocketAddress host = parsed("localhost:80");
  CHECK(host.isValid());
  CHECK(host.isLoopback());
  CHECK(host.port() == 80);
}

TEST_CASE("SocketAddress rejects malformed text and names it", "[net][address]") {
  for (const char* text :
       {"1.2.3.4", "1.2.3.4:", "1.2.3.4:70000", "1.2.3.4:-1", "1.2.3.4:5x", "::1:5", "[::1]5",
        "[::1", "[::1]:", ":5", "[zz::1]:5", "[1.2.3.4]:5", "[fe80::1%nosuchif9]:5", ""}) {
    SocketAddress address;
    weft::Status status = SocketAddress::parse(text, &address);
    INFO(text);
    CHECK(status.code() == weftInvalidArgument);
    // Built with append(): GCC 12 at -O3 warns falsely (-Wrestrict) about "'" + std::string.
    std::string quoted("'");
    quoted.append(text).append("'");
    CHECK(status.message().find(quoted) != std::string::npos);
  }
}

TEST_CASE("SocketAddress wire form round-trips and rejects garbage", "[net][address]") {
  for (const char* text : {"10.1.2.3:4567", "[2001:db8::42]:1", "[fe80::1%lo]:9", "0.0.0.0:0"}) {
    SocketAddress original = parsed(text);
    uint8_t wire[SocketAddress::kWireBytes];
    original.encode(wire);
    SocketAddress decoded;
    REQUIRE(SocketAddress::decode(wire, &decoded).isOk());
    CHECK(decoded == original);
    CHECK(decoded.toString() == original.toString());
  }
  uint8_t wire[SocketAddress::kWireBytes] = {};
  SocketAddress decoded;
  CHECK(SocketAddress::decode(wire, &decoded).code() == weftInvalidArgument);  // unset family
  wire[0] = 5;
  CHECK(SocketAddress::decode(wire, &decoded).code() == weftInvalidArgument);
  parsed("1.2.3.4:5").encode(wire);
  wire[10] = 1;  // IPv4 padding must be zero
  CHECK(SocketAddress::decode(wire, &decoded).code() == weftInvalidArgument);

  // Port in network order at bytes 1..2, per the documented layout.
  parsed("1.2.3.4:258").encode(wire);
  CHECK(wire[0] == 4);
  CHECK(wire[1] == 1);
  CHECK(wire[2] == 2);
  CHECK(wire[3] == 1);
  CHECK(wire[6] == 4);
}

TEST_CASE("SocketAddress helpers", "[net][address]") {
  CHECK(parsed("127.0.0.5:1").isLoopback());
  CHECK(parsed("[::ffff:127.0.0.1]:1").isLoopback());
  CHECK_FALSE(parsed("[::ffff:10.0.0.1]:1").isLoopback());
  CHECK_FALSE(parsed("[2001:db8::1]:1").isLoopback());
  CHECK(SocketAddress::any(AF_INET, 7).toString() == "0.0.0.0:7");
  CHECK(SocketAddress::any(AF_INET6, 7).toString() == "[::]:7");
  SocketAddress address = parsed("1.2.3.4:5");
  address.setPort(9);
  CHECK(address.toString() == "1.2.3.4:9");
  CHECK_FALSE(address == parsed("1.2.3.4:5"));
  CHECK_FALSE(SocketAddress().isValid());
  CHECK(SocketAddress().toString() == "<no address>");
  CHECK(SocketAddress::fromSockaddr(nullptr, 0).isValid() == false);
}

TEST_CASE("interfaceMatches follows NCCL_SOCKET_IFNAME syntax", "[net][address]") {
  CHECK(interfaceMatches("", "eth0"));
  CHECK(interfaceMatches("eth", "eth0"));
  CHECK_FALSE(interfaceMatches("eth", "ib0"));
  CHECK(interfaceMatches("eth,ib", "ib0"));
  CHECK(interfaceMatches(" eth , ib ", "ib1"));
  CHECK_FALSE(interfaceMatches("^docker", "docker0"));
  CHECK(interfaceMatches("^docker", "eth0"));
  CHECK(interfaceMatches("^docker,lo", "eth0"));
  CHECK_FALSE(interfaceMatches("^docker,lo", "lo"));
  CHECK(interfaceMatches("=eth0", "eth0"));
  CHECK_FALSE(interfaceMatches("=eth0", "eth01"));
  CHECK(interfaceMatches("=eth0,ib0", "ib0"));
  CHECK_FALSE(interfaceMatches("^=eth0", "eth0"));
  CHECK(interfaceMatches("^=eth0", "eth01"));
  CHECK(interfaceMatches("^", "eth0"));  // excluding nothing keeps everything
}

TEST_CASE("chooseLocalInterface honours WEFT_SOCKET_IFNAME and WEFT_SOCKET_FAMILY",
          "[net][address]") {
  SECTION("loopback by name, IPv4 preferred") {
    ScopedEnv env({{"WEFT_SOCKET_IFNAME", "lo"}, {"WEFT_SOCKET_FAMILY", nullptr}});
    Interface interface;
    REQUIRE(chooseLocalInterface(&interface).isOk());
    CHECK(interface.name == "lo");
    CHECK(interface.address.family() == AF_INET);
    CHECK(interface.address.isLoopback());
    CHECK(interface.address.port() == 0);
  }
  SECTION("exact name") {
    ScopedEnv env({{"WEFT_SOCKET_IFNAME", "=lo"}, {"WEFT_SOCKET_FAMILY", "AF_INET"}});
    Interface interface;
    REQUIRE(chooseLocalInterface(&interface).isOk());
    CHECK(interface.address.toString() == "127.0.0.1:0");
  }
  SECTION("IPv6 by family") {
    if (!ipv6LoopbackUsable()) {
      WARN("no IPv6 loopback here; skipping");
      return;
    }
    ScopedEnv env({{"WEFT_SOCKET_IFNAME", "lo"}, {"WEFT_SOCKET_FAMILY", "AF_INET6"}});
    Interface interface;
    REQUIRE(chooseLocalInterface(&interface).isOk());
    CHECK(interface.address.toString() == "[::1]:0");
  }
  SECTION("nothing matches") {
    ScopedEnv env({{"WEFT_SOCKET_IFNAME", "nosuchif"}, {"WEFT_SOCKET_FAMILY", nullptr}});
    Interface interface;
    weft::Status status = chooseLocalInterface(&interface);
    CHECK(status.code() == weftInvalidArgument);
    CHECK(status.message().find("WEFT_SOCKET_IFNAME='nosuchif'") != std::string::npos);
    CHECK(status.message().find("lo") != std::string::npos);  // lists what exists
  }
  SECTION("NCCL_SOCKET_IFNAME stands in for WEFT_SOCKET_IFNAME, which wins when both are set") {
    ScopedEnv env({{"WEFT_SOCKET_IFNAME", nullptr},
                   {"NCCL_SOCKET_IFNAME", "=lo"},
                   {"WEFT_SOCKET_FAMILY", "AF_INET"}});
    Interface interface;
    REQUIRE(chooseLocalInterface(&interface).isOk());
    CHECK(interface.name == "lo");
    setenv("NCCL_SOCKET_IFNAME", "nosuchif", 1);
    weft::Status status = chooseLocalInterface(&interface);
    CHECK(status.message().find("NCCL_SOCKET_IFNAME='nosuchif'") != std::string::npos);
    ScopedEnv weft({{"WEFT_SOCKET_IFNAME", "lo"}});
    REQUIRE(chooseLocalInterface(&interface).isOk());
    CHECK(interface.name == "lo");
  }
  SECTION("bad family") {
    ScopedEnv env({{"WEFT_SOCKET_IFNAME", "lo"}, {"WEFT_SOCKET_FAMILY", "AF_UNIX"}});
    Interface interface;
    weft::Status status = chooseLocalInterface(&interface);
    CHECK(status.code() == weftInvalidArgument);
    CHECK(status.message().find("WEFT_SOCKET_FAMILY='AF_UNIX'") != std::string::npos);
  }
  SECTION("default finds something and never a docker bridge") {
    ScopedEnv env({{"WEFT_SOCKET_IFNAME", nullptr}, {"WEFT_SOCKET_FAMILY", nullptr}});
    Interface interface;
    REQUIRE(chooseLocalInterface(&interface).isOk());
    CHECK(interface.name.rfind("docker", 0) != 0);
    CHECK(interface.address.isValid());
  }
}
