// Which transport serves which peer, and setting them up: the one place that knows the concrete
// transports. Ranks with the same host identity talk through shm; the others through the
// network, over rdma when every rank has a usable RDMA port (else tcp, with one INFO line);
// TransportOptions::forced puts every peer on one transport. The communicator sees only this
// and the Transport interface.
//
// Set-up runs in two steps around the init allgather of rank descriptions: listen() makes this
// rank reachable on every transport that may serve it and writes their addresses into its
// description; connect() then routes every peer from the descriptions, connects, and hands each
// connected transport with its peers to `attach` (the fabric).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/deadline.h"
#include "base/status.h"
#include "bootstrap/peer_info.h"
#include "net/auth.h"
#include "transports/transport.h"
#include "transports/transport_options.h"

namespace weft {

// What connect() needs besides the descriptions.
struct WiringContext {
  int rank = 0;
  net::Secret secret{};
  uint64_t commId = 0;
  Deadline deadline;
  // The bootstrap's allgather: `bytes` from every rank into `out`, in rank order (rdma shares
  // its side addresses this way, once it knows it may serve).
  std::function<Status(const void* mine, size_t bytes, void* out)> allgather;
  // Takes a connected transport and the peers it serves.
  std::function<Status(std::unique_ptr<Transport>, const std::vector<int>& peers)> attach;
};

class TransportWiring {
 public:
  // Starts listening; fills self->tcpAddress and self->shmAddress.
  static Status listen(const TransportOptions& options, PeerInfo* self,
                       std::unique_ptr<TransportWiring>* out);
  ~TransportWiring();
  TransportWiring(const TransportWiring&) = delete;
  TransportWiring& operator=(const TransportWiring&) = delete;

  // peers[r] is rank r's description (this rank's included).
  Status connect(const WiringContext& context, const std::vector<PeerInfo>& peers);

  // After connect(): "tcp" or "rdma", whichever carries the peers of other hosts.
  const char* networkTransport() const { return rdmaUsed_ ? "rdma" : "tcp"; }
  // After connect(): the ranks of this host this rank reaches through shm, itself included.
  int localRanks() const { return localRanks_; }

 private:
  explicit TransportWiring(const TransportOptions& options) : options_(options) {}
  Status connectOne(const WiringContext& context, std::unique_ptr<Transport> transport,
                    const std::vector<int>& served, std::vector<std::string> addresses);
  Status connectNetwork(const WiringContext& context, const std::vector<int>& netPeers,
                        std::vector<std::string> tcpAddresses);
  Status setUpRdma(const WiringContext& context, const std::vector<int>& netPeers);

  TransportOptions options_;
  std::vector<std::string> names_;
  std::unique_ptr<Transport> tcp_;
  std::unique_ptr<Transport> shm_;
  bool rdmaUsed_ = false;
  int localRanks_ = 1;
};

}  // namespace weft
