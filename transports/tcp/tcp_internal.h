// The TCP transport's class, shared by its data path (tcp_transport.cc) and its connection set-up
// (tcp_connect.cc).
#pragma once

#include <memory>
#include <string>
#include <vector>

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
    std::vector<std::unique_ptr<Lane>> lanes;
    bool dead = false;
  };

  // Set-up (tcp_connect.cc).
  Status connectToPeer(const ConnectContext& context, int peer, int sockets);
  Status acceptFromPeers(const ConnectContext& context, const std::vector<int>& peers);
  Status addLane(int peer, int index, net::Socket socket);
  int socketsWith(int peer) const;

  // Data path (tcp_transport.cc).
  void activate(Lane* lane);
  // notice: the peer's failure notice named `culprit` (-1: none) as the origin.
  Status failPeer(int peer, const Status& why, bool notice = false, int culprit = -1);
  void collectEvents();
  void lingerAfterNotice();

  TcpOptions options_;
  net::Socket listener_;
  int epollFd_ = -1;
  std::vector<PeerLinks> peers_;
  std::vector<int> peerSockets_;  // socket count each rank published
  std::vector<std::string> peerNames_;
  std::vector<Lane*> active_;  // lanes with queued parts or an unexplained hang-up
  Status pendingFailure_;      // found in post(), reported by the next progress()
  FailureTracker failures_;
  bool announced_ = false;  // this rank sent failure notices
};

}  // namespace weft::tcp
