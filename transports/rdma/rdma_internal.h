// The rdma transport's class, shared by its set-up (rdma_connect.cc), its data path
// (rdma_transport.cc) and its completions and failures (rdma_events.cc). The protocol is
// described in rdma_wire.h.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "net/socket.h"
#include "transports/capabilities.h"
#include "transports/failure_tracker.h"
#include "transports/intrusive_queue.h"
#include "transports/rdma/mr_cache.h"
#include "transports/rdma/rdma_device.h"
#include "transports/rdma/rdma_flow.h"
#include "transports/rdma/rdma_transport.h"
#include "transports/rdma/rdma_wire.h"

namespace weft::rdma {

// Work request ids: receives carry the peer's rank under this bit, writes the peer's rank and
// the send window's request number (error completions carry nothing else that is valid).
constexpr uint64_t kReceiveBit = 1ull << 63;

// Per-transfer state, placed in Xfer::scratch.
struct XferState {
  Xfer* xfer = nullptr;
  XferState* next = nullptr;     // in the peer's sends, inFlight or recvs queue
  XferState* nextCts = nullptr;  // in the peer's awaitingCts queue (zero-copy receives)
  size_t offset = 0;             // bytes staged or written (sends), copied out (receives)
  bool zeroCopy = false;
  bool rendezvousDone = false;  // its kRendezvous slot was written (sends) or checked (receives)
  uint32_t sequence = 0;        // zero-copy: the message's number in its direction
  uint32_t finalRequest = 0;    // zero-copy send: the signalled write whose completion ends it
  const Registration* registration = nullptr;  // zero-copy: the user buffer's, referenced
};
static_assert(sizeof(XferState) <= kXferScratchBytes);

// Owned registered memory: a page-aligned allocation and its memory region.
struct RegisteredArea {
  char* base = nullptr;
  size_t bytes = 0;
  ibv_mr* mr = nullptr;
};

struct Peer {
  int rank = -1;
  net::Socket side;  // set-up, then goodbyes, failure notices and hang-ups
  ibv_qp* qp = nullptr;
  uint32_t psn = 0;  // this end's first packet sequence number
  ConnectionDetails remote;
  // Written by the peer: `slots` staging slots, then the clear-to-send entries it sends this
  // rank. This rank's own outgoing slots and entries are staged in `staging`, same geometry.
  RegisteredArea region;
  RegisteredArea staging;

  SlotCredits credits{1};
  SlotArrivals arrivals{1};
  SendWindow window{1};

  IntrusiveQueue<XferState> sends;     // not yet fully written
  IntrusiveQueue<XferState> inFlight;  // zero-copy sends written, awaiting their completion
  IntrusiveQueue<XferState> recvs;
  IntrusiveQueue<XferState, &XferState::nextCts> awaitingCts;  // zero-copy receives, no CTS yet

  // Zero-copy, sending side: messages numbered; entries the peer wrote into `region`.
  uint32_t zeroCopySends = 0;
  uint32_t ctsArrived = 0;
  // Zero-copy, receiving side: messages numbered; entries written; messages the peer finished.
  uint32_t zeroCopyRecvs = 0;
  uint32_t ctsWritten = 0;
  uint32_t zeroCopyFinished = 0;

  bool dead = false;
  bool departed = false;   // said goodbye
  bool active = false;     // listed in the transport's active set
  bool throttled = false;  // the last advance() stopped at its posting budget
};

class RdmaTransport final : public Transport, public TransportCapabilities {
 public:
  explicit RdmaTransport(const RdmaOptions& options);
  ~RdmaTransport() override;

  const char* name() const override { return "rdma"; }
  Status listen(std::string* address) override;
  Status connect(const ConnectContext& context, const std::vector<int>& peers) override;
  void post(Xfer* xfer) override;
  Status progress(bool woken) override;
  int waitFd() const override { return epollFd_; }
  bool prepareToSleep() override;
  void operationDone() override;
  void memoryFreed(const void* buf, size_t bytes) override;
  void userMemoryRegistered(const void* buf, size_t bytes) override;
  void userMemoryDeregistered(const void* buf, size_t bytes) override;
  int findCulprit() override;
  void announceFailure(int culprit) override;
  void close(bool graceful) override;
  TransportCapabilities* capabilities() override { return this; }

 private:
  // Set-up (rdma_connect.cc).
  Status createQueues(size_t peers);
  Status allocateArea(size_t bytes, int access, RegisteredArea* out);
  void freeArea(RegisteredArea* area);
  Status openSideLinks(const ConnectContext& context, const std::vector<int>& peers);
  Status createQp(Peer& peer);
  Status bringUp(Peer& peer);
  ConnectionDetails localDetails(const Peer& peer) const;
  Status registerUserMemory(uintptr_t start, size_t bytes, Registration* out);

  // Data path (rdma_transport.cc).
  Status postWrite(Peer& peer, const void* local, uint32_t lkey, size_t bytes, uint64_t remote,
                   uint32_t rkey, const uint32_t* imm, bool force, uint32_t* request);
  Status postReceives(Peer& peer, uint32_t count);
  Status pushSends(Peer& peer);
  Status writeEagerChunk(Peer& peer, XferState& state, uint32_t flags, size_t chunk);
  Status writeZeroCopy(Peer& peer, XferState& state, size_t* budget);
  Status pullRecvs(Peer& peer);
  Status writeClearToSend(Peer& peer);
  Status returnCredits(Peer& peer);
  Status advance(Peer& peer);
  void activate(Peer& peer);
  char* slotAt(RegisteredArea& area, uint32_t slot) const;
  CtsEntry* ctsAt(RegisteredArea& area, uint32_t index) const;

  // Completions, events and failures (rdma_events.cc).
  Status pollCompletions(int budget);
  Status handleCompletion(const ibv_wc& wc);
  Status handleImmediate(Peer& peer, uint32_t imm);
  void drainChannel();
  Status collectSideNews();
  // notice: the peer's failure notice named `culprit` (-1: none) as the origin.
  Status failPeer(Peer& peer, const Status& why, bool notice = false, int culprit = -1);
  void releaseTransfer(XferState& state);
  void flushWrites();

  RdmaOptions options_;
  std::unique_ptr<RdmaDevice> device_;
  net::Socket listener_;
  int epollFd_ = -1;
  ibv_pd* pd_ = nullptr;
  ibv_comp_channel* channel_ = nullptr;
  ibv_cq* cq_ = nullptr;
  int cqDepth_ = 0;
  uint32_t sendDepth_ = 0;
  uint32_t recvDepth_ = 0;
  uint32_t maxInline_ = ~0u;  // the least any queue pair takes
  std::unique_ptr<MrCache> registrations_;
  // weftCommRegister's ranges, each holding its persistent cache entry until deregistered.
  std::vector<std::pair<std::pair<const void*, size_t>, const Registration*>> userRegistrations_;
  std::vector<std::unique_ptr<Peer>> peers_;  // by rank; null where this transport has none
  std::vector<std::string> peerNames_;
  std::vector<Peer*> active_;  // peers with queued work
  std::vector<ibv_wc> stash_;  // completions polled by prepareToSleep(), handled next
  FailureTracker failures_;
  Status pendingFailure_;  // found in post(), reported by the next progress()
  int rank_ = -1;
};

}  // namespace weft::rdma
