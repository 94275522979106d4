#include "bootstrap/root_server.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/descriptor_limit.h"
#include "base/log.h"
#include "bootstrap/rendezvous_wire.h"
#include "bootstrap/root_connection.h"
#include "net/socket.h"

namespace weft::bootstrap {
namespace {

constexpr uint64_t kListenerId = 0;
constexpr uint64_t kWakeId = 1;
// Time a connection gets for the handshake and its join; honest ranks need milliseconds.
constexpr int kJoinTimeoutMs = 5000;
constexpr int kReplyTimeoutMs = 30000;
// Above this many connections that have not joined yet, new ones are closed at once, so a flood
// cannot exhaust fds. Joined ones do not count: they are bounded by nranks, and a round of more
// than this many ranks keeps them all open until it completes.
constexpr size_t kMaxJoiningConnections = 4096;
constexpr size_t kMaxRanksNamed = 32;
// A rank whose connection drops after it joined (its process died, or it gave up) fails the
// round for everyone unless a process takes its rank again within this long. Nothing in weft
// reconnects by itself, so this only spares a rank restarted at once; the others learn of the
// loss in about this time instead of at their timeout.
constexpr int kRejoinGraceMs = 1000;

class RootServerImpl final : public RootServer {
 public:
  RootServerImpl(const net::Secret& secret, Deadline deadline)
      : secret_(secret), deadline_(deadline) {}
  ~RootServerImpl() override {
    stop();
    if (wakeFd_ >= 0) ::close(wakeFd_);
  }

  Status init(const net::SocketAddress& address);
  net::SocketAddress address() const override { return bound_; }
  void stop() override;
  bool done() const override { return done_.load(); }

 private:
  struct Entry {
    std::unique_ptr<RootConnection> connection;
    uint32_t events = 0;
    bool joining = true;  // its join has not been read yet; counted in joining_
    bool joinHandled = false;
  };

  void run();
  bool finished() const;
  void acceptAll();
  void handle(uint64_t id, uint32_t events);
  void updateInterest(uint64_t id);
  void drop(uint64_t id, const Status& why);
  void remove(uint64_t id);
  void onJoined(uint64_t id);
  void sendReply(uint64_t id, const rendezvous::Buffer& reply, Deadline deadline);
  void failRound(uint64_t id);
  void noteDeparture(uint32_t rank, const std::string& peer);
  void failDeparted(uint32_t rank, const std::string& peer);
  void failEveryone(weftResult_t code, const std::string& message, uint64_t alsoTell);
  void completeRound();
  void sweepDeadlines();
  void onDeadline();
  void pauseListener(bool paused);
  std::string missingRanks() const;
  std::string describe(uint64_t id) const;

  const net::Secret secret_;
  const Deadline deadline_;
  net::Socket listener_;
  net::SocketAddress bound_;
  net::Socket epoll_;
  int wakeFd_ = -1;
  std::thread thread_;
  std::mutex stopMutex_;
  std::atomic<bool> stopRequested_{false};
  std::atomic<bool> done_{false};

  // Everything below belongs to the server thread.
  std::unordered_map<uint64_t, Entry> connections_;
  size_t joining_ = 0;
  uint64_t nextId_ = kWakeId + 1;
  Deadline nextSweep_ = Deadline::never();
  bool listenerPaused_ = false;
  Deadline listenerResume_ = Deadline::never();

