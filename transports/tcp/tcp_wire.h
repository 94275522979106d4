// What travels on a TCP data connection: every message is a fixed header followed by its payload.
// Both ends post matching messages in the same order, so the header only confirms what the
// receiver already expects (tag and size); a mismatch is reported instead of corrupting memory.
#pragma once

#include <cstdint>

namespace weft::tcp {

struct WireHeader {
  uint64_t tag;
  uint64_t bytes;
};
static_assert(sizeof(WireHeader) == 16);

// Sent by a rank that leaves on purpose (communicator destroyed), so that its peers can tell a
// clean departure from a crash when they see the connection close.
constexpr uint64_t kGoodbyeTag = ~0ull;
// Sent by a rank whose communicator failed, in place of its next message header; `bytes` holds
// the rank that caused the failure (kNoCulprit after a timeout or an abort).
constexpr uint64_t kFailureTag = ~0ull - 1;
constexpr uint64_t kNoCulprit = ~0ull;

// A connection's first byte from the accepting side, once it took the connection as a lane:
// until then the connecting side counts it as still being made, so a connection dropped before
// it became a lane (the peer slow to serve it, or leaving) is made again or forgotten, never
// mistaken for a lane that broke.
constexpr uint8_t kLaneAdmitted = 0x57;

// Messages of at least this many bytes are split across all sockets of the pair.
constexpr uint64_t kStripeThreshold = 256 * 1024;

constexpr int kMaxSocketsPerPeer = 16;

}  // namespace weft::tcp
