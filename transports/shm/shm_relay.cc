// The host's table: how the ranks of a host learn each other's segments. Every rank but the
// lowest (the leader) connects to the leader, proves the communicator's secret (HMAC, as every
// weft connection does), says which rank it is, and sends a record of itself with its segment's
// memfd and its eventfd. Once all have, the leader sends each rank the whole table and the
// descriptors of the ranks in other processes (a rank finds those of its own process in the
// process's directory, shm_endpoints.h). The leader accepts through net::acceptAuthenticated, so
// other local processes' connections (strays, scanners, stalled clients) are handshaken
// concurrently and dropped without holding up the real peers; descriptors are exchanged only
// with connections that proved the secret.
#include <unistd.h>

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

// Ahead of the table the leader sends.
struct TableHeader {
  uint32_t magic;
  uint32_t count;
};
constexpr uint32_t kTableMagic = 0x6c626174;  // "tabl"

// SCM_RIGHTS carries at most 253 descriptors per message; two go with each rank.
constexpr size_t kRanksPerFdMessage = 120;

}  // namespace

// Takes the received descriptors of local rank `index` (or closes them, for a rank of this
// process, whose endpoint is already in the directory).
Status ShmTransport::takeEndpoint(int index, const RankRecord& record, int segmentFd, int wakeFd) {
  LocalPeer& peer = locals_[index];
  if (record.magic != kRecordMagic || record.rank != peer.rank) {
    ::close(segmentFd);
    ::close(wakeFd);
    return invalidUsage("a malformed set-up record for " + peerNames_[peer.rank]);
  }
  if (record.pid == getpid()) {
    ::close(segmentFd);
    ::close(wakeFd);
    return findOwnProcessEndpoint(index);
  }
  return importEndpoint(names_[index], segmentFd, wakeFd, record.pid, record.startTicks,
                        &peer.endpoint);
}

Status ShmTransport::findOwnProcessEndpoint(int index) {
  LocalPeer& peer = locals_[index];
  peer.endpoint = findEndpoint(names_[index]);
  if (peer.endpoint == nullptr) {
    return invalidUsage(peerNames_[peer.rank] +
                        " claims this process, which holds no shm segment of it");
  }
  return Status::ok();
}

Status ShmTransport::leadHost(const ConnectContext& context, std::vector<RankRecord>* table) {
  const int members = localSize() - 1;
  table->assign(localSize(), RankRecord{});
  (*table)[0] = ownRecord(context.rank);
  if (members == 0) return Status::ok();
  std::vector<net::Socket> arrived(localSize());  // by local index
  net::AcceptSpec spec;
  spec.secret = context.secret;
  spec.purpose = net::Purpose::kShm;
  spec.commId = context.commId;
  spec.helloBytes = sizeof(ShmHello);
  spec.expected = members;
  spec.deadline = context.deadline;
  spec.perConnectionMs = kHandshakeMs;
  spec.logName = "shm";
  auto judge = [&](net::Arrival& arrival) {
    ShmHello hello{};
    std::memcpy(&hello, arrival.hello.data(), sizeof(hello));
    const bool known = hello.magic == kHelloMagic && hello.rank < byRank_.size() &&
                       byRank_[hello.rank] != nullptr && int(hello.rank) != context.rank;
    if (!known) {
      return invalidUsage("unexpected shm hello (magic " + std::to_string(hello.magic) + ", rank " +
                          std::to_string(hello.rank) + ")");
    }
    net::Socket& slot = arrived[byRank_[hello.rank]->index];
    if (slot.isOpen()) {
      return invalidUsage("a second connection from rank " + std::to_string(hello.rank));
    }
    slot = std::move(arrival.socket);
    return Status::ok();
  };
  auto describeMissing = [&] {
    std::string missing;
    for (const LocalPeer& peer : locals_) {
      if (peer.index != 0 && !arrived[peer.index].isOpen()) {
        missing += (missing.empty() ? "" : ", ") + peerNames_[peer.rank];
      }
    }
    return "shm: waiting for the other local ranks to connect (" + missing + ")";
  };
  WEFT_TRY(net::acceptAuthenticated(listener_, spec, judge, describeMissing));
  for (int index = 1; index < localSize(); ++index) {
    Deadline deadline = Deadline::earliest(context.deadline, Deadline::after(kHandshakeMs));
    std::vector<int> fds;
    RankRecord& record = (*table)[index];
    Status received =
        net::recvWithFds(arrived[index].fd(), &record, sizeof(record), 2, &fds, deadline);
    if (received.isOk()) received = takeEndpoint(index, record, fds[0], fds[1]);
    if (!received.isOk()) {
      return received.withContext("shm: set-up with " + peerNames_[locals_[index].rank]);
    }
  }
  for (int index = 1; index < localSize(); ++index) {
    WEFT_TRY(
        sendTable(arrived[index].fd(), *table, (*table)[index].pid, context.deadline)
            .withContext("shm: sending the host's table to " + peerNames_[locals_[index].rank]));
  }
  return Status::ok();
}

