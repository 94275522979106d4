#include "net/address.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <optional>
#include <tuple>
#include <vector>

#include "base/env.h"
#include "net/wire.h"

namespace weft::net {
namespace {

// Wire family codes are our own, not AF_* values, which differ between operating systems.
constexpr uint8_t kWireNone = 0;
constexpr uint8_t kWireIpv4 = 4;
constexpr uint8_t kWireIpv6 = 6;

bool parsePort(const std::string& text, uint16_t* port) {
  if (text.empty() || text.size() > 5) return false;
  uint32_t value = 0;
  for (char c : text) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    value = value * 10 + static_cast<uint32_t>(c - '0');
  }
  if (value > 65535) return false;
  *port = static_cast<uint16_t>(value);
  return true;
}

bool allDigits(const std::string& text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c));
  });
}

Status parseIpv6(const std::string& text, const std::string& host, uint16_t port,
                 SocketAddress* out) {
  std::string literal = host;
  uint32_t scope = 0;
  size_t percent = host.find('%');
  if (percent != std::string::npos) {
    literal = host.substr(0, percent);
    std::string zone = host.substr(percent + 1);
    if (allDigits(zone) && zone.size() < 10) {
      scope = static_cast<uint32_t>(std::stoul(zone));
    } else {
      scope = zone.empty() ? 0 : if_nametoindex(zone.c_str());
      if (scope == 0) {
        return invalidArgument("address '" + text + "': no network interface named '" + zone + "'");
      }
    }
  }
  sockaddr_in6 sa{};
  sa.sin6_family = AF_INET6;
  sa.sin6_port = htons(port);
  sa.sin6_scope_id = scope;
  if (inet_pton(AF_INET6, literal.c_str(), &sa.sin6_addr) != 1) {
    return invalidArgument("address '" + text + "': '" + literal + "' is not an IPv6 address");
  }
  *out = SocketAddress::fromSockaddr(reinterpret_cast<const sockaddr*>(&sa), sizeof(sa));
  return Status::ok();
}

Status resolveHost(const std::string& text, const std::string& host, uint16_t port,
                   SocketAddress* out) {
  sockaddr_in sa4{};
  if (inet_pton(AF_INET, host.c_str(), &sa4.sin_addr) == 1) {
    sa4.sin_family = AF_INET;
    sa4.sin_port = htons(port);
    *out = SocketAddress::fromSockaddr(reinterpret_cast<const sockaddr*>(&sa4), sizeof(sa4));
    return Status::ok();
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* results = nullptr;
  int rc = getaddrinfo(host.c_str(), nullptr, &hints, &results);
  if (rc != 0) {
    return invalidArgument("address '" + text + "': cannot resolve '" + host +
                           "': " + gai_strerror(rc));
  }
  SocketAddress found;
  for (addrinfo* ai = results; ai != nullptr && !found.isValid(); ai = ai->ai_next) {
    found = SocketAddress::fromSockaddr(ai->ai_addr, ai->ai_addrlen);
  }
  freeaddrinfo(results);
  if (!found.isValid()) {
    return invalidArgument("address '" + text + "': '" + host + "' has no IPv4 or IPv6 address");
  }
  found.setPort(port);
  *out = found;
  return Status::ok();
}

bool isIpv6LinkLocal(const SocketAddress& address) {
  if (address.family() != AF_INET6) return false;
  const auto* sa = reinterpret_cast<const sockaddr_in6*>(address.get());
  return IN6_IS_ADDR_LINKLOCAL(&sa->sin6_addr);
}

Status familyFromEnv(int* family) {
  std::string text = env::getString("WEFT_SOCKET_FAMILY");
  std::string upper;
  for (char c : text) upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (upper.empty()) {
    *family = AF_UNSPEC;
  } else if (upper == "AF_INET" || upper == "INET" || upper == "IPV4") {
    *family = AF_INET;
  } else if (upper == "AF_INET6" || upper == "INET6" || upper == "IPV6") {
    *family = AF_INET6;
  } else {
    return invalidArgument("WEFT_SOCKET_FAMILY='" + text + "' is neither AF_INET nor AF_INET6");
  }
  return Status::ok();
}

struct Candidate {
  Interface interface;
  bool loopback = false;
  bool linkLocal = false;
  size_t order = 0;
};

}  // namespace

