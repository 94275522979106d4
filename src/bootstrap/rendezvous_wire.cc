#include "bootstrap/rendezvous_wire.h"

#include <cstring>

#include "net/socket.h"
#include "net/wire.h"

namespace weft::bootstrap::rendezvous {
namespace {

constexpr uint8_t kStatusSuccess = 0;

// resize + memcpy rather than insert(): GCC 12 at -O3 warns falsely about insert() here.
void append(std::vector<uint8_t>* out, const void* data, size_t bytes) {
  size_t at = out->size();
  out->resize(at + bytes);
  if (bytes > 0) std::memcpy(out->data() + at, data, bytes);
}

void appendU32(std::vector<uint8_t>* out, uint32_t value) {
  uint8_t bytes[4];
  net::wire::putU32(bytes, value);
  append(out, bytes, sizeof(bytes));
}

}  // namespace

void encodeJoinHeader(const JoinHeader& join, uint8_t* out) {
  net::wire::putU32(out, join.rank);
  net::wire::putU32(out + 4, join.nranks);
  join.ring.encode(out + 8);
  net::wire::putU32(out + 8 + net::SocketAddress::kWireBytes, join.protocol);
}

Status decodeJoinHeader(const uint8_t* in, JoinHeader* out) {
  JoinHeader join;
  join.rank = net::wire::getU32(in);
  join.nranks = net::wire::getU32(in + 4);
  join.protocol = net::wire::getU32(in + 8 + net::SocketAddress::kWireBytes);
  if (join.protocol != kProtocolVersion) {
    return invalidArgument("join speaks rendezvous protocol " + std::to_string(join.protocol) +
                           ", this root " + std::to_string(kProtocolVersion) +
                           " (ranks from different weft versions?)");
  }
  if (join.nranks == 0 || join.nranks > kMaxRanks) {
    return invalidArgument("join claims nranks=" + std::to_string(join.nranks) + " (allowed: 1.." +
                           std::to_string(kMaxRanks) + ")");
  }
  if (join.rank >= join.nranks) {
    return invalidArgument("join claims rank " + std::to_string(join.rank) +
                           " of nranks=" + std::to_string(join.nranks));
  }
  WEFT_TRY(net::SocketAddress::decode(in + 8, &join.ring).withContext("join's ring address"));
  *out = join;
  return Status::ok();
}

Buffer encodeSuccessReply(uint64_t commId, uint32_t nranks, const net::SocketAddress& next) {
  auto out = std::make_shared<std::vector<uint8_t>>(kSuccessReplyBytes);
  uint8_t* at = out->data();
  at[0] = kStatusSuccess;
  net::wire::putU64(at + 1, commId);
  net::wire::putU32(at + 9, nranks);
  next.encode(at + 13);
  return out;
}

Buffer encodeErrorReply(weftResult_t code, const std::string& message) {
  auto out = std::make_shared<std::vector<uint8_t>>();
  const uint8_t status = static_cast<uint8_t>(code);
  append(out.get(), &status, 1);
  size_t length = std::min<size_t>(message.size(), kMaxErrorBytes);
  appendU32(out.get(), static_cast<uint32_t>(length));
  append(out.get(), message.data(), length);
  return out;
}

Status sendJoin(int fd, const JoinHeader& join, Deadline deadline) {
  uint8_t header[kJoinHeaderBytes];
  encodeJoinHeader(join, header);
  return net::sendAll(fd, header, sizeof(header), deadline);
}

Status readReply(int fd, uint32_t expectedNranks, Deadline deadline, Assignment* out) {
  uint8_t status = 0;
  WEFT_TRY(net::recvAll(fd, &status, 1, deadline));
  if (status != kStatusSuccess) {
    uint8_t lengthBytes[4];
    WEFT_TRY(net::recvAll(fd, lengthBytes, sizeof(lengthBytes), deadline));
    uint32_t length = net::wire::getU32(lengthBytes);
    if (length > kMaxErrorBytes) {
      return remoteError("root sent a " + std::to_string(length) + "-byte error message (at most " +
                         std::to_string(kMaxErrorBytes) + ")");
    }
    std::string message(length, '\0');
    WEFT_TRY(net::recvAll(fd, message.data(), length, deadline));
    bool knownCode =
        status >= weftSystemError && status < weftNumResults && status != weftInProgress;
    if (!knownCode) {
      return remoteError("root refused the join with unknown status " + std::to_string(status) +
                         ": " + message);
    }
    return Status(static_cast<weftResult_t>(status), "the root answered: " + message);
  }

  uint8_t rest[kSuccessReplyBytes - 1];
  WEFT_TRY(net::recvAll(fd, rest, sizeof(rest), deadline));
  Assignment assignment;
  assignment.commId = net::wire::getU64(rest);
  uint32_t nranks = net::wire::getU32(rest + 8);
  if (nranks != expectedNranks) {
    return remoteError("root's reply lists " + std::to_string(nranks) + " ranks, expected " +
                       std::to_string(expectedNranks));
  }
  WEFT_TRY(net::SocketAddress::decode(rest + 12, &assignment.next)
               .withContext("root's reply, the ring successor's address"));
  *out = assignment;
  return Status::ok();
}

}  // namespace weft::bootstrap::rendezvous
