// Communicator creation and release.
#include "core/comm.h"

#include <sched.h>
#include <unistd.h>

#include <cstdio>
#include <set>

#include "algos/algo_context.h"
#include "base/log.h"
#include "cuda/gpu_state.h"
#include "topo/host_id.h"
#include "topo/machine.h"
#include "topo/process_state.h"
#ifdef WEFT_HAVE_RDMA
#include "transports/rdma/rdma_transport.h"
#include "transports/rdma/rdma_wire.h"
#endif
#include "transports/shm/shm_transport.h"
#include "transports/tcp/tcp_transport.h"
#include "tune/calibrate.h"

namespace weft {
namespace {

// Polling before sleeping saves the wake-up latency (an eventfd wake costs ~10 us here, more
// than a small all-reduce). When ranks outnumber cores a plain poll would burn the time slice
// the awaited peer needs, so there each poll yields the core first: the peer runs at once, and
// the wait still ends in a sleep after the budget (4 ranks on 2 cores: 8-byte all-reduce
// 17 us sleeping at once, 4.5 us yielding; see docs/PERFORMANCE.md).
void choosePolling(weftComm& comm) {
  // Ranks that share this machine's CPUs: same kernel, whatever their host names say.
  int local = 0;
  for (const PeerInfo& peer : comm.peers)
    local += peer.machineId == comm.peers[comm.rank].machineId;
  int64_t micros = comm.config.spinMicros >= 0 ? comm.config.spinMicros : 50;
  comm.fabric->setPolling(micros, local > topo::thisMachine().hardwareThreads);
}

Status exchangeDescriptions(weftComm* comm, PeerInfo self, const bootstrap::UniqueIdContents& id,
                            Deadline deadline) {
  WEFT_TRY(bootstrap::Bootstrap::create(id, comm->rank, comm->nranks, encodePeerInfo(self),
                                        deadline, &comm->bootstrap));
  const auto& descriptions = comm->bootstrap->descriptions();
  comm->peers.resize(comm->nranks);
  std::set<uint64_t> hosts;
  for (int r = 0; r < comm->nranks; ++r) {
    WEFT_TRY(decodePeerInfo(descriptions[r], &comm->peers[r])
                 .withContext("description of rank " + std::to_string(r)));
    if (comm->peers[r].rank != r) return invalidUsage("rank table is inconsistent");
    hosts.insert(comm->peers[r].hostId);
  }
  comm->nodes = static_cast<int>(hosts.size());
  return Status::ok();
}

// Which transport serves which peers: shm between ranks with the same host identity, the
// network (rdma or tcp) otherwise; WEFT_TRANSPORT=tcp or rdma puts every peer on that network
// transport, WEFT_TRANSPORT=shm requires one host.
Status routePeers(const weftComm& comm, std::vector<int>* shmPeers, std::vector<int>* netPeers) {
  const uint64_t myHost = comm.peers[comm.rank].hostId;
  const std::string& forced = comm.config.transport;
  for (const PeerInfo& peer : comm.peers) {
    if (peer.rank == comm.rank) continue;
    bool local = peer.hostId == myHost;
    if (forced == "shm" && !local) {
      return invalidUsage("WEFT_TRANSPORT=shm, but " + peer.describe() +
                          " is on another host (host identities differ)");
    }
    (local && (forced.empty() || forced == "shm") ? shmPeers : netPeers)->push_back(peer.rank);
  }
  return Status::ok();
}

Status connectTransport(weftComm* comm, std::unique_ptr<Transport> transport,
                        const std::vector<int>& peers, const std::vector<std::string>& names,
                        std::vector<std::string> addresses, Deadline deadline) {
  if (peers.empty()) {
    transport->close(false);
    return Status::ok();
  }
  ConnectContext context;
  context.rank = comm->rank;
  context.nranks = comm->nranks;
  context.peerNames = names;
  context.secret = comm->bootstrap->secret();
  context.commId = comm->bootstrap->commId();
  context.deadline = deadline;
  context.addresses = std::move(addresses);
  WEFT_TRY(transport->connect(context, peers));
  return comm->fabric->attach(std::move(transport), peers);
}

std::vector<std::string> publishedAddresses(const weftComm& comm, std::string PeerInfo::*address) {
  std::vector<std::string> addresses;
  for (const PeerInfo& peer : comm.peers) addresses.push_back(peer.*address);
  return addresses;
}

#ifdef WEFT_HAVE_RDMA
rdma::RdmaOptions rdmaOptions(const CommConfig& config) {
  rdma::RdmaOptions options;
  options.device.hcaFilter = config.ibHca;
  options.device.gidIndex = config.ibGidIndex;
  options.slots = config.rdmaSlots;
  options.slotBytes = config.rdmaSlotBytes;
  options.zeroCopyMinBytes = config.rdmaZeroCopyMinBytes;
  options.registrationCacheBytes = config.rdmaRegistrationCacheBytes;
  return options;
}

// RDMA is probed only where it could serve (peers on other hosts, or WEFT_TRANSPORT=rdma), so
// single-host communicators never load libibverbs. Every rank then shares its side address
// (empty when it has no usable port) and rdma carries the network peers only if every rank
// has one: a partial choice would leave pairs that speak different transports.
Status setUpRdma(weftComm* comm, const std::vector<int>& netPeers,
                 const std::vector<std::string>& names, Deadline deadline, bool* used) {
  *used = false;
  const bool forced = comm->config.transport == "rdma";
  auto transport = rdma::createRdmaTransport(rdmaOptions(comm->config));
  std::string mine;
  Status listened = transport->listen(&mine);
  if (!listened.isOk()) mine.assign(rdma::kAddressBytes, '\0');
  std::string all(rdma::kAddressBytes * comm->nranks, '\0');
  WEFT_TRY(comm->bootstrap->allgather(mine.data(), rdma::kAddressBytes, all.data(), deadline)
               .withContext("sharing rdma addresses"));
  std::vector<std::string> addresses;
  std::string why =
      listened.isOk() ? "" : "RDMA is unavailable on this rank: " + listened.message();
  for (int r = 0; r < comm->nranks; ++r) {
    addresses.push_back(all.substr(r * rdma::kAddressBytes, rdma::kAddressBytes));
    if (why.empty() && addresses.back()[0] == '\0') {
      why = comm->peers[r].describe() + " has no usable RDMA port";
    }
  }
  if (!why.empty()) {
    transport->close(false);
    if (forced) return invalidUsage("WEFT_TRANSPORT=rdma, but " + why);
    WEFT_INFO("net: %s; using tcp", why.c_str());
    return Status::ok();
  }
  WEFT_TRY(connectTransport(comm, std::move(transport), netPeers, names, std::move(addresses),
                            deadline));
  *used = true;
  return Status::ok();
}
#endif

// Connects the peers of other hosts (all peers when a network transport is forced) over rdma
// where it can, else tcp.
Status connectNetwork(weftComm* comm, std::unique_ptr<Transport> tcp,
                      const std::vector<int>& netPeers, const std::vector<std::string>& names,
                      Deadline deadline) {
  bool rdmaUsed = false;
#ifdef WEFT_HAVE_RDMA
  const std::string& forced = comm->config.transport;
  if (forced == "rdma" || (forced.empty() && !netPeers.empty())) {
    WEFT_TRY(setUpRdma(comm, netPeers, names, deadline, &rdmaUsed));
  }
#endif
  comm->networkTransport = rdmaUsed ? "rdma" : "tcp";
  if (rdmaUsed) {
    tcp->close(false);
    if (!comm->config.rdmaNetCostSet) comm->config.costs.net = comm->config.costs.rdma;
    return Status::ok();
  }
  return connectTransport(comm, std::move(tcp), netPeers, names,
                          publishedAddresses(*comm, &PeerInfo::tcpAddress), deadline);
}

}  // namespace

Status createComm(int nranks, const bootstrap::UniqueIdContents& id, int rank,
                  const CommConfig& config, weftComm** out) {
  auto comm = std::make_unique<weftComm>();
  comm->rank = rank;
  comm->nranks = nranks;
  comm->config = config;
  Deadline deadline = Deadline::after(config.timeoutMs);

  PeerInfo self;
  self.rank = rank;
  self.hostId = topo::hostIdentity(config.hostId);
  self.machineId = topo::machineIdentity();
  self.cores = topo::thisMachine().hardwareThreads;
  self.pid = static_cast<int32_t>(getpid());
  self.startTicks = topo::selfStartTicks();
  self.hostName = topo::hostName();
  // Both transports become reachable before the layout is known; the one without peers closes.
  std::unique_ptr<Transport> tcp;
  std::unique_ptr<Transport> shm;
  if (nranks > 1) {
    tcp = tcp::createTcpTransport(tcp::TcpOptions{config.socketsPerPeer});
    WEFT_TRY(tcp->listen(&self.tcpAddress));
    if (config.transport.empty() || config.transport == "shm") {
      shm = shm::createShmTransport(
          shm::ShmOptions{config.shmWindowBytes, config.shmCrossMemoryMinBytes});
      WEFT_TRY(shm->listen(&self.shmAddress));
    }
  }
  WEFT_TRY(exchangeDescriptions(comm.get(), self, id, deadline));

  std::vector<std::string> names;
  for (const PeerInfo& peer : comm->peers) names.push_back(peer.describe());
  comm->fabric = std::make_unique<Fabric>(rank, nranks, names);
  WEFT_TRY(comm->fabric->init());
  comm->fabric->setTimeoutMs(config.timeoutMs);
  std::vector<Fabric::LocalProcess> local;
  for (const PeerInfo& peer : comm->peers) {
    // Ranks that are threads of this process run when this one does.
    if (peer.machineId == self.machineId && peer.pid != self.pid) {
      local.push_back({peer.rank, peer.pid, peer.startTicks});
    }
  }
  comm->fabric->setLocalProcesses(std::move(local));
  choosePolling(*comm);
  if (nranks > 1) {
    std::vector<int> shmPeers, netPeers;
    WEFT_TRY(routePeers(*comm, &shmPeers, &netPeers));
    if (shm) {
      WEFT_TRY(connectTransport(comm.get(), std::move(shm), shmPeers, names,
                                publishedAddresses(*comm, &PeerInfo::shmAddress), deadline));
    }
    WEFT_TRY(connectNetwork(comm.get(), std::move(tcp), netPeers, names, deadline));
    comm->localRanks = static_cast<int>(shmPeers.size()) + 1;
  }
  comm->layout.nranks = nranks;
  std::vector<uint64_t> hostIds;
  for (const PeerInfo& peer : comm->peers) hostIds.push_back(peer.hostId);
  comm->layout.nodes = topo::buildNodeLayout(hostIds);
  comm->layout.cost = tune::buildCostLayout(comm->layout.nodes,
                                            config.transport.empty() || config.transport == "shm");
  std::vector<uint64_t> machineIds;
  std::vector<int> cores;
  for (const PeerInfo& peer : comm->peers) {
    machineIds.push_back(peer.machineId);
    cores.push_back(peer.cores);
  }
  tune::setCpuSharing(comm->layout.nodes, machineIds, cores, &comm->layout.cost);
  comm->layout.params = comm->config.costs;  // connectNetwork() chose the network's link
  if (SharedWindows* windows = comm->fabric->windows()) {
    comm->layout.oneHostShm = windows->localSize() == nranks;
    comm->layout.windowAreaBytes = windows->windowBytes() / 2;
  }
  WEFT_TRY(checkOverrides(config.algos, comm->layout));

  comm->resources = std::make_unique<OpResources>(nranks);
  Fabric* fabric = comm->fabric.get();
  comm->resources->onScratchFreed(
      [fabric](const void* buf, size_t bytes) { fabric->memoryFreed(buf, bytes); });
  if (config.calibrate > 0 && nranks > 1) {
    const auto& nodes = comm->layout.nodes;
    char key[40];
    std::snprintf(key, sizeof(key), "%016llx-%016llx",
                  static_cast<unsigned long long>(comm->peers[0].hostId),
                  static_cast<unsigned long long>(
                      comm->peers[nodes.nodes() > 1 ? nodes.leaderOf(1) : 0].hostId));
    tune::CalibrationSetup setup{rank, nranks, config.calibrate == 2, key};
    WEFT_TRY(
        tune::calibrateLinks(*comm->fabric, *comm->resources, nodes, setup, &comm->layout.params));
    // The calibration's long waits shrank the adaptive polling budget; the first collectives
    // should not inherit it.
    choosePolling(*comm);
    comm->fabric->operationDone();
  }
  comm->p2pSent.assign(nranks, 0);
  comm->p2pReceived.assign(nranks, 0);
  weftComm* raw = comm.get();
  comm->executor = std::make_shared<Executor>([raw](const Op& op) { return executeOp(raw, op); });
  comm->executor->start();
  if (rank == 0) {
    WEFT_INFO("host %s: %s", self.hostName.c_str(), topo::thisMachine().summary().c_str());
    WEFT_INFO("comm %s: %s; %s, timeout %lld s",
              config.commName.empty() ? "-" : config.commName.c_str(),
              comm->layout.nodes.summary().c_str(),
              config.transport.empty()
                  ? ("shm within hosts, " + comm->networkTransport + " between them").c_str()
                  : ("transport " + config.transport).c_str(),
              static_cast<long long>(config.timeoutMs / 1000));
  }
  *out = comm.release();
  return Status::ok();
}

void markFailed(weftComm* comm, const Status& why) {
  std::lock_guard<std::mutex> lock(comm->failureMutex);
  if (!comm->failed.load()) {
    comm->failure = why;
    comm->failed.store(true);
  }
}

Status commFailure(weftComm* comm) {
  std::lock_guard<std::mutex> lock(comm->failureMutex);
  return Status(comm->failure.code(),
                "the communicator failed earlier: " + comm->failure.message());
}

void releaseComm(weftComm* comm, bool graceful) {
  if (comm->executor) {
    if (graceful) comm->executor->drain();
    comm->executor->stop();
  }
  if (comm->fabric) comm->fabric->close(graceful && !comm->failed.load());
  if (comm->bootstrap) comm->bootstrap->close();
  delete comm;
}

}  // namespace weft
