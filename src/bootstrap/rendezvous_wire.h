// The rendezvous messages between a rank and the root, sent after the kRendezvous handshake.
// Every integer is little-endian and fixed-width; every length is checked against a cap before
// anything is allocated from it.
//
//   Join (rank -> root):
//     rank u32 | nranks u32 | ring listen address [SocketAddress::kWireBytes]
//     | description length u32 (<= kMaxDescriptionBytes) | description bytes
//   Reply (root -> rank):
//     status u8: 0 = success, otherwise the weftResult_t the rank should fail with
//     success: commId u64 | nranks u32
//              | nranks x { ring address [kWireBytes] | description length u32 | description }
//     failure: message length u32 (<= kMaxErrorBytes) | message text
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/deadline.h"
#include "base/status.h"
#include "net/address.h"

namespace weft::bootstrap::rendezvous {

constexpr size_t kJoinHeaderBytes = 4 + 4 + net::SocketAddress::kWireBytes + 4;
constexpr uint32_t kMaxDescriptionBytes = 64 * 1024;
constexpr uint32_t kMaxRanks = 1u << 20;
constexpr uint32_t kMaxErrorBytes = 4096;

struct JoinHeader {
  uint32_t rank = 0;
  uint32_t nranks = 0;
  net::SocketAddress ring;
  uint32_t descriptionBytes = 0;
};

void encodeJoinHeader(const JoinHeader& join, uint8_t* out);
// Checks 1 <= nranks <= kMaxRanks, rank < nranks, the address and the description cap.
Status decodeJoinHeader(const uint8_t* in, JoinHeader* out);

using Buffer = std::shared_ptr<const std::vector<uint8_t>>;
Buffer encodeSuccessReply(uint64_t commId, const std::vector<net::SocketAddress>& ring,
                          const std::vector<std::string>& descriptions);
// Messages longer than kMaxErrorBytes are truncated.
Buffer encodeErrorReply(weftResult_t code, const std::string& message);

struct Table {
  uint64_t commId = 0;
  std::vector<net::SocketAddress> ring;
  std::vector<std::string> descriptions;
};
// Rank side: sends the join (header, then the description of join.descriptionBytes bytes).
Status sendJoin(int fd, const JoinHeader& join, const std::string& description, Deadline deadline);
// Rank side: reads the root's reply. A failure reply becomes a Status with the root's code and
// message; a malformed reply or a different nranks is weftRemoteError.
Status readReply(int fd, uint32_t expectedNranks, Deadline deadline, Table* out);

}  // namespace weft::bootstrap::rendezvous
