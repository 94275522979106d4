// One step of a ring exchange on the bootstrap's non-blocking sockets: send to one neighbour
// while receiving from the other, so that neither direction waits for the other to drain
// (sequential send-then-receive deadlocks once a block exceeds the socket buffers).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "base/deadline.h"
#include "base/status.h"

namespace weft::bootstrap {

// One direction of an exchange: a buffer and the rank it goes to or comes from.
struct Transfer {
  int fd;
  uint8_t* data;
  size_t left;
  int peer;
};

// "rank 3": how the bootstrap's messages name a peer.
std::string rankName(int rank);

// Errors name the peer: "rank 3 closed the connection", or what was pending at the deadline.
Status exchange(Transfer out, Transfer in, Deadline deadline);

}  // namespace weft::bootstrap
