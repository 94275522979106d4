// The rendezvous messages between a rank and the root, sent after the kRendezvous handshake.
// Every integer is little-endian and fixed-width; every length is checked against a cap before
// anything is allocated from it.
//
//   Join (rank -> root):
//     rank u32 | nranks u32 | ring listen address [SocketAddress::kWireBytes]
//     | protocol u32 (kProtocolVersion)
//   Reply (root -> rank):
//     status u8: 0 = success, otherwise the weftResult_t the rank should fail with
//     success: commId u64 | nranks u32 | the ring successor's (rank + 1) address [kWireBytes]
//     failure: message length u32 (<= kMaxErrorBytes) | message text
//
// Both messages have a fixed size whatever nranks is, so the root's work and traffic grow as N.
// Version 1 sent every rank the whole table of addresses and descriptions (N^2 bytes at the
// root); the descriptions now travel around the bootstrap ring instead (bootstrap.cc). A
// version-1 join carried its description's length where the protocol field now is.
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
constexpr size_t kSuccessReplyBytes = 1 + 8 + 4 + net::SocketAddress::kWireBytes;
constexpr uint32_t kProtocolVersion = 2;
// The cap on a rank's description (Bootstrap::create), which the ring checks as it forwards them.
constexpr uint32_t kMaxDescriptionBytes = 64 * 1024;
constexpr uint32_t kMaxRanks = 1u << 20;
constexpr uint32_t kMaxErrorBytes = 4096;

struct JoinHeader {
  uint32_t rank = 0;
  uint32_t nranks = 0;
  net::SocketAddress ring;
  uint32_t protocol = kProtocolVersion;
};

void encodeJoinHeader(const JoinHeader& join, uint8_t* out);
// Checks the protocol version, 1 <= nranks <= kMaxRanks, rank < nranks and the address.
Status decodeJoinHeader(const uint8_t* in, JoinHeader* out);

using Buffer = std::shared_ptr<const std::vector<uint8_t>>;
// `next` is the ring address of the rank after the one this reply goes to.
Buffer encodeSuccessReply(uint64_t commId, uint32_t nranks, const net::SocketAddress& next);
// Messages longer than kMaxErrorBytes are truncated.
Buffer encodeErrorReply(weftResult_t code, const std::string& message);

// What the root tells one rank: the communicator and where its ring successor listens.
struct Assignment {
  uint64_t commId = 0;
  net::SocketAddress next;
};
// Rank side: sends the join.
Status sendJoin(int fd, const JoinHeader& join, Deadline deadline);
// Rank side: reads the root's reply. A failure reply becomes a Status with the root's code and
// message; a malformed reply or a different nranks is weftRemoteError.
Status readReply(int fd, uint32_t expectedNranks, Deadline deadline, Assignment* out);

}  // namespace weft::bootstrap::rendezvous
