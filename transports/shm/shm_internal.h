// The shm transport's class, shared by its set-up (shm_connect.cc, shm_relay.cc) and its data
// path (shm_transport.cc).
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
#include "transports/shm/shm_endpoints.h"
#include "transports/shm/shm_layout.h"
#include "transports/shm/shm_segment.h"
#include "transports/shm/shm_transport.h"

namespace weft::shm {

// Per-transfer state, placed in Xfer::scratch.
struct XferState {
  Xfer* xfer = nullptr;
  size_t done = 0;          // bytes written to (or read from) the ring so far
  uint64_t slot = 0;        // cross-memory sends: the slot whose consumption completes the send
  bool singleCopy = false;  // sends: announced for reading in place (decided at the first slot)
  XferState* next = nullptr;
};
static_assert(sizeof(XferState) <= kXferScratchBytes);

using XferQueue = IntrusiveQueue<XferState>;

struct LocalPeer {
  int rank = -1;   // communicator rank
  int index = -1;  // local index (ranks of the host ordered by communicator rank)
  pid_t pid = 0;
  std::shared_ptr<Endpoint>
      endpoint;  // the peer's segment and eventfd (the own entry: this rank's)
  SegmentView view;
  bool canReadPeer = false;  // process_vm_readv from this peer works (tested at set-up)
  bool dead = false;
  bool departed = false;
  bool active = false;  // listed in ShmTransport::active_ (has transfers queued)
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
  void operationDone() override { settleWakes(); }
  int findCulprit() override;
  void announceFailure(int culprit) override;
  void close(bool graceful) override;
  TransportCapabilities* capabilities() override { return this; }
  SharedWindows* windows() override { return this; }

  // SharedWindows.
  int localSize() const override { return static_cast<int>(locals_.size()); }
  int localIndex() const override { return myIndex_; }
  int rankOf(int index) const override { return locals_[index].rank; }
  pid_t processOf(int index) const override { return locals_[index].pid; }
  bool everyRankReadsEveryOther() const override;
  mutable bool allReadable_ = false;  // everyRankReadsEveryOther() held once, so it holds
  size_t windowBytes() const override { return options_.windowBytes; }
  char* window(int index) override { return locals_[index].view.window(); }
  std::atomic<uint64_t>& flag(int index, int which) override {
    return locals_[index].view.flag(which).value;
  }
  void publish(int which, uint64_t value) override;

 private:
  // One local rank in the host's table (shm_relay.cc).
  struct RankRecord {
    uint32_t magic;
    int32_t rank;
    int32_t pid;
    uint32_t reserved;
    uint64_t startTicks;
    uint64_t segmentBytes;
    uint64_t probeAddress;  // where the owner keeps probeValue, to test process_vm_readv
    uint64_t probeValue;
  };
  static constexpr uint32_t kRecordMagic = 0x64726372;  // "rcrd"
  // epoll data of the eventfd, and of the pidfds (plus their position in watches_).
  static constexpr uint64_t kWakeEvent = ~0ull;
  static constexpr uint64_t kWatchEvent = 1ull << 32;

  // Set-up (shm_connect.cc).
  Status createOwnSegment(const ConnectContext& context);
  RankRecord ownRecord(int rank) const;
  Status adoptPeer(LocalPeer& peer, const RankRecord& record);
  Status watchPeerProcesses();
  // The host's table (shm_relay.cc).
  Status leadHost(const ConnectContext& context, std::vector<RankRecord>* table);
  Status joinHost(const ConnectContext& context, std::vector<RankRecord>* table);
  Status sendTable(int socket, const std::vector<RankRecord>& table, int32_t toPid,
                   Deadline deadline);
  Status receiveTable(int socket, Deadline deadline, std::vector<RankRecord>* table);
  Status takeEndpoint(int index, const RankRecord& record, int segmentFd, int wakeFd);
  Status findOwnProcessEndpoint(int index);

  // Data path (shm_transport.cc).
  Status progressPeer(LocalPeer& peer);
  bool pushSends(LocalPeer& peer);
  Status pullRecvs(LocalPeer& peer, bool* consumed);
  bool retireReads(LocalPeer& peer);
  bool hasWork(LocalPeer& peer);
  // notice: the peer's failure notice named `culprit` (-1: none) as the origin.
  Status failPeer(LocalPeer& peer, const Status& why, bool notice = false, int culprit = -1);
  Status collectEvents();
  Status readPeerStates();
  Status processExited(pid_t pid);
  Status failWithState(LocalPeer& peer, OwnerState state);
  // Sets this rank's state and tells every peer (news, and a wake-up even if it polls).
  void announce(OwnerState state, int culprit);
  void wake(LocalPeer& peer);
  // The fence publish() leaves out, then a look at every peer's `sleeping` (see publish()).
  void settleWakes();
  void wakeSleepingPeers();  // wake() on every live local peer
  void activate(LocalPeer& peer);
  LocalPeer* peerOf(int rank) { return byRank_[rank]; }

  ShmOptions options_;
  net::Socket listener_;
  std::string listenName_;
  int wakeFd_ = -1;  // this rank's eventfd (closed by its own endpoint, once there is one)
  bool wakeFdHandedOver_ = false;
  int epollFd_ = -1;
  std::vector<LocalPeer> locals_;   // every local rank, this one included
  std::vector<std::string> names_;  // names_[index]: that local rank's listen name
  std::vector<LocalPeer*> byRank_;
  std::vector<int> active_;  // local indexes of the peers with transfers queued
  // A flag was published without a fence: a peer that went to sleep just then may not be woken
  // yet. Polls since then, to settle within a few of them (see publish()).
  bool wakesOwed_ = false;
  unsigned pollsOwingWakes_ = 0;
  std::vector<std::shared_ptr<ProcessWatch>> watches_;
  uint64_t seenNews_ = 0;
  int myIndex_ = -1;
  std::vector<std::string> peerNames_;
  uint64_t probeValue_ = 0;  // read by peers to test process_vm_readv
  Status pendingFailure_;
  FailureTracker failures_;
};

}  // namespace weft::shm
