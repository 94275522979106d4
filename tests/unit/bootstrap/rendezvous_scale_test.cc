// The rendezvous protocol that keeps the root's work linear in the number of ranks: each rank
// gets a fixed-size reply naming its ring successor, and the descriptions, whatever their sizes,
// travel around the ring with their lengths checked (perf/bootstrap_scale.cc measures it).
#include <sys/resource.h>
#include <sys/socket.h>

#include <catch2/catch.hpp>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "bootstrap/rendezvous_wire.h"
#include "bootstrap/unique_id.h"
#include "scoped_env.h"
#include "unit/bootstrap/rendezvous_by_hand.h"

using weft::Deadline;
using weft::Status;
using weft::bootstrap::Bootstrap;
using weft::bootstrap::UniqueIdContents;
namespace rv = weft::bootstrap::rendezvous;

using weft::test::freshId;

namespace {

// A distinct, never-dialled ring address per rank (the root only passes them on).
weft::net::SocketAddress fakeRingAddress(int rank) {
  return weft::net::SocketAddress::any(AF_INET, static_cast<uint16_t>(20000 + rank));
}

// Joins nranks ranks by hand, one after another, and checks every reply: the same non-zero
// communicator id, the successor's address, and nothing after the fixed-size reply.
void checkReplies(int nranks) {
  UniqueIdContents id = freshId();
  std::vector<weft::net::Socket> roots;
  for (int r = 0; r < nranks; ++r)
    roots.push_back(weft::test::joinByHand(id, r, nranks, fakeRingAddress(r)));
  std::set<uint64_t> commIds;
  for (int r = 0; r < nranks; ++r) {
    INFO("rank " << r << " of " << nranks);
    rv::Assignment assignment;
    Status status = rv::readReply(roots[r].fd(), nranks, Deadline::after(10000), &assignment);
    INFO(status.message());
    REQUIRE(status.isOk());
    CHECK(assignment.next == fakeRingAddress((r + 1) % nranks));
    commIds.insert(assignment.commId);
    // The root closes after the reply: its size is kSuccessReplyBytes, whatever nranks is.
    uint8_t byte;
    Status after = weft::net::recvAll(roots[r].fd(), &byte, 1, Deadline::after(5000));
    CHECK(after.code() == weftRemoteError);
  }
  CHECK(commIds.size() == 1);
  CHECK(*commIds.begin() != 0);
}

}  // namespace

TEST_CASE("the root answers each rank with a fixed-size reply naming its ring successor",
          "[bootstrap][root]") {
  weft::test::ScopedEnv loopback("WEFT_SOCKET_IFNAME", "lo");
  for (int nranks : {1, 2, 3, 100}) checkReplies(nranks);
}

// Joined ranks stay connected until the round completes, so they must not count against the
// root's cap on connections still joining (4096), or no round could pass that many ranks.
TEST_CASE("a round of more ranks than the root's cap on joining connections completes",
          "[bootstrap][root]") {
  const int nranks = 4100;
  rlimit files{};
  REQUIRE(getrlimit(RLIMIT_NOFILE, &files) == 0);
  const rlim_t needed = 2 * nranks + 256;  // both ends of every connection, in this process
  if (files.rlim_cur < needed && files.rlim_max >= needed) {
    rlimit raised = files;
    raised.rlim_cur = needed;
    REQUIRE(setrlimit(RLIMIT_NOFILE, &raised) == 0);
  }
  if (files.rlim_max < needed) {
    WARN("RLIMIT_NOFILE's hard limit " << files.rlim_max << " is below " << needed << "; skipping");
    return;
  }
  weft::test::ScopedEnv loopback("WEFT_SOCKET_IFNAME", "lo");
  checkReplies(nranks);
  setrlimit(RLIMIT_NOFILE, &files);
}

TEST_CASE("descriptions of any size up to the cap reach every rank around the ring",
          "[bootstrap]") {
  weft::test::ScopedEnv loopback("WEFT_SOCKET_IFNAME", "lo");
  const std::vector<size_t> sizes = {0, 1, rv::kMaxDescriptionBytes, 7, 300, 0};
  const int nranks = static_cast<int>(sizes.size());
  auto descriptionOf = [&](int rank) {
    std::string text(sizes[rank], '\0');
    for (size_t i = 0; i < text.size(); ++i) text[i] = static_cast<char>(rank * 31 + i);
    return text;
  };
  UniqueIdContents id = freshId();
  std::vector<std::unique_ptr<Bootstrap>> boots(nranks);
  std::vector<Status> statuses(nranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < nranks; ++r) {
    threads.emplace_back([&, r] {
      statuses[r] =
          Bootstrap::create(id, r, nranks, descriptionOf(r), Deadline::after(10000), &boots[r]);
    });
  }
  for (auto& thread : threads) thread.join();
  for (int r = 0; r < nranks; ++r) {
    INFO("rank " << r << ": " << statuses[r].message());
    REQUIRE(statuses[r].isOk());
    REQUIRE(boots[r]->descriptions().size() == sizes.size());
    for (int q = 0; q < nranks; ++q) CHECK(boots[r]->descriptions()[q] == descriptionOf(q));
  }
}

TEST_CASE("a description over the cap on the ring fails the rank, naming who sent it",
          "[bootstrap]") {
  weft::test::ScopedEnv loopback("WEFT_SOCKET_IFNAME", "lo");
  UniqueIdContents id = freshId();
  Status status;
  std::unique_ptr<Bootstrap> rank1;
  std::thread rank1Thread(
      [&] { status = Bootstrap::create(id, 1, 2, "one", Deadline::after(8000), &rank1); });
  weft::test::HandRank0 rank0;
  rank0.join(id);
  rank0.formRing(id);
  // Claims more bytes than any description may have; rank 1 must refuse before allocating.
  weft::test::sendDescriptionFrame(rank0.next.fd(), "", rv::kMaxDescriptionBytes + 1);
  rank1Thread.join();
  INFO(status.message());
  CHECK(status.code() == weftRemoteError);
  CHECK(status.message().find("rank 0 forwarded a 65537-byte description for rank 0") !=
        std::string::npos);
  CHECK(status.message().find("gathering the ranks' descriptions") != std::string::npos);
  CHECK(rank1 == nullptr);
}

TEST_CASE("a join header from another rendezvous protocol is refused naming both versions",
          "[bootstrap]") {
  rv::JoinHeader join;
  join.rank = 1;
  join.nranks = 4;
  join.ring = fakeRingAddress(1);
  uint8_t bytes[rv::kJoinHeaderBytes];
  rv::encodeJoinHeader(join, bytes);
  rv::JoinHeader decoded;
  REQUIRE(rv::decodeJoinHeader(bytes, &decoded).isOk());
  CHECK(decoded.rank == 1);
  CHECK(decoded.nranks == 4);
  CHECK(decoded.ring == fakeRingAddress(1));

  join.protocol = 150;  // what a version-1 join of a 150-byte description carried here
  rv::encodeJoinHeader(join, bytes);
  Status status = rv::decodeJoinHeader(bytes, &decoded);
  CHECK(status.code() == weftInvalidArgument);
  CHECK(status.message().find("rendezvous protocol 150, this root 2") != std::string::npos);
}
