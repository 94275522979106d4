#include "bootstrap/bootstrap.h"

#include <sys/socket.h>

#include <cstring>

#include "base/log.h"
#include "bootstrap/description_stream.h"
#include "bootstrap/rendezvous_wire.h"
#include "bootstrap/ring_exchange.h"
#include "net/acceptor.h"
#include "net/socket.h"
#include "net/wire.h"

namespace weft::bootstrap {
namespace {

// How long one inbound ring connection may take to authenticate before it is dropped (others
// are served meanwhile).
constexpr int kStrayTimeoutMs = 5000;

class RingBootstrap final : public Bootstrap {
 public:
  RingBootstrap(int rank, int nranks, const net::Secret& secret)
      : rank_(rank), nranks_(nranks), secret_(secret) {}
  ~RingBootstrap() override { close(); }

  Status rendezvous(const UniqueIdContents& id, const net::SocketAddress& ringAddress,
                    Deadline deadline);
  Status formRing(const net::Socket& listener, Deadline deadline);
  Status gatherDescriptions(const std::string& mine, Deadline deadline);

  int rank() const override { return rank_; }
  int nranks() const override { return nranks_; }
  uint64_t commId() const override { return commId_; }
  const net::Secret& secret() const override { return secret_; }
  const std::vector<std::string>& descriptions() const override { return descriptions_; }
  Status allgather(const void* mine, size_t bytes, void* all, Deadline deadline) override;
  Status barrier(Deadline deadline) override;
  void close() override {
    next_.close();
    prev_.close();
    closed_ = true;
  }

 private:
  int nextRank() const { return (rank_ + 1) % nranks_; }
  int prevRank() const { return (rank_ + nranks_ - 1) % nranks_; }
  Status connectNext(Deadline deadline);
  Status acceptPrev(const net::Socket& listener, Deadline deadline);
  Status ringAllgather(const void* mine, size_t bytes, void* all, Deadline deadline);
  Status ringGatherDescriptions(Deadline deadline);

