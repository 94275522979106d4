// TCP connection set-up: every rank listens; for each pair the higher rank connects to the lower
// one (so the lowest ranks only accept and set-up cannot deadlock), authenticates with the
// communicator's secret and announces (rank, socket index). The accepting side serves all
// incoming connections at once (net::acceptAuthenticated), so strays cannot hold it up.
#include <sys/epoll.h>

#include <algorithm>
#include <cstring>

#include "base/log.h"
#include "net/acceptor.h"
#include "net/address.h"
#include "net/auth.h"
#include "transports/tcp/tcp_internal.h"

namespace weft::tcp {
namespace {

// Published address: the socket address, then the number of sockets this rank wants per peer.
constexpr size_t kAddressBytes = net::SocketAddress::kWireBytes + 1;
// A stray or slow connection is dropped after this long; others are served meanwhile.
constexpr int kHandshakeMs = 5000;

struct LaneHello {
  uint32_t rank;
  uint32_t index;
};

}  // namespace

Status TcpTransport::listen(std::string* address) {
  net::Interface interface;
  WEFT_TRY(net::chooseLocalInterface(&interface));
  net::SocketAddress bound;
  WEFT_TRY(net::listenOn(interface.address, SOMAXCONN, &listener_, &bound));
  epollFd_ = epoll_create1(EPOLL_CLOEXEC);
  if (epollFd_ < 0) return systemError("epoll_create1", errno);
  address->assign(kAddressBytes, '\0');
  bound.encode(reinterpret_cast<uint8_t*>(address->data()));
  (*address)[kAddressBytes - 1] = static_cast<char>(options_.socketsPerPeer);
  WEFT_INFO("tcp: listening on %s (%s), %d sockets per peer", bound.toString().c_str(),
            interface.name.c_str(), options_.socketsPerPeer);
  return Status::ok();
}

int TcpTransport::socketsWith(int peer) const {
  return std::max(1, std::min(options_.socketsPerPeer, peerSockets_[peer]));
}

Status TcpTransport::connect(const ConnectContext& context, const std::vector<int>& peers) {
  peerNames_ = context.peerNames;
  peers_.resize(context.nranks);
  peerSockets_.assign(context.nranks, 1);
  for (int peer : peers) {
    const std::string& address = context.addresses[peer];
    if (address.size() != kAddressBytes) {
      return invalidUsage(peerNames_[peer] + " published no tcp address (transport mismatch)");
    }
    peerSockets_[peer] = static_cast<unsigned char>(address[kAddressBytes - 1]);
    peers_[peer].lanes.resize(socketsWith(peer));
  }
  for (int peer : peers) {
    if (peer < context.rank) WEFT_TRY(connectToPeer(context, peer, socketsWith(peer)));
  }
  WEFT_TRY(acceptFromPeers(context, peers));
  listener_.close();
  return Status::ok();
}

Status TcpTransport::connectToPeer(const ConnectContext& context, int peer, int sockets) {
  net::SocketAddress address;
  WEFT_TRY(net::SocketAddress::decode(
      reinterpret_cast<const uint8_t*>(context.addresses[peer].data()), &address));
  for (int index = 0; index < sockets; ++index) {
    net::Socket socket;
    Status connected = net::connectTo(address, context.deadline, &socket);
    if (connected.isOk()) {
      connected = net::authenticateClient(socket.fd(), context.secret, net::Purpose::kTcpData,
                                          context.commId, context.deadline);
    }
    if (connected.isOk()) {
      LaneHello hello{static_cast<uint32_t>(context.rank), static_cast<uint32_t>(index)};
      connected = net::sendAll(socket.fd(), &hello, sizeof(hello), context.deadline);
    }
    if (!connected.isOk()) {
      return connected.withContext("tcp: connecting to " + peerNames_[peer] + " at " +
                                   address.toString());
    }
    WEFT_TRY(addLane(peer, index, std::move(socket)));
  }
  return Status::ok();
}

Status TcpTransport::acceptFromPeers(const ConnectContext& context, const std::vector<int>& peers) {
  // arrived[peer][index]: the accepted sockets; the lanes are made once all have arrived.
  std::vector<std::vector<net::Socket>> arrived(context.nranks);
  net::AcceptSpec spec;
  for (int peer : peers) {
    if (peer <= context.rank) continue;
    arrived[peer].resize(socketsWith(peer));
    spec.expected += socketsWith(peer);
  }
  spec.secret = context.secret;
  spec.purpose = net::Purpose::kTcpData;
  spec.commId = context.commId;
  spec.helloBytes = sizeof(LaneHello);
  spec.deadline = context.deadline;
  spec.perConnectionMs = kHandshakeMs;
  spec.logName = "tcp";
  auto judge = [&](net::Arrival& arrival) {
    LaneHello hello;
    std::memcpy(&hello, arrival.hello.data(), sizeof(hello));
    if (hello.rank >= arrived.size() || hello.index >= arrived[hello.rank].size() ||
        arrived[hello.rank][hello.index].isOpen()) {
      return invalidUsage("unexpected lane hello (rank " + std::to_string(hello.rank) +
                          ", socket " + std::to_string(hello.index) + ")");
    }
    arrived[hello.rank][hello.index] = std::move(arrival.socket);
    return Status::ok();
  };
  auto describeMissing = [&] {
    std::string missing;
    for (size_t peer = 0; peer < arrived.size(); ++peer) {
      bool waiting = std::any_of(arrived[peer].begin(), arrived[peer].end(),
                                 [](const net::Socket& socket) { return !socket.isOpen(); });
      if (waiting) missing += (missing.empty() ? "" : ", ") + peerNames_[peer];
    }
    return "tcp: waiting for connections from " + missing;
  };
  WEFT_TRY(net::acceptAuthenticated(listener_, spec, judge, describeMissing));
  for (size_t peer = 0; peer < arrived.size(); ++peer) {
    for (size_t index = 0; index < arrived[peer].size(); ++index) {
      WEFT_TRY(addLane(static_cast<int>(peer), static_cast<int>(index),
                       std::move(arrived[peer][index])));
    }
  }
  return Status::ok();
}

Status TcpTransport::addLane(int peer, int index, net::Socket socket) {
  auto lane = std::make_unique<Lane>(socket.release(), peer, index);
  epoll_event event{};
  event.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
  event.data.ptr = lane.get();
  if (epoll_ctl(epollFd_, EPOLL_CTL_ADD, lane->fd(), &event) != 0) {
    return systemError("epoll_ctl", errno);
  }
  peers_[peer].lanes[index] = std::move(lane);
  return Status::ok();
}

}  // namespace weft::tcp