// The records, then the descriptors of every rank outside the receiver's process, in local
// order, as many per message as SCM_RIGHTS takes.
Status ShmTransport::sendTable(int socket, const std::vector<RankRecord>& table, int32_t toPid,
                               Deadline deadline) {
  const TableHeader header{kTableMagic, static_cast<uint32_t>(table.size())};
  WEFT_TRY(net::sendAll(socket, &header, sizeof(header), deadline));
  WEFT_TRY(net::sendAll(socket, table.data(), table.size() * sizeof(RankRecord), deadline));
  std::vector<int> fds;
  for (size_t index = 0; index < table.size(); ++index) {
    if (table[index].pid == toPid) continue;
    Endpoint& endpoint = *locals_[index].endpoint;
    fds.push_back(endpoint.segmentDescriptor());
    fds.push_back(endpoint.wakeFd);
    if (fds.size() == 2 * kRanksPerFdMessage) {
      const uint32_t count = static_cast<uint32_t>(fds.size() / 2);
      WEFT_TRY(net::sendWithFds(socket, &count, sizeof(count), fds, deadline));
      fds.clear();
    }
  }
  if (!fds.empty()) {
    const uint32_t count = static_cast<uint32_t>(fds.size() / 2);
    WEFT_TRY(net::sendWithFds(socket, &count, sizeof(count), fds, deadline));
  }
  return Status::ok();
}

Status ShmTransport::joinHost(const ConnectContext& context, std::vector<RankRecord>* table) {
  const LocalPeer& leader = locals_[0];
  const std::string& leaderName = peerNames_[leader.rank];
  net::Socket link;
  Status joined = net::connectUnix(names_[0], context.deadline, &link);
  if (joined.isOk()) {
    joined = net::authenticateClient(link.fd(), context.secret, net::Purpose::kShm, context.commId,
                                     context.deadline);
  }
  if (joined.isOk()) {
    const ShmHello hello{kHelloMagic, static_cast<uint32_t>(context.rank)};
    joined = net::sendAll(link.fd(), &hello, sizeof(hello), context.deadline);
  }
  if (joined.isOk()) {
    const RankRecord mine = ownRecord(context.rank);
    Endpoint& own = *locals_[myIndex_].endpoint;
    joined = net::sendWithFds(link.fd(), &mine, sizeof(mine), {own.segmentDescriptor(), own.wakeFd},
                              context.deadline);
  }
  if (!joined.isOk()) {
    return joined.withContext("shm: connecting to " + leaderName + " (same host identity)");
  }
  return receiveTable(link.fd(), context.deadline, table)
      .withContext("shm: receiving the host's table from " + leaderName);
}

Status ShmTransport::receiveTable(int socket, Deadline deadline, std::vector<RankRecord>* table) {
  TableHeader header{};
  WEFT_TRY(net::recvAll(socket, &header, sizeof(header), deadline));
  if (header.magic != kTableMagic || header.count != static_cast<uint32_t>(localSize())) {
    return invalidUsage("a malformed table (" + std::to_string(header.count) + " ranks for " +
                        std::to_string(localSize()) + " local ranks)");
  }
  table->assign(localSize(), RankRecord{});
  WEFT_TRY(net::recvAll(socket, table->data(), table->size() * sizeof(RankRecord), deadline));
  const int32_t self = getpid();
  std::vector<int> foreign;  // local indexes whose descriptors follow
  for (int index = 0; index < localSize(); ++index) {
    const RankRecord& record = (*table)[index];
    if (record.magic != kRecordMagic || record.rank != locals_[index].rank) {
      return invalidUsage("a malformed record for " + peerNames_[locals_[index].rank]);
    }
    if (index == myIndex_) continue;
    if (record.pid == self) {
      WEFT_TRY(findOwnProcessEndpoint(index));
    } else {
      foreign.push_back(index);
    }
  }
  for (size_t next = 0; next < foreign.size();) {
    const size_t batch = std::min(kRanksPerFdMessage, foreign.size() - next);
    uint32_t count = 0;
    std::vector<int> fds;
    WEFT_TRY(net::recvWithFds(socket, &count, sizeof(count), 2 * batch, &fds, deadline));
    for (size_t i = 0; i < batch; ++i, ++next) {
      const int index = foreign[next];
      const RankRecord& record = (*table)[index];
      Status taken = count == batch
                         ? importEndpoint(names_[index], fds[2 * i], fds[2 * i + 1], record.pid,
                                          record.startTicks, &locals_[index].endpoint)
                         : invalidUsage("descriptors out of step");
      if (!taken.isOk()) {
        for (size_t j = 2 * i + (count == batch ? 2 : 0); j < fds.size(); ++j) ::close(fds[j]);
        return taken;
      }
    }
  }
  return Status::ok();
}

}  // namespace weft::shm