  const int rank_;
  const int nranks_;
  const net::Secret secret_;
  uint64_t commId_ = 0;
  std::vector<std::string> descriptions_;
  net::SocketAddress nextAddress_;  // where rank+1 listens, from the root
  net::Socket next_;                // we connected to rank+1 and send on it
  net::Socket prev_;                // rank-1 connected to us; we receive on it
  bool closed_ = false;
};

Status RingBootstrap::rendezvous(const UniqueIdContents& id, const net::SocketAddress& ringAddress,
                                 Deadline deadline) {
  const std::string root = "rendezvous with the root at " + id.root.toString();
  net::Socket socket;
  // The root may not be listening yet (environment mode); connectTo retries until the deadline.
  WEFT_TRY(net::connectTo(id.root, deadline, &socket).withContext(root));
  WEFT_TRY(net::authenticateClient(socket.fd(), secret_, net::Purpose::kRendezvous, 0, deadline)
               .withContext(root));

  rendezvous::JoinHeader join;
  join.rank = static_cast<uint32_t>(rank_);
  join.nranks = static_cast<uint32_t>(nranks_);
  join.ring = ringAddress;
  WEFT_TRY(rendezvous::sendJoin(socket.fd(), join, deadline).withContext(root));

  rendezvous::Assignment assignment;
  WEFT_TRY(
      rendezvous::readReply(socket.fd(), join.nranks, deadline, &assignment).withContext(root));
  commId_ = assignment.commId;
  nextAddress_ = assignment.next;
  return Status::ok();
}

Status RingBootstrap::connectNext(Deadline deadline) {
  const std::string context =
      "bootstrap ring: connecting to " + rankName(nextRank()) + " at " + nextAddress_.toString();
  WEFT_TRY(net::connectTo(nextAddress_, deadline, &next_).withContext(context));
  WEFT_TRY(net::authenticateClient(next_.fd(), secret_, net::Purpose::kBootstrap, commId_, deadline)
               .withContext(context));
  uint8_t rankBytes[4];
  net::wire::putU32(rankBytes, static_cast<uint32_t>(rank_));
  return net::sendAll(next_.fd(), rankBytes, sizeof(rankBytes), deadline).withContext(context);
}

Status RingBootstrap::acceptPrev(const net::Socket& listener, Deadline deadline) {
  net::AcceptSpec spec;
  spec.secret = secret_;
  spec.purpose = net::Purpose::kBootstrap;
  spec.commId = commId_;
  spec.helloBytes = 4;
  spec.expected = 1;
  spec.deadline = deadline;
  spec.perConnectionMs = kStrayTimeoutMs;
  spec.logName = "bootstrap ring";
  auto judge = [&](net::Arrival& arrival) {
    uint32_t claimed = net::wire::getU32(arrival.hello.data());
    if (claimed != static_cast<uint32_t>(prevRank())) {
      return invalidUsage("it claims rank " + std::to_string(claimed) + " (expected " +
                          rankName(prevRank()) + ")");
    }
    prev_ = std::move(arrival.socket);
    return Status::ok();
  };
  return net::acceptAuthenticated(listener, spec, judge, [&] {
    return "bootstrap ring (rank " + std::to_string(rank_) + "): waiting for " +
           rankName(prevRank());
  });
}

Status RingBootstrap::formRing(const net::Socket& listener, Deadline deadline) {
  // Even ranks connect first and odd ranks accept first. Every connect then meets a rank that is
  // accepting or about to be, so no cycle of ranks waits on one another, even for odd nranks.
  if (rank_ % 2 == 0) {
    WEFT_TRY(connectNext(deadline));
    return acceptPrev(listener, deadline);
  }
  WEFT_TRY(acceptPrev(listener, deadline));
  return connectNext(deadline);
}

Status RingBootstrap::allgather(const void* mine, size_t bytes, void* all, Deadline deadline) {
  if (closed_) return invalidUsage("bootstrap allgather on a closed bootstrap");
  Status status = ringAllgather(mine, bytes, all, deadline);
  // A failed exchange leaves the streams out of step; closing them makes the neighbours fail at
  // once instead of at their deadline.
  if (!status.isOk()) close();
  return status.withContext("bootstrap allgather (rank " + std::to_string(rank_) + ")");
}

Status RingBootstrap::ringAllgather(const void* mine, size_t bytes, void* all, Deadline deadline) {
  auto* blocks = static_cast<uint8_t*>(all);
  std::memmove(blocks + static_cast<size_t>(rank_) * bytes, mine, bytes);
  uint8_t myHeader[8];
  net::wire::putU64(myHeader, bytes);
  // Step s forwards the block that arrived in step s-1 (our own at first).
  for (int step = 0; step < nranks_ - 1; ++step) {
    int sendBlock = (rank_ - step + nranks_) % nranks_;
    int recvBlock = (rank_ - step - 1 + nranks_) % nranks_;
    uint8_t peerHeader[8];
    WEFT_TRY(exchange({next_.fd(), myHeader, sizeof(myHeader), nextRank()},
                      {prev_.fd(), peerHeader, sizeof(peerHeader), prevRank()}, deadline));
    uint64_t peerBytes = net::wire::getU64(peerHeader);
    if (peerBytes != bytes) {
      return invalidUsage(rankName(prevRank()) + " passed " + std::to_string(peerBytes) +
                          " bytes per rank, this rank " + std::to_string(bytes));
    }
    WEFT_TRY(
        exchange({next_.fd(), blocks + static_cast<size_t>(sendBlock) * bytes, bytes, nextRank()},
                 {prev_.fd(), blocks + static_cast<size_t>(recvBlock) * bytes, bytes, prevRank()},
                 deadline));
  }
  return Status::ok();
}

Status RingBootstrap::gatherDescriptions(const std::string& mine, Deadline deadline) {
  descriptions_.assign(static_cast<size_t>(nranks_), std::string());
  descriptions_[static_cast<size_t>(rank_)] = mine;
  Status status = ringGatherDescriptions(deadline);
  if (!status.isOk()) close();  // the neighbours then fail at once, as in allgather
  return status.withContext("bootstrap: gathering the ranks' descriptions (rank " +
                            std::to_string(rank_) + ")");
}

Status RingBootstrap::ringGatherDescriptions(Deadline deadline) {
  return streamDescriptions({rank_, nranks_, next_.fd(), prev_.fd()},
                            rendezvous::kMaxDescriptionBytes, deadline, &descriptions_);
}

Status RingBootstrap::barrier(Deadline deadline) {
  uint8_t token = 1;
  std::vector<uint8_t> all(static_cast<size_t>(nranks_));
  return allgather(&token, 1, all.data(), deadline);
}

}  // namespace

Status Bootstrap::create(const UniqueIdContents& id, int rank, int nranks,
                         const std::string& description, Deadline deadline,
                         std::unique_ptr<Bootstrap>* out) {
  if (nranks < 1 || static_cast<uint32_t>(nranks) > rendezvous::kMaxRanks) {
    return invalidArgument("nranks=" + std::to_string(nranks) + " (allowed: 1.." +
                           std::to_string(rendezvous::kMaxRanks) + ")");
  }
  if (rank < 0 || rank >= nranks) {
    return invalidArgument("rank=" + std::to_string(rank) +
                           " is outside [0, nranks=" + std::to_string(nranks) + ")");
  }
  if (description.size() > rendezvous::kMaxDescriptionBytes) {
    return invalidArgument("bootstrap description of " + std::to_string(description.size()) +
                           " bytes (at most " + std::to_string(rendezvous::kMaxDescriptionBytes) +
                           ")");
  }
  auto bootstrap = std::make_unique<RingBootstrap>(rank, nranks, id.secret);
  // The ring listener exists before the join, so that every address in the root's table is
  // already accepting when the others connect.
  net::Socket listener;
  net::SocketAddress ringAddress = net::SocketAddress::any(AF_INET, 0);
  if (nranks > 1) {
    net::Interface interface;
    WEFT_TRY(net::chooseLocalInterface(&interface).withContext("bootstrap"));
    WEFT_TRY(net::listenOn(interface.address, 64, &listener, &ringAddress)
                 .withContext("bootstrap ring listener"));
  }
  WEFT_TRY(bootstrap->rendezvous(id, ringAddress, deadline));
  if (nranks > 1) WEFT_TRY(bootstrap->formRing(listener, deadline));
  WEFT_TRY(bootstrap->gatherDescriptions(description, deadline));
  WEFT_INFO("bootstrap: rank %d of %d ready (commId 0x%016llx)", rank, nranks,
            static_cast<unsigned long long>(bootstrap->commId()));
  *out = std::move(bootstrap);
  return Status::ok();
}

}  // namespace weft::bootstrap