  uint32_t nranks_ = 0;                 // 0 until the first join
  std::map<uint32_t, uint64_t> slots_;  // rank -> connection id; never sized from peer input
  bool complete_ = false;
  rendezvous::Buffer failure_;  // set once the round failed; every join then gets it
  std::string failureReason_;
  uint32_t maxNranksSeen_ = 0;
  size_t failuresSent_ = 0;  // counting departed ranks, which are past telling
  struct Departure {
    std::string peer;
    Deadline rejoinBy;
  };
  std::map<uint32_t, Departure> departed_;  // joined ranks whose connection dropped
};

Status RootServerImpl::init(const net::SocketAddress& address) {
  // The ranks dial the root's port while it starts, and one may hold the port for a moment.
  const Deadline busyUntil = Deadline::earliest(deadline_, Deadline::after(5000));
  WEFT_TRY(
      net::listenOn(address, 1024, &listener_, &bound_, busyUntil).withContext("rendezvous root"));
  epoll_ = net::Socket(epoll_create1(EPOLL_CLOEXEC));
  if (!epoll_.isOpen()) return systemError("epoll_create1", errno);
  wakeFd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wakeFd_ < 0) return systemError("eventfd", errno);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kListenerId;
  if (epoll_ctl(epoll_.fd(), EPOLL_CTL_ADD, listener_.fd(), &ev) != 0) {
    return systemError("epoll_ctl(listener)", errno);
  }
  ev.data.u64 = kWakeId;
  if (epoll_ctl(epoll_.fd(), EPOLL_CTL_ADD, wakeFd_, &ev) != 0) {
    return systemError("epoll_ctl(eventfd)", errno);
  }
  try {
    thread_ = std::thread([this] { run(); });
  } catch (const std::system_error& e) {
    return systemError("starting the rendezvous root thread", e.code().value());
  }
  WEFT_INFO("rendezvous root listening on %s", bound_.toString().c_str());
  return Status::ok();
}

void RootServerImpl::stop() {
  std::lock_guard<std::mutex> lock(stopMutex_);
  stopRequested_.store(true);
  if (wakeFd_ >= 0) {
    uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(wakeFd_, &one, sizeof(one));
  }
  if (thread_.joinable()) thread_.join();
}

bool RootServerImpl::finished() const {
  if (!connections_.empty()) return false;
  return complete_ || (failure_ && failuresSent_ >= maxNranksSeen_);
}

void RootServerImpl::run() {
  epoll_event events[64];
  while (!stopRequested_.load() && !finished()) {
    if (deadline_.expired()) {
      onDeadline();
      break;
    }
    if (nextSweep_.expired()) sweepDeadlines();
    int timeoutMs = Deadline::earliest(deadline_, nextSweep_).remainingMs(1 << 29);
    // remainingMs rounds down; the extra millisecond avoids waking just before a deadline.
    int n = epoll_wait(epoll_.fd(), events, 64, timeoutMs == 0 ? 0 : timeoutMs + 1);
    if (n < 0) {
      if (errno == EINTR) continue;
      WEFT_WARN("rendezvous root %s: epoll_wait failed (%s); giving up", bound_.toString().c_str(),
                std::strerror(errno));
      break;
    }
    for (int i = 0; i < n; ++i) {
      uint64_t id = events[i].data.u64;
      if (id == kListenerId) {
        acceptAll();
      } else if (id != kWakeId) {
        handle(id, events[i].events);
      }
    }
  }
  // Release every socket now rather than when the owner drops the object, so that a finished
  // server holds no descriptors however long it stays registered.
  connections_.clear();
  listener_.close();
  done_.store(true);
}

void RootServerImpl::acceptAll() {
  while (listener_.isOpen()) {
    sockaddr_storage storage{};
    socklen_t length = sizeof(storage);
    int fd = accept4(listener_.fd(), reinterpret_cast<sockaddr*>(&storage), &length,
                     SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || net::isTransientAcceptError(errno)) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        WEFT_WARN("rendezvous root %s: accept failed (%s); pausing for 100 ms",
                  bound_.toString().c_str(), std::strerror(errno));
        pauseListener(true);
      }
      return;
    }
    net::Socket socket(fd);
    auto peer = net::SocketAddress::fromSockaddr(reinterpret_cast<sockaddr*>(&storage), length);
    if (joining_ >= kMaxJoiningConnections) {
      WEFT_WARN(
          "rendezvous root %s: refusing connection from %s: %zu connections already open "
          "and not yet joined",
          bound_.toString().c_str(), peer.toString().c_str(), joining_);
      continue;
    }
    (void)net::setNoDelay(socket.fd());
    Deadline deadline = Deadline::earliest(deadline_, Deadline::after(kJoinTimeoutMs));
    uint64_t id = nextId_++;
    Entry entry;
    entry.connection = std::make_unique<RootConnection>(std::move(socket), peer, secret_, deadline);
    entry.events = EPOLLIN;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = id;
    if (epoll_ctl(epoll_.fd(), EPOLL_CTL_ADD, fd, &ev) != 0) {
      WEFT_WARN("rendezvous root %s: epoll_ctl for %s failed (%s)", bound_.toString().c_str(),
                peer.toString().c_str(), std::strerror(errno));
      continue;
    }
    connections_.emplace(id, std::move(entry));
    ++joining_;
    nextSweep_ = Deadline::earliest(nextSweep_, deadline);
  }
}

