// The error every transport reports when the message at the head of a peer's stream is not the
// one its front receive expects (transport.h's contract), worded the same way everywhere.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"

namespace weft {

// Marks a tag as point-to-point traffic (weftSend/weftRecv); collectives' tags leave it clear.
constexpr uint64_t kPointToPointTagBit = 1ull << 63;

// "tag A/B (point-to-point) with N bytes": a message as the errors name it.
std::string describeMessage(uint64_t tag, uint64_t bytes);

// "message mismatch: expected tag A/B with N bytes, received tag C/D with M bytes<detail> (why)".
// When one side is a point-to-point message and the other a collective's, the reason names that:
// a send or receive left outstanding meets the peer's next message, a collective's included.
Status messageMismatch(uint64_t expectedTag, uint64_t expectedBytes, uint64_t receivedTag,
                       uint64_t receivedBytes, const std::string& detail = "");

}  // namespace weft
