// Set-up of the shm transport. Every rank listens on an abstract Unix socket (no file, so nothing
// is left behind) and creates its segment; the host's lowest rank (its leader) then collects every
// other rank's segment memfd and wake-up eventfd and hands each rank the others' in return
// (shm_relay.cc), so that set-up costs one connection per rank, not one per pair of ranks. Ranks
// of one process share what they map (shm_endpoints.h).
//
// After set-up no socket stays open. What a pair's connection used to carry goes through shared
// memory and the kernel instead: a rank's goodbye and failure notice are its segment header's
// state, announced through the peers' eventfds; the death of a peer process is its pidfd becoming
// readable.
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "base/log.h"
#include "net/auth.h"
#include "net/unix_socket.h"
#include "topo/process_state.h"
#include "transports/shm/shm_internal.h"

namespace weft::shm {
namespace {

// Published address: the pid, then the abstract socket name.
std::string encodeAddress(pid_t pid, const std::string& name) {
  std::string out(sizeof(int32_t), '\0');
  int32_t value = pid;
  std::memcpy(out.data(), &value, sizeof(value));
  return out + name;
}

bool decodeAddress(const std::string& blob, std::string* name) {
  if (blob.size() <= sizeof(int32_t)) return false;
  *name = blob.substr(sizeof(int32_t));
  return true;
}

}  // namespace

Status ShmTransport::listen(std::string* address) {
  wakeFd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wakeFd_ < 0) return systemError("eventfd", errno);
  epollFd_ = epoll_create1(EPOLL_CLOEXEC);
  if (epollFd_ < 0) return systemError("epoll_create1", errno);
  epoll_event event{};
  event.events = EPOLLIN;
  event.data.u64 = kWakeEvent;
  if (epoll_ctl(epollFd_, EPOLL_CTL_ADD, wakeFd_, &event) != 0) {
    return systemError("epoll_ctl", errno);
  }
  uint64_t random[2];
  WEFT_TRY(net::randomBytes(random, sizeof(random)));
  probeValue_ = random[0] | 1;
  char name[64];
  std::snprintf(name, sizeof(name), "weft-shm-%d-%016llx", static_cast<int>(getpid()),
                static_cast<unsigned long long>(random[1]));
  listenName_ = name;
  WEFT_TRY(net::listenUnix(listenName_, &listener_));
  WEFT_INFO("shm: listening on @%s", listenName_.c_str());
  *address = encodeAddress(getpid(), listenName_);
  return Status::ok();
}

// The own endpoint takes this rank's eventfd: ranks of this process that use it share that very
// descriptor, so it lives as long as the last of them.
Status ShmTransport::createOwnSegment(const ConnectContext& context) {
  LocalPeer& me = locals_[myIndex_];
  auto own = std::make_shared<Endpoint>();
  Layout layout = layoutFor(localSize(), options_.windowBytes);
  WEFT_TRY(Segment::create("weft-shm-rank" + std::to_string(context.rank), layout.totalBytes,
                           &own->segment));
  own->pid = getpid();
  own->startTicks = topo::selfStartTicks();
  own->wakeFd = wakeFd_;
  wakeFdHandedOver_ = true;
  SegmentHeader& header = *new (own->segment.base()) SegmentHeader();
  header.magic = kMagic;
  header.ownerRank = context.rank;
  header.localSize = localSize();
  header.windowBytes = options_.windowBytes;
  header.ownerPid = own->pid;
  header.ownerStartTicks = own->startTicks;
  header.sleeping.store(0);
  header.state.store(static_cast<uint32_t>(OwnerState::kRunning));
  header.culprit.store(-1);
  header.news.store(0);
  me.view = SegmentView{own->segment.base(), layout};
  me.pid = own->pid;
  me.endpoint = own;
  publishEndpoint(listenName_, own);
  return Status::ok();
}

ShmTransport::RankRecord ShmTransport::ownRecord(int rank) const {
  const Endpoint& own = *locals_[myIndex_].endpoint;
  return RankRecord{kRecordMagic,
                    rank,
                    static_cast<int32_t>(own.pid),
                    0,
                    own.startTicks,
                    own.segment.size(),
                    reinterpret_cast<uint64_t>(&probeValue_),
                    probeValue_};
}

