// The messages of the conformance suite: one rank's transfers with their buffers, a byte pattern
// per message that tells its bytes from any other message's, and exchanges of many messages
// between ranks whose both ends derive the same sizes and tags.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "transports/transport.h"

namespace weft::test::conformance {

// A deterministic byte pattern per message, so that a receiver can tell a message's bytes from
// any other message's.
void fillPattern(void* buf, size_t bytes, uint64_t seed);
// The first offset whose byte differs from the pattern, or `bytes` when none does.
size_t firstDifference(const void* buf, size_t bytes, uint64_t seed);

// One rank's transfers in a test: buffers, posting, and checking what arrived.
class Traffic {
 public:
  explicit Traffic(int rank) : rank_(rank) {}

  // A send of the pattern for (this rank, peer, index), and the receive matching the peer's.
  Xfer& send(int peer, size_t bytes, uint64_t tag, uint64_t index);
  Xfer& recv(int peer, size_t bytes, uint64_t tag, uint64_t index);
  void postAll(Transport& transport);
  std::vector<Xfer*> xfers();

  // "" when every transfer completed without error and every receive holds its pattern, else
  // the first few problems.
  std::string verify() const;

 private:
  struct Entry {
    Xfer xfer;
    std::unique_ptr<unsigned char[]> buffer;
    uint64_t seed = 0;
  };
  uint64_t seedFor(int from, int to, uint64_t index) const;

  int rank_;
  std::vector<std::unique_ptr<Entry>> entries_;  // stable addresses: transports hold the Xfers
  size_t posted_ = 0;
};

// One Traffic per rank of an n-rank test.
inline std::vector<Traffic> trafficFor(int nranks) {
  std::vector<Traffic> traffic;
  for (int rank = 0; rank < nranks; ++rank) traffic.emplace_back(rank);
  return traffic;
}

// The message-tag convention of the suite: different per message and direction, and never one
// of tcp's control tags.
inline uint64_t tagFor(int from, int to, uint64_t index) {
  return (index + 1) << 32 | static_cast<uint64_t>(from) << 16 | static_cast<uint64_t>(to);
}

// The sizes of the messages from one rank to another in an exchange.
using SizesFn = std::function<std::vector<size_t>(int from, int to)>;

// Adds to rank `rank`'s traffic one exchange with each of `peers`: sizes(rank, peer) sent and
// sizes(peer, rank) received, interleaved across messages and peers. `round` keeps the messages
// of successive exchanges apart.
void addExchange(Traffic& traffic, int rank, const std::vector<int>& peers, const SizesFn& sizes,
                 uint64_t round = 0);

}  // namespace weft::test::conformance
