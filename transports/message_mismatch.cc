#include "transports/message_mismatch.h"

namespace weft {

std::string describeMessage(uint64_t tag, uint64_t bytes) {
  return "tag " + std::to_string((tag >> 32) & 0x7fffffffu) + "/" +
         std::to_string(tag & 0xffffffffu) +
         ((tag & kPointToPointTagBit) ? " (point-to-point)" : "") + " with " +
         std::to_string(bytes) + " bytes";
}

Status messageMismatch(uint64_t expectedTag, uint64_t expectedBytes, uint64_t receivedTag,
                       uint64_t receivedBytes, const std::string& detail) {
  const bool classesDiffer = ((expectedTag ^ receivedTag) & kPointToPointTagBit) != 0;
  const char* why =
      classesDiffer
          ? " (a point-to-point message and a collective's met: messages between two ranks match "
            "in posting order, collectives' included, so a send or receive still pending with "
            "this peer must be matched by its counterpart before the pair's next collective)"
          : " (ranks called different operations, counts or datatypes)";
  return invalidUsage("message mismatch: expected " + describeMessage(expectedTag, expectedBytes) +
                      ", received " + describeMessage(receivedTag, receivedBytes) + detail + why);
}

}  // namespace weft
