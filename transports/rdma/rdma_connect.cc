// Set-up of the rdma transport. listen() finds the device (or fails, saying why, so that the
// communicator falls back to tcp) and opens the side listener. connect() creates the protection
// domain, one completion queue with its completion channel, and per peer a queue pair and two
// registered areas; it opens the side connections (the higher rank of each pair connects and
// authenticates), sends every peer its ConnectionDetails, brings each queue pair up with the
// peer's, and ends with a ready byte each way, so no write reaches a queue pair that is not yet
// ready to receive it.
#include <fcntl.h>
#include <sys/epoll.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "base/log.h"
#include "net/acceptor.h"
#include "net/address.h"
#include "net/auth.h"
#include "transports/rdma/rdma_internal.h"

namespace weft::rdma {
namespace {

// Clear-to-send entries per direction: zero-copy receives announced ahead of their sends.
constexpr uint32_t kCtsEntries = 16;
constexpr uint32_t kSendDepth = 128;
constexpr uint32_t kWantedInline = 128;
// A stray or slow side connection is dropped after this long; others are served meanwhile.
constexpr int kHandshakeMs = 5000;
constexpr char kReady = 'R';

constexpr int kRemoteAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;

struct SideHello {
  uint32_t rank;
};

size_t areaBytes(uint32_t slots, uint32_t slotBytes) {
  return size_t{slots} * slotBytes + size_t{kCtsEntries} * sizeof(CtsEntry);
}

Status randomPsn(uint32_t* psn) {
  WEFT_TRY(net::randomBytes(psn, sizeof(*psn)));
  *psn &= (1u << 24) - 1;
  return Status::ok();
}

}  // namespace

RdmaTransport::RdmaTransport(const RdmaOptions& options) : options_(options) {}

RdmaTransport::~RdmaTransport() {
  close(false);
}

std::unique_ptr<Transport> createRdmaTransport(const RdmaOptions& options) {
  return std::make_unique<RdmaTransport>(options);
}

Status RdmaTransport::listen(std::string* address) {
  WEFT_TRY(openRdmaDevice(options_.device, &device_));
  net::Interface interface;
  WEFT_TRY(net::chooseLocalInterface(&interface));
  net::SocketAddress bound;
  WEFT_TRY(net::listenOn(interface.address, SOMAXCONN, &listener_, &bound));
  epollFd_ = epoll_create1(EPOLL_CLOEXEC);
  if (epollFd_ < 0) return systemError("epoll_create1", errno);
  address->assign(kAddressBytes, '\0');
  (*address)[0] = static_cast<char>(kWireVersion);
  bound.encode(reinterpret_cast<uint8_t*>(address->data() + 1));
  WEFT_INFO("rdma: %s; side connections on %s", device_->describe().c_str(),
            bound.toString().c_str());
  return Status::ok();
}

Status RdmaTransport::connect(const ConnectContext& context, const std::vector<int>& peers) {
  rank_ = context.rank;
  peerNames_ = context.peerNames;
  peers_.resize(context.nranks);
  for (int rank : peers) {
    const std::string& address = context.addresses[rank];
    if (address.size() != kAddressBytes || address[0] != static_cast<char>(kWireVersion)) {
      return invalidUsage(peerNames_[rank] + " published no rdma address (transport mismatch)");
    }
    peers_[rank] = std::make_unique<Peer>();
    peers_[rank]->rank = rank;
  }
  WEFT_TRY(createQueues(peers.size()));
  const size_t bytes = areaBytes(options_.slots, options_.slotBytes);
  for (int rank : peers) {
    Peer& peer = *peers_[rank];
    WEFT_TRY(allocateArea(bytes, kRemoteAccess, &peer.region));
    WEFT_TRY(allocateArea(bytes, IBV_ACCESS_LOCAL_WRITE, &peer.staging));
    WEFT_TRY(createQp(peer));
  }
  WEFT_TRY(openSideLinks(context, peers));
  for (int rank : peers) {
    uint8_t wire[kDetailsBytes];
    encodeDetails(localDetails(*peers_[rank]), wire);
    WEFT_TRY(net::sendAll(peers_[rank]->side.fd(), wire, sizeof(wire), context.deadline)
                 .withContext("rdma: sending connection details to " + peerNames_[rank]));
  }
  for (int rank : peers) {
    Peer& peer = *peers_[rank];
    uint8_t wire[kDetailsBytes];
    const std::string from = "rdma: connection details from " + peerNames_[rank];
    WEFT_TRY(net::recvAll(peer.side.fd(), wire, sizeof(wire), context.deadline).withContext(from));
    WEFT_TRY(decodeDetails(wire, sizeof(wire), &peer.remote).withContext(from));
    if (peer.remote.slots != options_.slots || peer.remote.slotBytes != options_.slotBytes ||
        peer.remote.ctsEntries != kCtsEntries) {
      return invalidUsage(from + ": it stages " + std::to_string(peer.remote.slots) + " x " +
                          std::to_string(peer.remote.slotBytes) + " bytes, this rank " +
                          std::to_string(options_.slots) + " x " +
                          std::to_string(options_.slotBytes) +
                          " (set WEFT_RDMA_SLOTS and WEFT_RDMA_SLOT_BYTES alike everywhere)");
    }
    if ((peer.remote.ethernet != 0) != device_->ethernet) {
      return invalidUsage(from + ": one end is on Ethernet (RoCE), the other on InfiniBand");
    }
    WEFT_TRY(bringUp(peer).withContext("rdma: connecting the queue pair with " + peerNames_[rank]));
  }
  for (int rank : peers) {
    WEFT_TRY(net::sendAll(peers_[rank]->side.fd(), &kReady, 1, context.deadline));
  }
  for (int rank : peers) {
    char ready = 0;
    WEFT_TRY(net::recvAll(peers_[rank]->side.fd(), &ready, 1, context.deadline)
                 .withContext("rdma: waiting for " + peerNames_[rank] + " to be ready"));
    if (ready != kReady) return remoteError(peerNames_[rank] + " sent a bad ready byte");
    epoll_event event{};
    event.events = EPOLLIN | EPOLLRDHUP;
    event.data.u64 = static_cast<uint64_t>(rank);
    if (epoll_ctl(epollFd_, EPOLL_CTL_ADD, peers_[rank]->side.fd(), &event) != 0) {
      return systemError("epoll_ctl", errno);
    }
  }
  listener_.close();
  return Status::ok();
}

Status RdmaTransport::createQueues(size_t peers) {
  const IbvLibrary& lib = *device_->lib;
  const ibv_device_attr& attr = device_->attr;
  pd_ = lib.allocPd(device_->context);
  if (pd_ == nullptr) return systemError("rdma: ibv_alloc_pd on " + device_->name, errno);
  channel_ = lib.createCompChannel(device_->context);
  if (channel_ == nullptr) return systemError("rdma: ibv_create_comp_channel", errno);
  int flags = fcntl(channel_->fd, F_GETFL);
  if (flags < 0 || fcntl(channel_->fd, F_SETFL, flags | O_NONBLOCK) != 0) {
    return systemError("rdma: making the completion channel non-blocking", errno);
  }
  // Every write with immediate a peer may have in flight needs a posted receive: its eager
  // slots, the credit messages for this rank's slots, and a clear-to-send entry and a
  // completion per zero-copy message (rdma_wire.h).
  sendDepth_ = std::min<uint32_t>(kSendDepth, static_cast<uint32_t>(attr.max_qp_wr));
  recvDepth_ = 2 * options_.slots + 2 * kCtsEntries + 8;
  if (recvDepth_ > static_cast<uint32_t>(attr.max_qp_wr)) {
    return invalidUsage("rdma: " + device_->name + " takes " + std::to_string(attr.max_qp_wr) +
                        " work requests per queue, WEFT_RDMA_SLOTS=" +
                        std::to_string(options_.slots) + " needs " + std::to_string(recvDepth_));
  }
  cqDepth_ = static_cast<int>(peers * (sendDepth_ + recvDepth_));
  if (cqDepth_ > attr.max_cqe) {
    return invalidUsage("rdma: " + std::to_string(peers) + " peers need a completion queue of " +
                        std::to_string(cqDepth_) + " entries; " + device_->name + " allows " +
                        std::to_string(attr.max_cqe));
  }
  cq_ = lib.createCq(device_->context, cqDepth_, this, channel_, 0);
  if (cq_ == nullptr) return systemError("rdma: ibv_create_cq", errno);
  epoll_event event{};
  event.events = EPOLLIN;
  event.data.u64 = ~0ull;
  if (epoll_ctl(epollFd_, EPOLL_CTL_ADD, channel_->fd, &event) != 0) {
    return systemError("epoll_ctl", errno);
  }
  registrations_ = std::make_unique<MrCache>(
      [this](uintptr_t start, size_t bytes, Registration* out) {
        return registerUserMemory(start, bytes, out);
      },
      [this](const Registration& registration) {
        device_->lib->deregMr(static_cast<ibv_mr*>(registration.handle));
      },
      options_.registrationCacheBytes, 64);
  return Status::ok();
}

Status RdmaTransport::registerUserMemory(uintptr_t start, size_t bytes, Registration* out) {
  auto* addr = reinterpret_cast<void*>(start);
  ibv_mr* mr = device_->lib->regMr(pd_, addr, bytes, kRemoteAccess);
  // Read-only memory (a constant send buffer) cannot be registered for writing.
  if (mr == nullptr && (errno == EFAULT || errno == EACCES || errno == EPERM)) {
    mr = device_->lib->regMr(pd_, addr, bytes, 0);
  }
  if (mr == nullptr) {
    return systemError("rdma: registering " + std::to_string(bytes) + " bytes of user memory",
                       errno);
  }
  *out = Registration{start, start + bytes, mr->lkey, mr->rkey, mr};
  return Status::ok();
}

Status RdmaTransport::allocateArea(size_t bytes, int access, RegisteredArea* out) {
  const size_t rounded = (bytes + 4095) & ~size_t{4095};
  out->base = static_cast<char*>(std::aligned_alloc(4096, rounded));
  if (out->base == nullptr) return systemError("rdma: allocating staging memory", ENOMEM);
  std::memset(out->base, 0, rounded);
  out->bytes = rounded;
  out->mr = device_->lib->regMr(pd_, out->base, rounded, access);
  if (out->mr == nullptr) {
    return systemError("rdma: registering " + std::to_string(rounded) + " bytes of staging memory",
                       errno);
  }
  return Status::ok();
}

void RdmaTransport::freeArea(RegisteredArea* area) {
  if (area->mr != nullptr) device_->lib->deregMr(area->mr);
  std::free(area->base);
  *area = RegisteredArea{};
}

Status RdmaTransport::createQp(Peer& peer) {
  ibv_qp_init_attr attr{};
  attr.send_cq = cq_;
  attr.recv_cq = cq_;
  attr.qp_type = IBV_QPT_RC;
  attr.cap.max_send_wr = sendDepth_;
  attr.cap.max_recv_wr = recvDepth_;
  attr.cap.max_send_sge = 1;
  attr.cap.max_recv_sge = 1;
  attr.cap.max_inline_data = kWantedInline;
  peer.qp = device_->lib->createQp(pd_, &attr);
  if (peer.qp == nullptr) {
    // Some devices take no inline data; staged writes work without it.
    attr.cap.max_inline_data = 0;
    peer.qp = device_->lib->createQp(pd_, &attr);
  }
  if (peer.qp == nullptr) {
    return systemError("rdma: ibv_create_qp for " + peerNames_[peer.rank], errno);
  }
  maxInline_ = std::min(maxInline_, attr.cap.max_inline_data);
  WEFT_TRY(randomPsn(&peer.psn));
  peer.credits = SlotCredits(options_.slots);
  peer.arrivals = SlotArrivals(options_.slots);
  peer.window = SendWindow(sendDepth_);
  return Status::ok();
}

ConnectionDetails RdmaTransport::localDetails(const Peer& peer) const {
  ConnectionDetails details;
  details.qpn = peer.qp->qp_num;
  details.psn = peer.psn;
  details.gid = device_->gid.gid;
  details.lid = device_->lid;
  details.mtu = device_->activeMtu;
  details.ethernet = device_->ethernet ? 1 : 0;
  details.regionAddress = reinterpret_cast<uintptr_t>(peer.region.base);
  details.regionKey = peer.region.mr->rkey;
  details.slots = options_.slots;
  details.slotBytes = options_.slotBytes;
  details.ctsEntries = kCtsEntries;
  return details;
}

Status RdmaTransport::bringUp(Peer& peer) {
  const IbvLibrary& lib = *device_->lib;
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_INIT;
  attr.pkey_index = 0;
  attr.port_num = static_cast<uint8_t>(device_->port);
  attr.qp_access_flags = kRemoteAccess;
  int rc = lib.modifyQp(peer.qp, &attr,
                        IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
  if (rc != 0) return systemError("ibv_modify_qp to INIT", rc);
  WEFT_TRY(postReceives(peer, recvDepth_));

  attr = ibv_qp_attr{};
  attr.qp_state = IBV_QPS_RTR;
  attr.path_mtu = static_cast<ibv_mtu>(commonMtu(device_->activeMtu, peer.remote.mtu));
  attr.dest_qp_num = peer.remote.qpn;
  attr.rq_psn = peer.remote.psn;
  attr.max_dest_rd_atomic = 1;
  attr.min_rnr_timer = 12;
  attr.ah_attr.port_num = static_cast<uint8_t>(device_->port);
  if (device_->ethernet) {
    attr.ah_attr.is_global = 1;
    std::memcpy(attr.ah_attr.grh.dgid.raw, peer.remote.gid.data(), 16);
    attr.ah_attr.grh.sgid_index = static_cast<uint8_t>(device_->gid.index);
    attr.ah_attr.grh.hop_limit = 64;
  } else {
    attr.ah_attr.dlid = peer.remote.lid;
  }
  rc = lib.modifyQp(peer.qp, &attr,
                    IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                        IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
  if (rc != 0) return systemError("ibv_modify_qp to RTR", rc);

  attr = ibv_qp_attr{};
  attr.qp_state = IBV_QPS_RTS;
  attr.sq_psn = peer.psn;
  // 4.096 us * 2^14 = 67 ms per try, 7 tries: a silent peer fails its writes within half a
  // second (the side connection usually tells sooner).
  attr.timeout = 14;
  attr.retry_cnt = 7;
  attr.rnr_retry = 7;
  attr.max_rd_atomic = 1;
  rc = lib.modifyQp(peer.qp, &attr,
                    IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                        IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
  if (rc != 0) return systemError("ibv_modify_qp to RTS", rc);
  return Status::ok();
}

Status RdmaTransport::openSideLinks(const ConnectContext& context, const std::vector<int>& peers) {
  for (int rank : peers) {
    if (rank > context.rank) continue;
    net::SocketAddress address;
    WEFT_TRY(net::SocketAddress::decode(
        reinterpret_cast<const uint8_t*>(context.addresses[rank].data() + 1), &address));
    net::Socket socket;
    Status connected = net::connectTo(address, context.deadline, &socket);
    if (connected.isOk()) {
      connected = net::authenticateClient(socket.fd(), context.secret, net::Purpose::kRdmaSide,
                                          context.commId, context.deadline);
    }
    if (connected.isOk()) {
      SideHello hello{static_cast<uint32_t>(context.rank)};
      connected = net::sendAll(socket.fd(), &hello, sizeof(hello), context.deadline);
    }
    if (!connected.isOk()) {
      return connected.withContext("rdma: connecting to " + peerNames_[rank] + " at " +
                                   address.toString());
    }
    peers_[rank]->side = std::move(socket);
  }
  net::AcceptSpec spec;
  spec.secret = context.secret;
  spec.purpose = net::Purpose::kRdmaSide;
  spec.commId = context.commId;
  spec.helloBytes = sizeof(SideHello);
  spec.deadline = context.deadline;
  spec.perConnectionMs = kHandshakeMs;
  spec.logName = "rdma";
  for (int rank : peers) spec.expected += rank > context.rank;
  if (spec.expected == 0) return Status::ok();
  auto judge = [&](net::Arrival& arrival) {
    SideHello hello;
    std::memcpy(&hello, arrival.hello.data(), sizeof(hello));
    const int rank = static_cast<int>(hello.rank);
    if (std::find(peers.begin(), peers.end(), rank) == peers.end() || rank <= context.rank ||
        peers_[rank]->side.isOpen()) {
      return invalidUsage("unexpected side hello (rank " + std::to_string(hello.rank) + ")");
    }
    peers_[rank]->side = std::move(arrival.socket);
    return Status::ok();
  };
  auto describeMissing = [&] {
    std::string missing;
    for (int rank : peers) {
      if (rank > context.rank && !peers_[rank]->side.isOpen()) {
        missing += (missing.empty() ? "" : ", ") + peerNames_[rank];
      }
    }
    return "rdma: waiting for side connections from " + missing;
  };
  return net::acceptAuthenticated(listener_, spec, judge, describeMissing);
}

}  // namespace weft::rdma