Status SocketAddress::parse(const std::string& text, SocketAddress* out) {
  std::string host;
  std::string portText;
  if (!text.empty() && text[0] == '[') {
    size_t close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return invalidArgument("address '" + text + "' is not of the form [ipv6]:port");
    }
    host = text.substr(1, close - 1);
    portText = text.substr(close + 2);
  } else {
    size_t colon = text.rfind(':');
    if (colon == std::string::npos) {
      return invalidArgument("address '" + text + "' has no port (expected host:port)");
    }
    host = text.substr(0, colon);
    portText = text.substr(colon + 1);
    if (host.find(':') != std::string::npos) {
      return invalidArgument("address '" + text +
                             "': put IPv6 addresses in brackets, e.g. [::1]:" + portText);
    }
  }
  uint16_t port = 0;
  if (!parsePort(portText, &port)) {
    return invalidArgument("address '" + text + "': '" + portText + "' is not a port number");
  }
  if (host.empty()) return invalidArgument("address '" + text + "' has an empty host");
  if (text[0] == '[') return parseIpv6(text, host, port, out);
  return resolveHost(text, host, port, out);
}

SocketAddress SocketAddress::fromSockaddr(const sockaddr* addr, socklen_t length) {
  SocketAddress result;
  if (addr == nullptr) return result;
  if (addr->sa_family == AF_INET && length >= static_cast<socklen_t>(sizeof(sockaddr_in))) {
    std::memcpy(&result.storage_, addr, sizeof(sockaddr_in));
    result.length_ = sizeof(sockaddr_in);
  } else if (addr->sa_family == AF_INET6 &&
             length >= static_cast<socklen_t>(sizeof(sockaddr_in6))) {
    std::memcpy(&result.storage_, addr, sizeof(sockaddr_in6));
    result.length_ = sizeof(sockaddr_in6);
  }
  return result;
}

SocketAddress SocketAddress::any(int family, uint16_t port) {
  if (family == AF_INET6) {
    sockaddr_in6 sa{};
    sa.sin6_family = AF_INET6;
    sa.sin6_addr = in6addr_any;
    sa.sin6_port = htons(port);
    return fromSockaddr(reinterpret_cast<const sockaddr*>(&sa), sizeof(sa));
  }
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_ANY);
  sa.sin_port = htons(port);
  return fromSockaddr(reinterpret_cast<const sockaddr*>(&sa), sizeof(sa));
}

// Layout: [0] family code, [1..2] port (network order), [3..18] address (IPv4 in the first four
// bytes, the rest zero), [19..22] IPv6 scope id (little-endian).
void SocketAddress::encode(uint8_t* out) const {
  std::memset(out, 0, kWireBytes);
  uint16_t networkPort = htons(port());
  if (family() == AF_INET) {
    const auto* sa = reinterpret_cast<const sockaddr_in*>(&storage_);
    out[0] = kWireIpv4;
    std::memcpy(out + 3, &sa->sin_addr, 4);
  } else if (family() == AF_INET6) {
    const auto* sa = reinterpret_cast<const sockaddr_in6*>(&storage_);
    out[0] = kWireIpv6;
    std::memcpy(out + 3, &sa->sin6_addr, 16);
    wire::putU32(out + 19, sa->sin6_scope_id);
  } else {
    out[0] = kWireNone;
    return;
  }
  std::memcpy(out + 1, &networkPort, 2);
}

