// TCP connection set-up. Every rank listens for the communicator's whole life; a rank connects
// to a peer the first time it sends to it (NCCL's runtime connection works alike), so a ring or
// a tree connects O(1) or O(log N) peers, not N. Each rank connects its own send lanes to the
// peer, authenticates with the communicator's secret and announces (rank, socket index); the
// peer's connections to it arrive as its receive lanes, each acknowledged with one byte
// (kLaneAdmitted) so that the connecting side knows when it is a lane and not a connection the
// peer may still drop. One direction per connection means neither end decides for the other (no
// tie-break when both start at once), and connections exist only where data goes. Arrivals are
// served by a net::AcceptLoop inside progress(), so strays at the listener cost the peers
// nothing (acceptor.h).
#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/log.h"
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
  rank_ = context.rank;
  secret_ = context.secret;
  commId_ = context.commId;
  peerNames_ = context.peerNames;
  peers_.resize(context.nranks);
  addresses_.resize(context.nranks);
  peerSockets_.assign(context.nranks, 1);
  int arriving = 0;
  for (int peer : peers) {
    const std::string& address = context.addresses[peer];
    if (address.size() != kAddressBytes) {
      return invalidUsage(peerNames_[peer] + " published no tcp address (transport mismatch)");
    }
    WEFT_TRY(net::SocketAddress::decode(reinterpret_cast<const uint8_t*>(address.data()),
                                        &addresses_[peer])
                 .withContext("tcp: the address " + peerNames_[peer] + " published"));
    peerSockets_[peer] = static_cast<unsigned char>(address[kAddressBytes - 1]);
    PeerLinks& links = peers_[peer];
    for (int index = 0; index < socketsWith(peer); ++index) {
      links.sendLanes.push_back(std::make_unique<Lane>(peer, index));
      links.recvLanes.push_back(std::make_unique<Lane>(peer, index));
    }
    arriving += socketsWith(peer);
  }
  net::AcceptSpec spec;
  spec.secret = secret_;
  spec.purpose = net::Purpose::kTcpData;
  spec.commId = commId_;
  spec.helloBytes = sizeof(LaneHello);
  spec.expected = arriving;
  spec.perConnectionMs = kHandshakeMs;
  spec.logName = "tcp";
  arrivals_ = std::make_unique<net::AcceptLoop>(
      listener_, spec, [this](net::Arrival& arrival) { return admit(arrival); });
  WEFT_TRY(arrivals_->start());
  epoll_event event{};
  event.events = EPOLLIN;
  event.data.ptr = nullptr;  // lanes have theirs
  if (epoll_ctl(epollFd_, EPOLL_CTL_ADD, arrivals_->waitFd(), &event) != 0) {
    return systemError("tcp: epoll_ctl (acceptor)", errno);
  }
  if (options_.connectAtInit) return connectEveryPeer(peers, context.deadline);
  return Status::ok();
}

Status TcpTransport::dial(int peer) {
  PeerLinks& links = peers_[peer];
  links.dialed = true;
  WEFT_INFO("tcp: connecting to %s at %s on first use", peerNames_[peer].c_str(),
            addresses_[peer].toString().c_str());
  for (auto& lane : links.sendLanes) WEFT_TRY(dialLane(lane.get()));
  return Status::ok();
}

Status TcpTransport::dialLane(Lane* lane) {
  net::Socket socket;
  WEFT_TRY(net::startConnect(addresses_[lane->peer()], &socket));
  LaneHello hello{static_cast<uint32_t>(rank_), static_cast<uint32_t>(lane->index())};
  lane->startDial(socket.release(),
                  std::make_unique<net::ClientHandshake>(secret_, net::Purpose::kTcpData, commId_,
                                                         &hello, sizeof(hello)));
  WEFT_TRY(watch(lane));
  activate(lane);
  return Status::ok();
}

Status TcpTransport::admit(net::Arrival& arrival) {
  LaneHello hello;
  std::memcpy(&hello, arrival.hello.data(), sizeof(hello));
  const bool known =
      hello.rank < peers_.size() && hello.index < peers_[hello.rank].recvLanes.size();
  if (!known || peers_[hello.rank].recvLanes[hello.index]->hasSocket()) {
    return invalidUsage("unexpected lane hello (rank " + std::to_string(hello.rank) + ", socket " +
                        std::to_string(hello.index) + ")");
  }
  if (peers_[hello.rank].dead) {
    return remoteError(peerNames_[hello.rank] + " connected after its failure");
  }
  // The connecting side counts the connection as made only once it reads this.
  const uint8_t admitted = kLaneAdmitted;
  if (send(arrival.socket.fd(), &admitted, 1, MSG_NOSIGNAL | MSG_DONTWAIT) != 1) {
    return remoteError(std::string("could not acknowledge the lane: ") + std::strerror(errno));
  }
  Lane* lane = peers_[hello.rank].recvLanes[hello.index].get();
  lane->attach(arrival.socket.release());
  WEFT_TRY(watch(lane));
  ++lanesConnected_;
  // Bytes that came with the hello, or a notice, are read by the next progress.
  activate(lane);
  return Status::ok();
}

Status TcpTransport::watch(Lane* lane) {
  epoll_event event{};
  event.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
  event.data.ptr = lane;
  if (epoll_ctl(epollFd_, EPOLL_CTL_ADD, lane->fd(), &event) != 0) {
    return systemError("tcp: epoll_ctl", errno);
  }
  return Status::ok();
}

Status TcpTransport::serveArrivals() {
  arrivalsReady_ = false;
  Status served = arrivals_ ? arrivals_->step() : Status::ok();
  size_t kept = 0;
  for (Lane* lane : awaited_) {
    if (!lane->hasSocket() && !lane->idle()) {
      awaited_[kept++] = lane;
    } else {
      lane->awaited = false;
    }
  }
  awaited_.resize(kept);
  return served.withContext("tcp: accepting connections");
}

Status TcpTransport::connectEveryPeer(const std::vector<int>& peers, const Deadline& deadline) {
  size_t lanes = 0;
  for (int peer : peers) {
    Status dialed = dial(peer);
    if (!dialed.isOk()) {
      return dialed.withContext("tcp: connecting to " + peerNames_[peer] + " at " +
                                addresses_[peer].toString());
    }
    lanes += 2 * peers_[peer].sendLanes.size();
  }
  while (lanesConnected_ < lanes) {
    WEFT_TRY(progress(true));
    if (lanesConnected_ == lanes) break;
    if (deadline.expired()) return timeoutError(describeUnconnected());
    pollfd ready{epollFd_, POLLIN, 0};
    poll(&ready, 1, deadline.remainingMs(50) + 1);
  }
  return Status::ok();
}

std::string TcpTransport::describeUnconnected() const {
  std::string missing;
  for (size_t peer = 0; peer < peers_.size(); ++peer) {
    const PeerLinks& links = peers_[peer];
    for (size_t index = 0; index < links.sendLanes.size(); ++index) {
      const Lane& out = *links.sendLanes[index];
      const Lane& in = *links.recvLanes[index];
      if (!out.ready()) {
        missing += "; to " + peerNames_[peer] + " (socket " + std::to_string(index) +
                   ", still in " + out.dialProgress() + ")";
      }
      if (!in.hasSocket()) {
        missing += "; from " + peerNames_[peer] + " (socket " + std::to_string(index) + ")";
      }
    }
  }
  return "tcp: connections not made before the deadline (WEFT_RUNTIME_CONNECT=0)" + missing;
}

}  // namespace weft::tcp