void RootServerImpl::pauseListener(bool paused) {
  epoll_event ev{};
  ev.events = paused ? 0u : static_cast<uint32_t>(EPOLLIN);
  ev.data.u64 = kListenerId;
  epoll_ctl(epoll_.fd(), EPOLL_CTL_MOD, listener_.fd(), &ev);
  listenerPaused_ = paused;
  if (paused) {
    listenerResume_ = Deadline::after(100);
    nextSweep_ = Deadline::earliest(nextSweep_, listenerResume_);
  }
}

void RootServerImpl::handle(uint64_t id, uint32_t events) {
  auto it = connections_.find(id);
  if (it == connections_.end()) return;  // dropped earlier in this batch
  RootConnection& connection = *it->second.connection;
  const uint32_t trouble = EPOLLHUP | EPOLLERR;
  Status status;
  if ((connection.wantedEvents() & EPOLLIN) && (events & (EPOLLIN | trouble))) {
    status = connection.onReadable();
  } else if ((connection.wantedEvents() & EPOLLOUT) && (events & (EPOLLOUT | trouble))) {
    status = connection.onWritable();
  }
  if (!status.isOk()) {
    drop(id, status);
    return;
  }
  if (it->second.joining && connection.state() == RootConnection::State::kJoined) {
    it->second.joining = false;
    --joining_;
  }
  if (connection.state() == RootConnection::State::kJoined && !it->second.joinHandled) {
    onJoined(id);
    return;
  }
  if (connection.state() == RootConnection::State::kDone) {
    remove(id);
    return;
  }
  updateInterest(id);
}

void RootServerImpl::updateInterest(uint64_t id) {
  Entry& entry = connections_.at(id);
  uint32_t wanted = entry.connection->wantedEvents();
  if (wanted == entry.events) return;
  epoll_event ev{};
  ev.events = wanted;
  ev.data.u64 = id;
  epoll_ctl(epoll_.fd(), EPOLL_CTL_MOD, entry.connection->fd(), &ev);
  entry.events = wanted;
}

std::string RootServerImpl::describe(uint64_t id) const {
  const Entry& entry = connections_.at(id);
  std::string text = entry.connection->peer().toString();
  if (entry.joinHandled)
    text = "rank " + std::to_string(entry.connection->join().rank) + " (" + text + ")";
  return text;
}

void RootServerImpl::drop(uint64_t id, const Status& why) {
  Entry& entry = connections_.at(id);
  WEFT_WARN("rendezvous root %s: dropping connection from %s: %s", bound_.toString().c_str(),
            describe(id).c_str(), why.message().c_str());
  if (entry.joinHandled && !complete_) {
    // Free the rank so that a restarted process can still take it within the grace period.
    auto slot = slots_.find(entry.connection->join().rank);
    if (slot != slots_.end() && slot->second == id) {
      slots_.erase(slot);
      if (!failure_)
        noteDeparture(entry.connection->join().rank, entry.connection->peer().toString());
    }
  }
  remove(id);
}

void RootServerImpl::remove(uint64_t id) {
  auto it = connections_.find(id);
  if (it == connections_.end()) return;
  epoll_ctl(epoll_.fd(), EPOLL_CTL_DEL, it->second.connection->fd(), nullptr);
  if (it->second.joining) --joining_;
  connections_.erase(it);
  if (listenerPaused_) pauseListener(false);
}

void RootServerImpl::sendReply(uint64_t id, const rendezvous::Buffer& reply, Deadline deadline) {
  RootConnection& connection = *connections_.at(id).connection;
  connection.startReply(reply, deadline);
  nextSweep_ = Deadline::earliest(nextSweep_, deadline);
  Status status = connection.onWritable();
  if (!status.isOk()) {
    drop(id, status);
  } else if (connection.state() == RootConnection::State::kDone) {
    remove(id);
  } else {
    updateInterest(id);
  }
}

