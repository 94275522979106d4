// Socket addresses (IPv4 and IPv6) and the choice of a local interface.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>
#include <string>

#include "base/status.h"

namespace weft::net {

class SocketAddress {
 public:
  // Fixed-size wire form: family (1), port (2, network order), 16 address bytes, scope id (4).
  static constexpr size_t kWireBytes = 23;

  SocketAddress() = default;
  // "1.2.3.4:5", "[fe80::1%eth0]:5", "host.example:5" (resolved; the first usable result wins).
  static Status parse(const std::string& text, SocketAddress* out);
  static Status decode(const uint8_t* in, SocketAddress* out);
  static SocketAddress fromSockaddr(const sockaddr* addr, socklen_t length);
  // The wildcard address (0.0.0.0 or ::) of a family with the given port.
  static SocketAddress any(int family, uint16_t port);

  void encode(uint8_t* out) const;
  bool isValid() const { return length_ != 0; }
  int family() const { return storage_.ss_family; }
  uint16_t port() const;
  void setPort(uint16_t port);
  bool isLoopback() const;
  std::string toString() const;  // "1.2.3.4:5" or "[::1]:5"
  const sockaddr* get() const { return reinterpret_cast<const sockaddr*>(&storage_); }
  socklen_t length() const { return length_; }

 private:
  sockaddr_storage storage_{};
  socklen_t length_ = 0;
};

// Same family, address, port and scope.
bool operator==(const SocketAddress& a, const SocketAddress& b);

// One usable local interface address.
struct Interface {
  std::string name;
  SocketAddress address;  // port 0
};

// Picks the address this process should listen on and publish, following WEFT_SOCKET_IFNAME
// (NCCL_SOCKET_IFNAME's syntax: "eth,ib" prefixes, "^docker" excludes, "=eth0" exact names) and
// WEFT_SOCKET_FAMILY. Without them: the first interface that is up and not loopback or docker,
// else loopback. An error names the variable's value when nothing matches.
Status chooseLocalInterface(Interface* out);
// Whether an interface name passes an NCCL-style filter (exposed for tests).
bool interfaceMatches(const std::string& filter, const std::string& name);

}  // namespace weft::net