Status SocketAddress::decode(const uint8_t* in, SocketAddress* out) {
  uint16_t networkPort;
  std::memcpy(&networkPort, in + 1, 2);
  if (in[0] == kWireIpv4) {
    for (size_t i = 7; i < kWireBytes; ++i) {
      if (in[i] != 0) return invalidArgument("malformed IPv4 socket address (non-zero padding)");
    }
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = networkPort;
    std::memcpy(&sa.sin_addr, in + 3, 4);
    *out = fromSockaddr(reinterpret_cast<const sockaddr*>(&sa), sizeof(sa));
    return Status::ok();
  }
  if (in[0] == kWireIpv6) {
    sockaddr_in6 sa{};
    sa.sin6_family = AF_INET6;
    sa.sin6_port = networkPort;
    std::memcpy(&sa.sin6_addr, in + 3, 16);
    sa.sin6_scope_id = wire::getU32(in + 19);
    *out = fromSockaddr(reinterpret_cast<const sockaddr*>(&sa), sizeof(sa));
    return Status::ok();
  }
  return invalidArgument("malformed socket address (unknown family code " + std::to_string(in[0]) +
                         ")");
}

uint16_t SocketAddress::port() const {
  if (family() == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&storage_)->sin_port);
  if (family() == AF_INET6) {
    return ntohs(reinterpret_cast<const sockaddr_in6*>(&storage_)->sin6_port);
  }
  return 0;
}

void SocketAddress::setPort(uint16_t port) {
  if (family() == AF_INET) reinterpret_cast<sockaddr_in*>(&storage_)->sin_port = htons(port);
  if (family() == AF_INET6) reinterpret_cast<sockaddr_in6*>(&storage_)->sin6_port = htons(port);
}

bool SocketAddress::isLoopback() const {
  if (family() == AF_INET) {
    uint32_t host = ntohl(reinterpret_cast<const sockaddr_in*>(&storage_)->sin_addr.s_addr);
    return (host >> 24) == 127;
  }
  if (family() == AF_INET6) {
    const in6_addr& addr = reinterpret_cast<const sockaddr_in6*>(&storage_)->sin6_addr;
    if (IN6_IS_ADDR_LOOPBACK(&addr)) return true;
    return IN6_IS_ADDR_V4MAPPED(&addr) && addr.s6_addr[12] == 127;
  }
  return false;
}

std::string SocketAddress::toString() const {
  char text[INET6_ADDRSTRLEN] = {};
  if (family() == AF_INET) {
    const auto* sa = reinterpret_cast<const sockaddr_in*>(&storage_);
    inet_ntop(AF_INET, &sa->sin_addr, text, sizeof(text));
    return std::string(text) + ":" + std::to_string(port());
  }
  if (family() == AF_INET6) {
    const auto* sa = reinterpret_cast<const sockaddr_in6*>(&storage_);
    inet_ntop(AF_INET6, &sa->sin6_addr, text, sizeof(text));
    // Built with append(): GCC 12 at -O3 warns falsely (-Wrestrict) about "[" + std::string.
    std::string result("[");
    result.append(text);
    if (sa->sin6_scope_id != 0) {
      char name[IF_NAMESIZE] = {};
      result += "%";
      result += if_indextoname(sa->sin6_scope_id, name) != nullptr
                    ? std::string(name)
                    : std::to_string(sa->sin6_scope_id);
    }
    return result + "]:" + std::to_string(port());
  }
  return "<no address>";
}

bool operator==(const SocketAddress& a, const SocketAddress& b) {
  if (a.family() != b.family() || a.port() != b.port()) return false;
  uint8_t wireA[SocketAddress::kWireBytes];
  uint8_t wireB[SocketAddress::kWireBytes];
  a.encode(wireA);
  b.encode(wireB);
  return std::memcmp(wireA, wireB, sizeof(wireA)) == 0;
}

