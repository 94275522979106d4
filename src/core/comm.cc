// Communicator creation and release.
#include "core/comm.h"

#include <sched.h>
#include <unistd.h>

#include <set>

#include "algos/algo_context.h"
#include "core/log.h"
#include "topo/host_id.h"
#include "transports/tcp/tcp_transport.h"

namespace weft {
namespace {

int usableCores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return CPU_COUNT(&set);
  return static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
}

// Polling before sleeping saves the wake-up latency, but only pays when every rank of this host
// has a core to itself; oversubscribed ranks must yield the core at once.
int64_t chooseSpinMicros(const weftComm& comm) {
  if (comm.config.spinMicros >= 0) return comm.config.spinMicros;
  int local = 0;
  for (const PeerInfo& peer : comm.peers) local += peer.hostId == comm.peers[comm.rank].hostId;
  return local <= usableCores() ? 50 : 0;
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
  self.pid = static_cast<int32_t>(getpid());
  self.hostName = topo::hostName();
  std::unique_ptr<Transport> tcp;
  if (nranks > 1) {
    tcp = tcp::createTcpTransport(tcp::TcpOptions{config.socketsPerPeer});
    WEFT_TRY(tcp->listen(&self.tcpAddress));
  }
  WEFT_TRY(exchangeDescriptions(comm.get(), self, id, deadline));

  std::vector<std::string> names;
  for (const PeerInfo& peer : comm->peers) names.push_back(peer.describe());
  comm->fabric = std::make_unique<Fabric>(rank, nranks, names);
  WEFT_TRY(comm->fabric->init());
  comm->fabric->setTimeoutMs(config.timeoutMs);
  comm->fabric->setSpinMicros(chooseSpinMicros(*comm));
  if (nranks > 1) {
    ConnectContext context;
    context.rank = rank;
    context.nranks = nranks;
    context.peerNames = names;
    context.secret = comm->bootstrap->secret();
    context.commId = comm->bootstrap->commId();
    context.deadline = deadline;
    std::vector<int> others;
    for (const PeerInfo& peer : comm->peers) {
      context.addresses.push_back(peer.tcpAddress);
      if (peer.rank != rank) others.push_back(peer.rank);
    }
    WEFT_TRY(tcp->connect(context, others));
    WEFT_TRY(comm->fabric->attach(std::move(tcp), others));
  }

  comm->resources = std::make_unique<OpResources>(nranks);
  comm->p2pSent.assign(nranks, 0);
  comm->p2pReceived.assign(nranks, 0);
  weftComm* raw = comm.get();
  comm->executor = std::make_shared<Executor>([raw](const Op& op) { return executeOp(raw, op); });
  comm->executor->start();
  if (rank == 0) {
    WEFT_INFO("comm %s: %d ranks on %d host(s), transport tcp, timeout %lld s",
              config.commName.empty() ? "-" : config.commName.c_str(), nranks, comm->nodes,
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
