// The shm transport's class, shared by its set-up (shm_connect.cc), data path
// (shm_transport.cc) and shared windows (shm_windows.cc).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "net/socket.h"
#include "transports/capabilities.h"
#include "transports/failure_tracker.h"
#include "transports/intrusive_queue.h"
#include "transports/shared_windows.h"
#include "transports/shm/shm_layout.h"
#include "transports/shm/shm_segment.h"
#include "transports/shm/shm_transport.h"

namespace weft::shm {

// Per-transfer state, placed in Xfer::scratch.
struct XferState {
  Xfer* xfer = nullptr;
  size_t done = 0;    // bytes written to (or read from) the ring so far
  uint64_t slot = 0;  // cross-memory sends: the slot whose consumption completes the send
  XferState* next = nullptr;
};
static_assert(sizeof(XferState) <= kXferScratchBytes);

using XferQueue = IntrusiveQueue<XferState>;

struct LocalPeer {
  int rank = -1;   // communicator rank
  int index = -1;  // local index (ranks of the host ordered by communicator rank)
  pid_t pid = 0;
  net::Socket link;  // set-up, then: a hang-up means the peer is gone
  Segment segment;   // the peer's segment (the own entry holds this rank's)
  SegmentView view;
  int wakeFd = -1;             // the peer's eventfd
  bool canReadPeer = false;    // process_vm_readv from this peer works (tested at set-up)
  bool peerCanReadMe = false;  // ... and from this rank by the peer: sends to it may be single-copy
  bool dead = false;
  bool departed = false;
  // To this peer: its ring indexed by this rank.
  XferQueue sends;
  XferQueue awaitingRead;  // cross-memory sends published, not yet consumed
  uint64_t head = 0;
  // From this peer: this rank's ring indexed by the peer.
  XferQueue recvs;
  uint64_t tail = 0;
};

class ShmTransport final : public Transport, public TransportCapabilities, public SharedWindows {
 public:
  explicit ShmTransport(const ShmOptions& options);
  ~ShmTransport() override;

  // Transport.
  const char* name() const override { return "shm"; }
  Status listen(std::string* address) override;
  Status connect(const ConnectContext& context, const std::vector<int>& peers) override;
  void post(Xfer* xfer) override;
  Status progress(bool woken) override;
  int waitFd() const override { return epollFd_; }
  bool prepareToSleep() override;
  void finishSleep() override;
  int findCulprit() override;
  void announceFailure(int culprit) override;
  void close(bool graceful) override;
  TransportCapabilities* capabilities() override { return this; }
  SharedWindows* windows() override { return this; }

  // SharedWindows.
  int localSize() const override { return static_cast<int>(locals_.size()); }
  int localIndex() const override { return myIndex_; }
  int rankOf(int index) const override { return locals_[index].rank; }
  size_t windowBytes() const override { return options_.windowBytes; }
  char* window(int index) override { return locals_[index].view.window(); }
  std::atomic<uint64_t>& flag(int index, int which) override {
    return locals_[index].view.flag(which).value;
  }
  void publish(int which, uint64_t value) override;

 private:
  // Set-up (shm_connect.cc).
  Status createOwnSegment(const ConnectContext& context);
  Status exchangeWith(LocalPeer& peer, bool connecting, const ConnectContext& context);
  Status acceptPeers(const ConnectContext& context, int expected);
  void probeCrossMemory(LocalPeer& peer, uint64_t address, uint64_t expected);

  // Data path (shm_transport.cc).
  bool pushSends(LocalPeer& peer);
  Status pullRecvs(LocalPeer& peer, bool* consumed);
  bool retireReads(LocalPeer& peer);
  bool hasWork(LocalPeer& peer);
  // notice: the peer's failure notice named `culprit` (-1: none) as the origin.
  Status failPeer(LocalPeer& peer, const Status& why, bool notice = false, int culprit = -1);
  Status collectEvents();
  void wake(LocalPeer& peer);
  LocalPeer* peerOf(int rank) { return byRank_[rank]; }

  ShmOptions options_;
  net::Socket listener_;
  std::string listenName_;
  int wakeFd_ = -1;  // this rank's eventfd
  int epollFd_ = -1;
  std::vector<LocalPeer> locals_;  // every local rank, this one included
  std::vector<LocalPeer*> byRank_;
  int myIndex_ = -1;
  std::vector<std::string> peerNames_;
  uint64_t probeValue_ = 0;  // read by peers to test process_vm_readv
  Status pendingFailure_;
  FailureTracker failures_;
};

}  // namespace weft::shm