bool interfaceMatches(const std::string& filter, const std::string& name) {
  if (filter.empty()) return true;
  size_t pos = 0;
  bool exclude = false;
  bool exact = false;
  if (pos < filter.size() && filter[pos] == '^') {
    exclude = true;
    ++pos;
  }
  if (pos < filter.size() && filter[pos] == '=') {
    exact = true;
    ++pos;
  }
  bool matched = false;
  while (pos <= filter.size() && !matched) {
    size_t comma = filter.find(',', pos);
    if (comma == std::string::npos) comma = filter.size();
    std::string entry = filter.substr(pos, comma - pos);
    while (!entry.empty() && std::isspace(static_cast<unsigned char>(entry.back()))) {
      entry.pop_back();
    }
    while (!entry.empty() && std::isspace(static_cast<unsigned char>(entry.front()))) {
      entry.erase(entry.begin());
    }
    if (!entry.empty()) matched = exact ? name == entry : name.rfind(entry, 0) == 0;
    pos = comma + 1;
  }
  return exclude ? !matched : matched;
}

Status chooseLocalInterface(Interface* out) {
  int family = AF_UNSPEC;
  WEFT_TRY(familyFromEnv(&family));
  // NCCL's name is honoured too, so that a job script written for NCCL picks the same NICs.
  const char* filterVariable = "WEFT_SOCKET_IFNAME";
  std::optional<std::string> filter = env::get(filterVariable);
  if (!filter && (filter = env::get("NCCL_SOCKET_IFNAME"))) filterVariable = "NCCL_SOCKET_IFNAME";

  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return systemError("getifaddrs", errno);
  std::vector<Candidate> candidates;
  std::vector<std::string> seenNames;
  for (ifaddrs* ifa = list; ifa != nullptr; ifa = ifa->ifa_next) {
    if (ifa->ifa_addr == nullptr || (ifa->ifa_flags & IFF_UP) == 0) continue;
    int ifaFamily = ifa->ifa_addr->sa_family;
    if (ifaFamily != AF_INET && ifaFamily != AF_INET6) continue;
    std::string name = ifa->ifa_name;
    if (std::find(seenNames.begin(), seenNames.end(), name) == seenNames.end()) {
      seenNames.push_back(name);
    }
    if (family != AF_UNSPEC && ifaFamily != family) continue;
    if (filter ? !interfaceMatches(*filter, name)
               : (name.rfind("docker", 0) == 0 || name.rfind("virbr", 0) == 0)) {
      continue;
    }
    socklen_t length = ifaFamily == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
    Candidate c;
    c.interface.name = name;
    c.interface.address = SocketAddress::fromSockaddr(ifa->ifa_addr, length);
    c.interface.address.setPort(0);
    c.loopback = c.interface.address.isLoopback() || (ifa->ifa_flags & IFF_LOOPBACK) != 0;
    c.linkLocal = isIpv6LinkLocal(c.interface.address);
    // Link-local addresses need a scope and break across hosts; only an explicit filter may
    // fall back to one when nothing else matches.
    if (c.linkLocal && !filter) continue;
    c.order = candidates.size();
    candidates.push_back(c);
  }
  freeifaddrs(list);

  if (candidates.empty()) {
    std::string available;
    for (const std::string& name : seenNames) available += (available.empty() ? "" : ", ") + name;
    std::string what =
        filter ? std::string(filterVariable) + "='" + *filter + "'" : "the default filter";
    if (family != AF_UNSPEC) {
      what += " with WEFT_SOCKET_FAMILY=" + std::string(family == AF_INET ? "AF_INET" : "AF_INET6");
    }
    return invalidArgument(what + " matches no usable interface (interfaces that are up: " +
                           (available.empty() ? "none" : available) + ")");
  }
  // Non-loopback first, then IPv4 before IPv6 (the family variable has already filtered), then
  // link-local last, then the system's order.
  auto rank = [](const Candidate& c) {
    return std::make_tuple(c.loopback, c.interface.address.family() != AF_INET, c.linkLocal,
                           c.order);
  };
  auto best =
      std::min_element(candidates.begin(), candidates.end(),
                       [&](const Candidate& a, const Candidate& b) { return rank(a) < rank(b); });
  *out = best->interface;
  return Status::ok();
}

}  // namespace weft::net
