// The ranks' descriptions (which differ in size) gathered around the bootstrap ring as one
// pipelined stream: each rank sends its own, then forwards every description the moment it has
// it whole, and sends whatever its socket takes in one call. Each description still travels
// N-1 hops, but a rank that was descheduled catches up with one read and one write instead of
// one ring step per description, which is what thousands of thread-ranks on a few cores pay for.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "base/deadline.h"
#include "base/status.h"

namespace weft::bootstrap {

struct RingNeighbours {
  int rank;
  int nranks;
  int nextFd;  // non-blocking sockets to rank+1 and from rank-1
  int prevFd;
};

// (*descriptions)[ring.rank] is this rank's; the others are filled in. A description longer than
// maxBytes, a neighbour that closes, and the deadline are errors naming the neighbour.
Status streamDescriptions(const RingNeighbours& ring, size_t maxBytes, Deadline deadline,
                          std::vector<std::string>* descriptions);

}  // namespace weft::bootstrap
