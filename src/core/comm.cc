// Communicator creation and release.
#include "core/comm.h"

#include <sched.h>
#include <unistd.h>

#include <cstdio>
#include <set>

#include "algos/algo_context.h"
#include "base/descriptor_limit.h"
#include "base/log.h"
#include "core/rank_binding.h"
#include "core/table_agreement.h"
#include "topo/host_id.h"
#include "topo/machine.h"
#include "topo/process_state.h"
#include "transports/wiring.h"
#include "tune/calibrate.h"
#include "tune/table_search.h"

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

// Routes and connects every peer (transports/wiring.h), attaching each transport to the fabric.
Status connectPeers(weftComm* comm, TransportWiring& wiring, Deadline deadline) {
  WiringContext context;
  context.rank = comm->rank;
  context.secret = comm->bootstrap->secret();
  context.commId = comm->bootstrap->commId();
  context.deadline = deadline;
  bootstrap::Bootstrap* ring = comm->bootstrap.get();
  context.allgather = [ring, deadline](const void* mine, size_t bytes, void* out) {
    return ring->allgather(mine, bytes, out, deadline);
  };
  Fabric* fabric = comm->fabric.get();
  context.attach = [fabric](std::unique_ptr<Transport> transport, const std::vector<int>& peers) {
    return fabric->attach(std::move(transport), peers);
  };
  WEFT_TRY(wiring.connect(context, comm->peers));
  comm->networkTransport = wiring.networkTransport();
  comm->localRanks = wiring.localRanks();
  // A network served by rdma gets rdma's link costs, unless WEFT_TUNE_NET described it.
  if (comm->networkTransport == "rdma" && !comm->config.rdmaNetCostSet) {
    comm->config.costs.net = comm->config.costs.rdma;
  }
  return Status::ok();
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
  std::unique_ptr<TransportWiring> wiring;
  if (nranks > 1) raiseDescriptorLimit();
  if (nranks > 1) WEFT_TRY(TransportWiring::listen(config.transports, &self, &wiring));
  WEFT_TRY(exchangeDescriptions(comm.get(), self, id, deadline));
  bindRank(config.bind, rank, comm->peers);

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
  if (wiring) WEFT_TRY(connectPeers(comm.get(), *wiring, deadline));
  comm->layout.nranks = nranks;
  std::vector<uint64_t> hostIds;
  for (const PeerInfo& peer : comm->peers) hostIds.push_back(peer.hostId);
  comm->layout.nodes = topo::buildNodeLayout(hostIds);
  comm->layout.cost = tune::buildCostLayout(
      comm->layout.nodes, config.transports.forced.empty() || config.transports.forced == "shm");
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
    comm->layout.cost.windowAreaBytes = static_cast<double>(comm->layout.windowAreaBytes);
  }
  WEFT_TRY(checkOverrides(config.algos, comm->layout));
  comm->tuneFingerprint = tune::layoutFingerprint(comm->layout.nodes, comm->layout.cost.intraShm,
                                                  comm->networkTransport);
  tune::TableSearch search;
  WEFT_TRY(tune::findTuningTable(config.tuneFile, comm->tuneFingerprint, &search));
  if (search.table) WEFT_TRY(checkTable(*search.table, comm->layout));
  comm->layout.table = search.table;

  comm->resources = std::make_unique<OpResources>(nranks);
  Fabric* fabric = comm->fabric.get();
  comm->resources->onScratchFreed(
      [fabric](const void* buf, size_t bytes) { fabric->memoryFreed(buf, bytes); });
  if (config.calibrate > 0 && nranks > 1) {
    const auto& nodes = comm->layout.nodes;
    // The hosts of every node's leader: a cache is for the links it measured.
    uint64_t otherHosts = 0;
    for (int node = 1; node < nodes.nodes(); ++node)
      otherHosts = otherHosts * 1099511628211ULL ^ comm->peers[nodes.leaderOf(node)].hostId;
    char key[40];
    std::snprintf(key, sizeof(key), "%016llx-%016llx",
                  static_cast<unsigned long long>(comm->peers[0].hostId),
                  static_cast<unsigned long long>(otherHosts));
    tune::CalibrationSetup setup{rank, nranks, config.calibrate == 2, key};
    WEFT_TRY(
        tune::calibrateLinks(*comm->fabric, *comm->resources, nodes, setup, &comm->layout.params));
    // The calibration's long waits shrank the adaptive polling budget; the first collectives
    // should not inherit it.
    choosePolling(*comm);
    comm->fabric->operationDone();
  }
  WEFT_TRY(agreeOnTuningTable(comm.get(), deadline));
  if (rank == 0 && comm->layout.table) {
    WEFT_INFO("tuning table %s (%zu rules) for layout '%s'", comm->layout.table->source.c_str(),
              comm->layout.table->rules.size(), comm->tuneFingerprint.c_str());
  } else if (rank == 0 && !search.refusal.empty()) {
    if (search.warn) {
      WEFT_WARN("%s", search.refusal.c_str());
    } else {
      WEFT_INFO("%s", search.refusal.c_str());
    }
  }
  comm->p2pSent.assign(nranks, 0);
  comm->p2pReceived.assign(nranks, 0);
  weftComm* raw = comm.get();
  Executor::Background background{
      [raw](Executor::Clock::time_point returnBy) { return advanceOutstanding(raw, returnBy); },
      [raw] { raw->fabric->wake(); }};
  comm->executor =
      std::make_shared<Executor>([raw](Op& op) { return executeOp(raw, op); }, background);
  comm->executor->start();
  if (rank == 0) {
    WEFT_INFO("host %s: %s", self.hostName.c_str(), topo::thisMachine().summary().c_str());
    WEFT_INFO("comm %s: %s; %s, timeout %lld s",
              config.commName.empty() ? "-" : config.commName.c_str(),
              comm->layout.nodes.summary().c_str(),
              config.transports.forced.empty()
                  ? ("shm within hosts, " + comm->networkTransport + " between them").c_str()
                  : ("transport " + config.transports.forced).c_str(),
              static_cast<long long>(config.timeoutMs / 1000));
  }
  *out = comm.release();
  return Status::ok();
}

Status replaceAlgoOverrides(weftComm* comm, const AlgoOverrides& overrides) {
  WEFT_TRY(checkOverrides(overrides, comm->layout));
  comm->config.algos = overrides;
  comm->plans.clear();
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