void RootServerImpl::onJoined(uint64_t id) {
  Entry& entry = connections_.at(id);
  entry.joinHandled = true;
  const rendezvous::JoinHeader& join = entry.connection->join();
  Deadline replyDeadline = Deadline::earliest(deadline_, Deadline::after(kReplyTimeoutMs));
  maxNranksSeen_ = std::max(maxNranksSeen_, join.nranks);
  if (failure_) {
    ++failuresSent_;
    sendReply(id, failure_, replyDeadline);
    return;
  }
  if (nranks_ == 0) nranks_ = join.nranks;
  if (join.nranks != nranks_) {
    failRound(id);
    return;
  }
  auto taken = slots_.find(join.rank);
  if (taken != slots_.end()) {
    std::string holder = connections_.at(taken->second).connection->peer().toString();
    WEFT_WARN("rendezvous root %s: %s claims rank %u, which %s already holds; refusing it",
              bound_.toString().c_str(), entry.connection->peer().toString().c_str(), join.rank,
              holder.c_str());
    entry.joinHandled = false;  // it holds no slot
    sendReply(id,
              rendezvous::encodeErrorReply(weftInvalidUsage,
                                           "rank " + std::to_string(join.rank) +
                                               " has already joined the rendezvous from " + holder),
              replyDeadline);
    return;
  }
  slots_[join.rank] = id;
  if (departed_.erase(join.rank) != 0) {
    WEFT_WARN("rendezvous root %s: rank %u joined again, from %s", bound_.toString().c_str(),
              join.rank, entry.connection->peer().toString().c_str());
  }
  WEFT_INFO("rendezvous root %s: rank %u joined from %s (%zu of %u)", bound_.toString().c_str(),
            join.rank, entry.connection->peer().toString().c_str(), slots_.size(), nranks_);
  if (slots_.size() == nranks_) {
    completeRound();
  } else {
    updateInterest(id);
  }
}

void RootServerImpl::failRound(uint64_t id) {
  const rendezvous::JoinHeader& join = connections_.at(id).connection->join();
  std::string message = "ranks disagree on nranks: rank " + std::to_string(join.rank) + " (" +
                        connections_.at(id).connection->peer().toString() + ") passed " +
                        std::to_string(join.nranks);
  if (!slots_.empty()) {
    const RootConnection& first = *connections_.at(slots_.begin()->second).connection;
    message += " but rank " + std::to_string(first.join().rank) + " (" + first.peer().toString() +
               ") passed " + std::to_string(first.join().nranks);
  } else {
    message += " but an earlier rank passed " + std::to_string(nranks_);
  }
  failEveryone(weftInvalidUsage, message, id);
}

void RootServerImpl::noteDeparture(uint32_t rank, const std::string& peer) {
  Deadline rejoinBy = Deadline::earliest(deadline_, Deadline::after(kRejoinGraceMs));
  departed_[rank] = Departure{peer, rejoinBy};
  nextSweep_ = Deadline::earliest(nextSweep_, rejoinBy);
}

void RootServerImpl::failDeparted(uint32_t rank, const std::string& peer) {
  ++failuresSent_;
  failEveryone(weftRemoteError,
               "rank " + std::to_string(rank) + " (" + peer +
                   ") left the rendezvous after joining and did not join again within " +
                   std::to_string(kRejoinGraceMs) + " ms (did its process die?)",
               0);
}

// Every rank that holds a slot, and `alsoTell` (a connection id; 0: none), gets the failure;
// later joins get it too.
void RootServerImpl::failEveryone(weftResult_t code, const std::string& message,
                                  uint64_t alsoTell) {
  WEFT_WARN("rendezvous root %s: %s", bound_.toString().c_str(), message.c_str());
  failure_ = rendezvous::encodeErrorReply(code, message);
  failureReason_ = message;
  departed_.clear();
  Deadline replyDeadline = Deadline::earliest(deadline_, Deadline::after(kReplyTimeoutMs));
  std::vector<uint64_t> ids;
  for (const auto& [rank, holder] : slots_) ids.push_back(holder);
  if (alsoTell != 0) ids.push_back(alsoTell);
  slots_.clear();
  for (uint64_t target : ids) {
    ++failuresSent_;
    sendReply(target, failure_, replyDeadline);
  }
}

