// The TCP transport's class, shared by its data path (tcp_transport.cc) and its connection set-up
// (tcp_connect.cc).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "net/acceptor.h"
#include "net/address.h"
#include "net/socket.h"
#include "transports/failure_tracker.h"
#include "transports/tcp/tcp_lane.h"
#include "transports/tcp/tcp_transport.h"

namespace weft::tcp {

class TcpTransport final : public Transport {
 public:
  explicit TcpTransport(const TcpOptions& options);
  ~TcpTransport() override;

  const char* name() const override { return "tcp"; }
  Status listen(std::string* address) override;
  Status connect(const ConnectContext& context, const std::vector<int>& peers) override;
  void post(Xfer* xfer) override;
  Status progress(bool woken) override;
  int waitFd() const override { return epollFd_; }
  int findCulprit() override;
  void announceFailure(int culprit) override;
  void close(bool graceful) override;

 private:
  struct PeerLinks {
    std::vector<std::unique_ptr<Lane>> sendLanes;  // connections this rank makes
    std::vector<std::unique_ptr<Lane>> recvLanes;  // connections the peer makes
    // Both are empty for a pair this transport does not carry.
    bool dialed = false;  // this rank's connections to it were started
    bool dead = false;
  };

  // Set-up (tcp_connect.cc).
  int socketsWith(int peer) const;
  // Starts this rank's connections to `peer` (its send lanes), on the first send to it.
  Status dial(int peer);
  Status dialLane(Lane* lane);
  // A connection the peer made, authenticated, with its lane hello: becomes a receive lane.
  Status admit(net::Arrival& arrival);
  Status watch(Lane* lane);
  // Runs the acceptor (it only ever does what is ready) and forgets awaited lanes that arrived.
  Status serveArrivals();
  // WEFT_RUNTIME_CONNECT=0: every connection made before connect() returns.
  Status connectEveryPeer(const std::vector<int>& peers, const Deadline& deadline);
  std::string describeUnconnected() const;

  // Data path (tcp_transport.cc).
  void activate(Lane* lane);
  void awaitArrival(Lane* lane);
  // notice: the peer's failure notice named `culprit` (-1: none) as the origin.
  Status failPeer(int peer, const Status& why, bool notice = false, int culprit = -1);
  void collectEvents();
  Status stepLane(Lane* lane);
  void lingerAfterNotice();
  template <typename Visit>
  void forEachLane(Visit visit);

  TcpOptions options_;
  net::Socket listener_;
  int epollFd_ = -1;
  int rank_ = -1;
  net::Secret secret_{};
  uint64_t commId_ = 0;
  std::vector<PeerLinks> peers_;
  std::vector<net::SocketAddress> addresses_;  // where each served peer listens
  std::vector<int> peerSockets_;               // socket count each rank published
  std::vector<std::string> peerNames_;
  std::unique_ptr<net::AcceptLoop> arrivals_;
  bool arrivalsReady_ = false;  // the acceptor's descriptor was readable
  std::vector<Lane*> awaited_;  // receive lanes with queued parts and no connection yet
  size_t lanesConnected_ = 0;   // ready lanes, for WEFT_RUNTIME_CONNECT=0
  std::vector<Lane*> active_;   // lanes with queued parts, a dial, or an unexplained hang-up
  Status pendingFailure_;       // found in post(), reported by the next progress()
  FailureTracker failures_;
  bool announced_ = false;  // this rank sent failure notices
};

template <typename Visit>
void TcpTransport::forEachLane(Visit visit) {
  for (PeerLinks& links : peers_) {
    for (auto& lane : links.sendLanes) visit(links, lane.get());
    for (auto& lane : links.recvLanes) visit(links, lane.get());
  }
}

}  // namespace weft::tcp
