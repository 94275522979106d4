#include "transports/wiring.h"

#include "base/log.h"
#ifdef WEFT_HAVE_RDMA
#include "transports/rdma/rdma_transport.h"
#include "transports/rdma/rdma_wire.h"
#endif
#include "transports/shm/shm_transport.h"
#include "transports/tcp/tcp_transport.h"

namespace weft {
namespace {

std::vector<std::string> publishedAddresses(const std::vector<PeerInfo>& peers,
                                            std::string PeerInfo::*address) {
  std::vector<std::string> addresses;
  for (const PeerInfo& peer : peers) addresses.push_back(peer.*address);
  return addresses;
}

#ifdef WEFT_HAVE_RDMA
rdma::RdmaOptions rdmaOptions(const TransportOptions& options) {
  rdma::RdmaOptions rdma;
  rdma.device.hcaFilter = options.ibHca;
  rdma.device.gidIndex = options.ibGidIndex;
  rdma.slots = options.rdmaSlots;
  rdma.slotBytes = options.rdmaSlotBytes;
  rdma.zeroCopyMinBytes = options.rdmaZeroCopyMinBytes;
  rdma.registrationCacheBytes = options.rdmaRegistrationCacheBytes;
  return rdma;
}
#endif

}  // namespace

Status TransportWiring::listen(const TransportOptions& options, PeerInfo* self,
                               std::unique_ptr<TransportWiring>* out) {
  // Both transports become reachable before the layout is known; the one without peers closes.
  std::unique_ptr<TransportWiring> wiring(new TransportWiring(options));
  wiring->tcp_ =
      tcp::createTcpTransport(tcp::TcpOptions{options.socketsPerPeer, options.connectAtInit});
  WEFT_TRY(wiring->tcp_->listen(&self->tcpAddress));
  if (options.forced.empty() || options.forced == "shm") {
    wiring->shm_ = shm::createShmTransport(
        shm::ShmOptions{options.shmWindowBytes, options.shmCrossMemoryMinBytes});
    WEFT_TRY(wiring->shm_->listen(&self->shmAddress));
  }
  *out = std::move(wiring);
  return Status::ok();
}

TransportWiring::~TransportWiring() {
  // Transports that connect() did not hand on (it failed first) close without a goodbye.
  if (tcp_) tcp_->close(false);
  if (shm_) shm_->close(false);
}

Status TransportWiring::connect(const WiringContext& context, const std::vector<PeerInfo>& peers) {
  for (const PeerInfo& peer : peers) names_.push_back(peer.describe());
  // shm between ranks with the same host identity, the network (rdma or tcp) otherwise;
  // forced tcp or rdma puts every peer on that network transport, forced shm requires one host.
  const uint64_t myHost = peers[context.rank].hostId;
  const std::string& forced = options_.forced;
  std::vector<int> shmPeers, netPeers;
  for (const PeerInfo& peer : peers) {
    if (peer.rank == context.rank) continue;
    const bool local = peer.hostId == myHost;
    if (forced == "shm" && !local) {
      return invalidUsage("WEFT_TRANSPORT=shm, but " + peer.describe() +
                          " is on another host (host identities differ)");
    }
    (local && (forced.empty() || forced == "shm") ? shmPeers : netPeers).push_back(peer.rank);
  }
  if (shm_) {
    WEFT_TRY(connectOne(context, std::move(shm_), shmPeers,
                        publishedAddresses(peers, &PeerInfo::shmAddress)));
  }
  WEFT_TRY(connectNetwork(context, netPeers, publishedAddresses(peers, &PeerInfo::tcpAddress)));
  localRanks_ = static_cast<int>(shmPeers.size()) + 1;
  return Status::ok();
}

Status TransportWiring::connectOne(const WiringContext& context,
                                   std::unique_ptr<Transport> transport,
                                   const std::vector<int>& served,
                                   std::vector<std::string> addresses) {
  if (served.empty()) {
    transport->close(false);
    return Status::ok();
  }
  ConnectContext connect;
  connect.rank = context.rank;
  connect.nranks = static_cast<int>(names_.size());
  connect.peerNames = names_;
  connect.secret = context.secret;
  connect.commId = context.commId;
  connect.deadline = context.deadline;
  connect.addresses = std::move(addresses);
  Status connected = transport->connect(connect, served);
  if (!connected.isOk()) {
    transport->close(false);
    return connected;
  }
  return context.attach(std::move(transport), served);
}

// The peers of other hosts (all peers when a network transport is forced) go over rdma where it
// can serve, else tcp.
Status TransportWiring::connectNetwork(const WiringContext& context,
                                       const std::vector<int>& netPeers,
                                       std::vector<std::string> tcpAddresses) {
#ifdef WEFT_HAVE_RDMA
  const std::string& forced = options_.forced;
  if (forced == "rdma" || (forced.empty() && !netPeers.empty())) {
    WEFT_TRY(setUpRdma(context, netPeers));
  }
#endif
  if (rdmaUsed_) {
    tcp_->close(false);
    tcp_.reset();
    return Status::ok();
  }
  return connectOne(context, std::move(tcp_), netPeers, std::move(tcpAddresses));
}

#ifdef WEFT_HAVE_RDMA
// RDMA is probed only where it could serve (peers on other hosts, or a forced rdma), so
// single-host communicators never load libibverbs. Every rank then shares its side address
// (empty when it has no usable port) and rdma carries the network peers only if every rank
// has one: a partial choice would leave pairs that speak different transports.
Status TransportWiring::setUpRdma(const WiringContext& context, const std::vector<int>& netPeers) {
  const bool forced = options_.forced == "rdma";
  const size_t nranks = names_.size();
  auto transport = rdma::createRdmaTransport(rdmaOptions(options_));
  std::string mine;
  Status listened = transport->listen(&mine);
  if (!listened.isOk()) mine.assign(rdma::kAddressBytes, '\0');
  std::string all(rdma::kAddressBytes * nranks, '\0');
  Status shared = context.allgather(mine.data(), rdma::kAddressBytes, all.data());
  if (!shared.isOk()) {
    transport->close(false);
    return shared.withContext("sharing rdma addresses");
  }
  std::vector<std::string> addresses;
  std::string why =
      listened.isOk() ? "" : "RDMA is unavailable on this rank: " + listened.message();
  for (size_t r = 0; r < nranks; ++r) {
    addresses.push_back(all.substr(r * rdma::kAddressBytes, rdma::kAddressBytes));
    if (why.empty() && addresses.back()[0] == '\0') {
      why = names_[r] + " has no usable RDMA port";
    }
  }
  if (!why.empty()) {
    transport->close(false);
    if (forced) return invalidUsage("WEFT_TRANSPORT=rdma, but " + why);
    WEFT_INFO("net: %s; using tcp", why.c_str());
    return Status::ok();
  }
  WEFT_TRY(connectOne(context, std::move(transport), netPeers, std::move(addresses)));
  rdmaUsed_ = true;
  return Status::ok();
}
#else
Status TransportWiring::setUpRdma(const WiringContext&, const std::vector<int>&) {
  return Status::ok();
}
#endif

}  // namespace weft
