// A rank played by hand, step by step, for the tests that must see or break the bootstrap's
// protocol: the join at the root, the ring connections and the description frames on the ring.
#pragma once

#include <sys/socket.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <string>
#include <vector>

#include "bootstrap/rendezvous_wire.h"
#include "bootstrap/unique_id.h"
#include "net/auth.h"
#include "net/socket.h"
#include "net/wire.h"

namespace weft::test {

// A unique id's contents, as a rank decodes them.
inline bootstrap::UniqueIdContents freshId() {
  weftUniqueId id;
  REQUIRE(bootstrap::createUniqueId(&id).isOk());
  bootstrap::UniqueIdContents contents;
  REQUIRE(bootstrap::decodeUniqueId(id, &contents).isOk());
  return contents;
}

// Joins the rendezvous as `rank` without the Bootstrap class (so that a test can then leave, or
// read the reply itself); returns the root connection, the reply not yet read.
inline net::Socket joinByHand(const bootstrap::UniqueIdContents& id, int rank, int nranks,
                              const net::SocketAddress& ring) {
  Deadline deadline = Deadline::after(5000);
  net::Socket root;
  REQUIRE(net::connectTo(id.root, deadline, &root).isOk());
  REQUIRE(
      net::authenticateClient(root.fd(), id.secret, net::Purpose::kRendezvous, 0, deadline).isOk());
  bootstrap::rendezvous::JoinHeader join;
  join.rank = static_cast<uint32_t>(rank);
  join.nranks = static_cast<uint32_t>(nranks);
  join.ring = ring;
  REQUIRE(bootstrap::rendezvous::sendJoin(root.fd(), join, deadline).isOk());
  return root;
}

// One description as it travels on the ring: its length (u32), then its bytes. `claimedBytes`
// lets a test lie about the length.
inline void sendDescriptionFrame(int fd, const std::string& description, uint32_t claimedBytes) {
  std::vector<uint8_t> frame(4 + description.size());
  net::wire::putU32(frame.data(), claimedBytes);
  std::memcpy(frame.data() + 4, description.data(), description.size());
  REQUIRE(net::sendAll(fd, frame.data(), frame.size(), Deadline::after(5000)).isOk());
}

inline std::string readDescriptionFrame(int fd) {
  uint8_t length[4];
  REQUIRE(net::recvAll(fd, length, sizeof(length), Deadline::after(5000)).isOk());
  std::string description(net::wire::getU32(length), '\0');
  REQUIRE(net::recvAll(fd, description.data(), description.size(), Deadline::after(5000)).isOk());
  return description;
}

// Rank 0 of a 2-rank bootstrap played by hand: joins, then connects to rank 1 and accepts rank
// 1's connection, ready for the description frames (send on `next`, receive on `prev`).
struct HandRank0 {
  net::Socket listener, root, next, prev;
  bootstrap::rendezvous::Assignment assignment;

  void join(const bootstrap::UniqueIdContents& id) {
    net::SocketAddress local, ringAddress;
    REQUIRE(net::SocketAddress::parse("127.0.0.1:0", &local).isOk());
    REQUIRE(net::listenOn(local, 8, &listener, &ringAddress).isOk());
    root = joinByHand(id, 0, 2, ringAddress);
    REQUIRE(
        bootstrap::rendezvous::readReply(root.fd(), 2, Deadline::after(5000), &assignment).isOk());
  }

  void formRing(const bootstrap::UniqueIdContents& id) {
    Deadline deadline = Deadline::after(5000);
    const uint64_t commId = assignment.commId;
    REQUIRE(net::connectTo(assignment.next, deadline, &next).isOk());
    REQUIRE(
        net::authenticateClient(next.fd(), id.secret, net::Purpose::kBootstrap, commId, deadline)
            .isOk());
    uint8_t rankBytes[4];
    net::wire::putU32(rankBytes, 0);
    REQUIRE(net::sendAll(next.fd(), rankBytes, 4, deadline).isOk());
    REQUIRE(net::acceptOne(listener, deadline, &prev, nullptr).isOk());
    REQUIRE(
        net::authenticateServer(prev.fd(), id.secret, net::Purpose::kBootstrap, commId, deadline)
            .isOk());
    REQUIRE(net::recvAll(prev.fd(), rankBytes, 4, deadline).isOk());
    CHECK(net::wire::getU32(rankBytes) == 1);
  }
};

}  // namespace weft::test
