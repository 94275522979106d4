// Set-up of the shm transport. Every rank listens on an abstract Unix socket (no file, so
// nothing is left behind); for each pair of ranks on the host the higher rank connects to the
// lower, both prove the communicator's secret (HMAC, as every weft connection does), the
// connecting rank says who it is in a fixed-size hello, and then each sends the other its
// segment's memfd and its wake-up eventfd. The listener accepts through net::acceptAuthenticated,
// so that other local processes' connections (strays, scanners, stalled clients) are handshaken
// concurrently and dropped without holding up the real peers; descriptors are exchanged only
// with connections that proved the secret. The sockets stay open: a peer that dies closes them,
// which is how its death is noticed.
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "base/log.h"
#include "net/acceptor.h"
#include "net/auth.h"
#include "net/unix_socket.h"
#include "transports/shm/shm_internal.h"

namespace weft::shm {
namespace {

// A stray or slow connection may hold up set-up this long at most before it is dropped.
constexpr int kHandshakeMs = 5000;

// What a connecting rank sends right after authenticating: which rank it is.
struct ShmHello {
  uint32_t magic;
  uint32_t rank;
};
constexpr uint32_t kHelloMagic = 0x776d6873;  // "shmw"

struct SetupMessage {
  int32_t rank;
  int32_t pid;
  uint64_t segmentBytes;
  uint64_t probeAddress;
  uint64_t probeValue;
};

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
  event.data.u64 = ~0ull;
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

Status ShmTransport::createOwnSegment(const ConnectContext& context) {
  LocalPeer& me = locals_[myIndex_];
  Layout layout = layoutFor(localSize(), options_.windowBytes);
  WEFT_TRY(Segment::create("weft-shm-rank" + std::to_string(context.rank), layout.totalBytes,
                           &me.segment));
  me.view = SegmentView{me.segment.base(), layout};
  SegmentHeader& header = *new (me.segment.base()) SegmentHeader();
  header.magic = kMagic;
  header.ownerRank = context.rank;
  header.localSize = localSize();
  header.windowBytes = options_.windowBytes;
  header.sleeping.store(0);
  me.pid = getpid();
  me.wakeFd = -1;  // never written: a rank does not wake itself
  return Status::ok();
}

Status ShmTransport::connect(const ConnectContext& context, const std::vector<int>& peers) {
  peerNames_ = context.peerNames;
  byRank_.assign(context.nranks, nullptr);
  std::vector<int> ranks = peers;
  ranks.push_back(context.rank);
  std::sort(ranks.begin(), ranks.end());
  locals_.resize(ranks.size());
  for (size_t i = 0; i < ranks.size(); ++i) {
    locals_[i].rank = ranks[i];
    locals_[i].index = static_cast<int>(i);
    byRank_[ranks[i]] = &locals_[i];
    if (ranks[i] == context.rank) myIndex_ = static_cast<int>(i);
  }
  WEFT_TRY(createOwnSegment(context));

  int accepting = 0;
  for (LocalPeer& peer : locals_) {
    if (peer.rank > context.rank) ++accepting;
    if (peer.rank >= context.rank) continue;
    std::string name;
    if (!decodeAddress(context.addresses[peer.rank], &name)) {
      return invalidUsage(peerNames_[peer.rank] + " published no shm address");
    }
    Status connected = net::connectUnix(name, context.deadline, &peer.link);
    if (connected.isOk()) {
      connected = net::authenticateClient(peer.link.fd(), context.secret, net::Purpose::kShm,
                                          context.commId, context.deadline);
    }
    if (connected.isOk()) {
      const ShmHello hello{kHelloMagic, static_cast<uint32_t>(context.rank)};
      connected = net::sendAll(peer.link.fd(), &hello, sizeof(hello), context.deadline);
    }
    if (connected.isOk()) connected = exchangeWith(peer, true, context);
    if (!connected.isOk()) {
      return connected.withContext("shm: connecting to " + peerNames_[peer.rank] +
                                   " (same host identity)");
    }
  }
  WEFT_TRY(acceptPeers(context, accepting));
  listener_.close();
  for (LocalPeer& peer : locals_) {
    if (peer.index == myIndex_) continue;
    epoll_event event{};
    event.events = EPOLLIN | EPOLLRDHUP;
    event.data.u64 = static_cast<uint64_t>(peer.index);
    if (epoll_ctl(epollFd_, EPOLL_CTL_ADD, peer.link.fd(), &event) != 0) {
      return systemError("epoll_ctl", errno);
    }
  }
  int crossMemory = 0;
  for (LocalPeer& peer : locals_) crossMemory += peer.canReadPeer;
  WEFT_INFO("shm: %d local ranks, %s", localSize(),
            options_.crossMemoryMinBytes == 0 ? "single-copy off (WEFT_SHM_CMA_MIN_BYTES=0)"
            : crossMemory == localSize() - 1  ? "single-copy (process_vm_readv) from every peer"
                                              : "single-copy refused by some peers");
  return Status::ok();
}

Status ShmTransport::acceptPeers(const ConnectContext& context, int expected) {
  if (expected == 0) return Status::ok();
  // First every higher local rank's authenticated connection, whatever else connects meanwhile;
  // then the descriptors, from peers known to hold the secret.
  std::vector<net::Socket> arrived(static_cast<size_t>(context.nranks));
  net::AcceptSpec spec;
  spec.secret = context.secret;
  spec.purpose = net::Purpose::kShm;
  spec.commId = context.commId;
  spec.helloBytes = sizeof(ShmHello);
  spec.expected = expected;
  spec.deadline = context.deadline;
  spec.perConnectionMs = kHandshakeMs;
  spec.logName = "shm";
  auto judge = [&](net::Arrival& arrival) {
    ShmHello hello{};
    std::memcpy(&hello, arrival.hello.data(), sizeof(hello));
    const bool known = hello.magic == kHelloMagic && hello.rank < byRank_.size() &&
                       byRank_[hello.rank] != nullptr && int(hello.rank) > context.rank;
    if (!known) {
      return invalidUsage("unexpected shm hello (magic " + std::to_string(hello.magic) + ", rank " +
                          std::to_string(hello.rank) + ")");
    }
    if (arrived[hello.rank].isOpen()) {
      return invalidUsage("a second connection from rank " + std::to_string(hello.rank));
    }
    arrived[hello.rank] = std::move(arrival.socket);
    return Status::ok();
  };
  auto describeMissing = [&] {
    std::string missing;
    for (const LocalPeer& peer : locals_) {
      if (peer.rank > context.rank && !arrived[peer.rank].isOpen()) {
        missing += (missing.empty() ? "" : ", ") + peerNames_[peer.rank];
      }
    }
    return "shm: waiting for the higher local ranks to connect (" + missing + ")";
  };
  WEFT_TRY(net::acceptAuthenticated(listener_, spec, judge, describeMissing));
  for (int rank = context.rank + 1; rank < context.nranks; ++rank) {
    if (!arrived[rank].isOpen()) continue;
    LocalPeer placeholder;
    placeholder.link = std::move(arrived[rank]);
    WEFT_TRY(exchangeWith(placeholder, false, context)
                 .withContext("shm: set-up with " + peerNames_[rank]));
  }
  return Status::ok();
}

// Both directions of one pair. The connecting side speaks first; the accepting side learns from
// the message which peer it is talking to (`peer` is then a placeholder whose socket moves to
// the real entry).
Status ShmTransport::exchangeWith(LocalPeer& peer, bool connecting, const ConnectContext& context) {
  LocalPeer& me = locals_[myIndex_];
  SetupMessage mine{context.rank, static_cast<int32_t>(getpid()), me.segment.size(),
                    reinterpret_cast<uint64_t>(&probeValue_), probeValue_};
  Deadline deadline = Deadline::earliest(context.deadline, Deadline::after(kHandshakeMs));
  int socket = peer.link.fd();
  if (connecting) {
    WEFT_TRY(net::sendWithFds(socket, &mine, sizeof(mine), {me.segment.fd(), wakeFd_}, deadline));
  }
  SetupMessage theirs{};
  std::vector<int> fds;
  WEFT_TRY(net::recvWithFds(socket, &theirs, sizeof(theirs), 2, &fds, deadline));
  Segment segment;
  Status attached = Segment::attach(fds[0], &segment);
  if (!attached.isOk()) {
    ::close(fds[1]);
    return attached;
  }
  LocalPeer* target =
      theirs.rank >= 0 && theirs.rank < context.nranks ? byRank_[theirs.rank] : nullptr;
  const SegmentHeader& header = *reinterpret_cast<const SegmentHeader*>(segment.base());
  Status valid = Status::ok();
  if (target == nullptr || target == &me || (connecting && target != &peer) ||
      (!connecting && (theirs.rank < context.rank || target->link.isOpen()))) {
    valid = invalidUsage("unexpected local peer rank " + std::to_string(theirs.rank));
  } else if (segment.size() < sizeof(SegmentHeader) || header.magic != kMagic ||
             header.ownerRank != theirs.rank || header.localSize != localSize() ||
             header.windowBytes != options_.windowBytes) {
    valid = invalidUsage(peerNames_[theirs.rank] +
                         " sent a shared segment that does not match (different weft versions "
                         "or WEFT_SHM_WINDOW_BYTES?)");
  }
  if (!valid.isOk()) {
    ::close(fds[1]);
    return valid;
  }
  if (!connecting) {
    WEFT_TRY(net::sendWithFds(socket, &mine, sizeof(mine), {me.segment.fd(), wakeFd_}, deadline));
    target->link = std::move(peer.link);
    socket = target->link.fd();
  }
  target->pid = theirs.pid;
  target->segment = std::move(segment);
  target->view = SegmentView{target->segment.base(), layoutFor(localSize(), options_.windowBytes)};
  target->wakeFd = fds[1];
  // Each side tells the other whether it could read its memory: the sender decides per message
  // whether the receiver will read it in place.
  probeCrossMemory(*target, theirs.probeAddress, theirs.probeValue);
  uint8_t canRead = target->canReadPeer ? 1 : 0;
  uint8_t peerCanRead = 0;
  WEFT_TRY(net::sendAll(socket, &canRead, 1, deadline));
  WEFT_TRY(net::recvAll(socket, &peerCanRead, 1, deadline));
  target->peerCanReadMe = peerCanRead == 1;
  return Status::ok();
}

// Single-copy needs permission to read the peer's memory (same user, and ptrace not forbidden
// by Yama or a container's seccomp policy). Tried once per pair; refusal only costs a copy.
void ShmTransport::probeCrossMemory(LocalPeer& peer, uint64_t address, uint64_t expected) {
  if (options_.crossMemoryMinBytes == 0) return;
  uint64_t value = 0;
  iovec local{&value, sizeof(value)};
  iovec remote{reinterpret_cast<void*>(address), sizeof(value)};
  ssize_t got = process_vm_readv(peer.pid, &local, 1, &remote, 1, 0);
  peer.canReadPeer = got == static_cast<ssize_t>(sizeof(value)) && value == expected;
  if (!peer.canReadPeer) {
    WEFT_INFO(
        "shm: process_vm_readv from %s refused (%s); large messages from it are copied "
        "through shared memory instead",
        peerNames_[peer.rank].c_str(), got < 0 ? std::strerror(errno) : "wrong data");
  }
}

}  // namespace weft::shm
