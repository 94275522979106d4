// libFuzzer target for every decoder that reads bytes from the network or from a user: the
// authentication hello, the rendezvous join header and the root's reply, peer descriptions,
// socket addresses and unique ids. The first input byte picks the decoder; the rest is its
// input. Each must reject bad input with a Status, never crash, read out of bounds or allocate
// without bound (ASan and UBSan watch; libFuzzer's -rss_limit_mb catches runaway allocation).
//   scripts/fuzz.sh [seconds per run]    builds with clang and runs it on tests/fuzz/corpus
#include <fcntl.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "bootstrap/peer_info.h"
#include "bootstrap/rendezvous_wire.h"
#include "bootstrap/unique_id.h"
#include "net/address.h"
#include "net/auth.h"

namespace {

using namespace weft;

void fuzzHello(const uint8_t* data, size_t size) {
  net::handshake::Hello hello;
  if (net::handshake::decodeHello(data, size, &hello).isOk()) {
    uint8_t again[net::handshake::kHelloBytes];
    net::handshake::encodeHello(hello, again);
    // A hello that decodes re-encodes to the same bytes.
    if (std::memcmp(again, data, net::handshake::kHelloBytes) != 0) __builtin_trap();
  }
}

void fuzzJoinHeader(const uint8_t* data, size_t size) {
  if (size < bootstrap::rendezvous::kJoinHeaderBytes) return;
  bootstrap::rendezvous::JoinHeader join;
  if (bootstrap::rendezvous::decodeJoinHeader(data, &join).isOk()) {
    if (join.nranks < 1 || join.rank >= join.nranks ||
        join.protocol != bootstrap::rendezvous::kProtocolVersion) {
      __builtin_trap();  // decode promised these checks
    }
  }
}

// The root's reply arrives on a socket; a pipe stands in for it, closed after the input so that
// a truncated reply meets end-of-file rather than the deadline.
void fuzzReply(const uint8_t* data, size_t size) {
  if (size < 1 || size > 60000) return;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return;
  const uint32_t nranks = 1 + data[0] % 8;
  ssize_t written = write(fds[1], data + 1, size - 1);
  close(fds[1]);
  if (written == static_cast<ssize_t>(size - 1)) {
    bootstrap::rendezvous::Assignment assignment;
    Status status =
        bootstrap::rendezvous::readReply(fds[0], nranks, Deadline::after(200), &assignment);
    // A reply that decodes re-encodes to the bytes it was read from.
    if (status.isOk()) {
      auto again =
          bootstrap::rendezvous::encodeSuccessReply(assignment.commId, nranks, assignment.next);
      if (size - 1 < again->size() || std::memcmp(again->data(), data + 1, again->size()) != 0) {
        __builtin_trap();
      }
    }
  }
  close(fds[0]);
}

void fuzzPeerInfo(const uint8_t* data, size_t size) {
  PeerInfo info;
  std::string bytes(reinterpret_cast<const char*>(data), size);
  if (decodePeerInfo(bytes, &info).isOk()) {
    PeerInfo again;
    if (!decodePeerInfo(encodePeerInfo(info), &again).isOk()) __builtin_trap();
  }
}

void fuzzAddress(const uint8_t* data, size_t size) {
  if (size < net::SocketAddress::kWireBytes) return;
  net::SocketAddress address;
  if (net::SocketAddress::decode(data, &address).isOk()) (void)address.toString();
}

void fuzzUniqueId(const uint8_t* data, size_t size) {
  weftUniqueId id{};
  std::memcpy(id.internal, data, std::min(size, sizeof(id.internal)));
  bootstrap::UniqueIdContents contents;
  (void)bootstrap::decodeUniqueId(id, &contents);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t* input = data + 1;
  const size_t length = size - 1;
  switch (data[0] % 6) {
    case 0:
      fuzzHello(input, length);
      break;
    case 1:
      fuzzJoinHeader(input, length);
      break;
    case 2:
      fuzzReply(input, length);
      break;
    case 3:
      fuzzPeerInfo(input, length);
      break;
    case 4:
      fuzzAddress(input, length);
      break;
    default:
      fuzzUniqueId(input, length);
      break;
  }
  return 0;
}