Status ShmTransport::connect(const ConnectContext& context, const std::vector<int>& peers) {
  peerNames_ = context.peerNames;
  byRank_.assign(context.nranks, nullptr);
  std::vector<int> ranks = peers;
  ranks.push_back(context.rank);
  std::sort(ranks.begin(), ranks.end());
  locals_.resize(ranks.size());
  names_.resize(ranks.size());
  for (size_t i = 0; i < ranks.size(); ++i) {
    locals_[i].rank = ranks[i];
    locals_[i].index = static_cast<int>(i);
    byRank_[ranks[i]] = &locals_[i];
    if (ranks[i] == context.rank) {
      myIndex_ = static_cast<int>(i);
      names_[i] = listenName_;
    } else if (!decodeAddress(context.addresses[ranks[i]], &names_[i])) {
      return invalidUsage(peerNames_[ranks[i]] + " published no shm address");
    }
  }
  WEFT_TRY(createOwnSegment(context));
  std::vector<RankRecord> table;
  if (myIndex_ == 0) {
    WEFT_TRY(leadHost(context, &table));
  } else {
    WEFT_TRY(joinHost(context, &table));
  }
  listener_.close();
  for (LocalPeer& peer : locals_) {
    if (peer.index == myIndex_) continue;
    WEFT_TRY(adoptPeer(peer, table[peer.index]));
  }
  // Only the leader forwards segment descriptors, and it has sent every table by now; so every
  // rank outside the leader's process, and the leader itself, drops them: a rank then holds one
  // eventfd per local peer and one pidfd per peer process.
  if (myIndex_ == 0 || table[0].pid != getpid()) {
    for (LocalPeer& peer : locals_) peer.endpoint->closeSegmentDescriptor();
  }
  WEFT_TRY(watchPeerProcesses());
  int crossMemory = 0;
  for (LocalPeer& peer : locals_) crossMemory += peer.canReadPeer;
  WEFT_INFO("shm: %d local ranks, %s", localSize(),
            options_.crossMemoryMinBytes == 0 ? "single-copy off (WEFT_SHM_CMA_MIN_BYTES=0)"
            : crossMemory == localSize() - 1  ? "single-copy (process_vm_readv) from every peer"
                                              : "single-copy refused by some peers");
  return Status::ok();
}

// Checks the peer's segment against what it reported, and tells it (through this rank's ring
// from it) whether this rank can read its memory: it then decides per message whether to
// announce a large one for reading in place.
Status ShmTransport::adoptPeer(LocalPeer& peer, const RankRecord& record) {
  const Segment& segment = peer.endpoint->segment;
  const auto& header = *reinterpret_cast<const SegmentHeader*>(segment.base());
  if (segment.size() < sizeof(SegmentHeader) || header.magic != kMagic ||
      header.ownerRank != peer.rank || header.localSize != localSize() ||
      header.windowBytes != options_.windowBytes || segment.size() != record.segmentBytes) {
    return invalidUsage(peerNames_[peer.rank] +
                        " sent a shared segment that does not match (different weft versions "
                        "or WEFT_SHM_WINDOW_BYTES?)");
  }
  peer.pid = peer.endpoint->pid;
  peer.view = SegmentView{segment.base(), layoutFor(localSize(), options_.windowBytes)};
  if (options_.crossMemoryMinBytes > 0) {
    peer.canReadPeer =
        canReadProcess(peer.pid, peer.endpoint->startTicks, record.probeAddress, record.probeValue);
  }
  if (peer.canReadPeer) {
    locals_[myIndex_].view.readable(peer.index).store(1, std::memory_order_release);
  }
  return Status::ok();
}

// One pidfd per peer process, in this rank's epoll set.
Status ShmTransport::watchPeerProcesses() {
  const pid_t self = getpid();
  for (LocalPeer& peer : locals_) {
    if (peer.pid == self) continue;
    bool watched = false;
    for (const auto& watch : watches_) watched = watched || watch->pid == peer.pid;
    if (watched) continue;
    bool gone = false;
    std::shared_ptr<ProcessWatch> watch = watchProcess(peer.pid, peer.endpoint->startTicks, &gone);
    if (gone) {
      return remoteError(peerNames_[peer.rank] + ": its process (pid " + std::to_string(peer.pid) +
                         ") exited during set-up");
    }
    if (watch == nullptr) continue;
    epoll_event event{};
    event.events = EPOLLIN;
    event.data.u64 = kWatchEvent + watches_.size();
    if (epoll_ctl(epollFd_, EPOLL_CTL_ADD, watch->fd, &event) != 0) {
      return systemError("epoll_ctl", errno);
    }
    watches_.push_back(std::move(watch));
  }
  return Status::ok();
}

}  // namespace weft::shm