void RootServerImpl::completeRound() {
  complete_ = true;
  Deadline replyDeadline = Deadline::earliest(deadline_, Deadline::after(kReplyTimeoutMs));
  uint64_t commId = 0;
  Status random = Status::ok();
  while (commId == 0 && random.isOk()) random = net::randomBytes(&commId, sizeof(commId));
  // Each rank learns only its ring successor's address: a fixed-size reply, built per rank.
  std::vector<net::SocketAddress> ring(nranks_);
  for (const auto& [rank, id] : slots_) ring[rank] = connections_.at(id).connection->join().ring;
  rendezvous::Buffer failure;
  if (!random.isOk()) failure = rendezvous::encodeErrorReply(random.code(), random.message());
  // Late or stray connections can no longer join anything.
  std::vector<uint64_t> strays;
  for (const auto& [id, entry] : connections_) {
    if (!entry.joinHandled) strays.push_back(id);
  }
  for (uint64_t id : strays) drop(id, invalidUsage("the rendezvous is already complete"));
  epoll_ctl(epoll_.fd(), EPOLL_CTL_DEL, listener_.fd(), nullptr);
  listener_.close();
  WEFT_INFO("rendezvous root %s: all %u ranks joined", bound_.toString().c_str(), nranks_);
  // (A connection that sendReply drops keeps its slot once the round is complete.)
  for (const auto& [rank, id] : slots_) {
    sendReply(id,
              failure ? failure
                      : rendezvous::encodeSuccessReply(commId, nranks_, ring[(rank + 1) % nranks_]),
              replyDeadline);
  }
}

void RootServerImpl::sweepDeadlines() {
  nextSweep_ = Deadline::never();
  if (listenerPaused_ && listenerResume_.expired()) pauseListener(false);
  if (listenerPaused_) nextSweep_ = listenerResume_;
  std::vector<uint64_t> expired;
  for (const auto& [id, entry] : connections_) {
    if (entry.connection->deadline().expired()) {
      expired.push_back(id);
    } else {
      nextSweep_ = Deadline::earliest(nextSweep_, entry.connection->deadline());
    }
  }
  for (uint64_t id : expired) {
    std::string state = connections_.at(id).connection->stateName();
    drop(id, timeoutError("timed out during " + state));
  }
  auto gone = departed_.end();
  for (auto it = departed_.begin(); it != departed_.end(); ++it) {
    if (it->second.rejoinBy.expired()) gone = it;
    nextSweep_ = Deadline::earliest(nextSweep_, it->second.rejoinBy);
  }
  if (gone != departed_.end()) {
    uint32_t rank = gone->first;
    std::string peer = gone->second.peer;
    failDeparted(rank, peer);  // clears departed_
  }
}

std::string RootServerImpl::missingRanks() const {
  std::string text;
  size_t named = 0;
  for (uint32_t r = 0; r < nranks_; ++r) {
    if (slots_.count(r) != 0) continue;
    if (named == kMaxRanksNamed) {
      text += ", ...";
      break;
    }
    text += (named == 0 ? "" : ", ") + std::to_string(r);
    ++named;
  }
  return text;
}

void RootServerImpl::onDeadline() {
  std::string message;
  if (complete_) {
    message = std::to_string(connections_.size()) + " ranks had not read their reply";
  } else if (failure_) {
    message = "the rendezvous failed earlier: " + failureReason_;
  } else if (nranks_ == 0) {
    message = "no rank joined";
  } else {
    message = "ranks " + missingRanks() + " never joined (" + std::to_string(slots_.size()) +
              " of " + std::to_string(nranks_) + " did)";
  }
  WEFT_WARN("rendezvous root %s: deadline passed: %s", bound_.toString().c_str(), message.c_str());
  if (complete_ || failure_) return;
  // One non-blocking attempt: the ranks that did join learn who was missing.
  auto reply = rendezvous::encodeErrorReply(weftTimeout, "the rendezvous timed out: " + message);
  std::vector<uint64_t> ids;
  for (const auto& [rank, id] : slots_) ids.push_back(id);
  for (uint64_t id : ids) {
    RootConnection& connection = *connections_.at(id).connection;
    connection.startReply(reply, deadline_);
    (void)connection.onWritable();
  }
}

}  // namespace

Status RootServer::start(const net::SocketAddress& address, const net::Secret& secret,
                         Deadline deadline, std::shared_ptr<RootServer>* out) {
  raiseDescriptorLimit();  // it holds a descriptor per rank until every rank has joined
  auto server = std::make_shared<RootServerImpl>(secret, deadline);
  WEFT_TRY(server->init(address));
  *out = std::move(server);
  return Status::ok();
}

}  // namespace weft::bootstrap
