// What the rdma transport's ranks tell each other, and what they write into each other's memory.
//
// At init every rank publishes (in its PeerInfo) where its side listener is. Each pair then
// opens one authenticated side connection (the higher rank connects) and both ends send their
// ConnectionDetails for the pair's queue pair over it; the link stays open afterwards for
// goodbyes, failure notices and hang-ups (transports/side_link.h).
//
// Data path, per direction of a pair. The receiver owns a registered region the sender writes
// into: `slots` staging slots of `slotBytes` each, then `ctsEntries` clear-to-send entries.
//  - Eager (messages below the zero-copy threshold): each chunk is one RDMA write with immediate
//    into the next slot, a SlotHeader followed by the payload; the receiver copies it out and
//    returns slots in batches with a zero-length write with immediate (kCredit).
//  - Zero-copy (at or above the threshold): the sender first writes a header-only slot marked
//    kRendezvous (so that a receiver expecting another size notices at once); the receiver,
//    as soon as the receive is posted, registers the user buffer and writes a CtsEntry into the
//    sender's region (kCts); the sender writes the payload straight into it, the last write
//    carrying kZeroCopyDone.
// Writes on one queue pair land and complete in order, so the receiver sees a message's slots
// before the immediates that follow them.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "base/status.h"

namespace weft::rdma {

constexpr uint32_t kWireVersion = 1;

// Published address: wire version, then the side listener's socket address.
constexpr size_t kAddressBytes = 1 + 23;  // net::SocketAddress::kWireBytes

struct ConnectionDetails {
  uint32_t qpn = 0;  // 24 bits
  uint32_t psn = 0;  // 24 bits
  std::array<uint8_t, 16> gid{};
  uint16_t lid = 0;
  uint8_t mtu = 0;       // enum ibv_mtu: 1 (256 B) .. 5 (4096 B)
  uint8_t ethernet = 0;  // 1: RoCE (addressed by GID), 0: InfiniBand (by LID)
  uint64_t regionAddress = 0;
  uint32_t regionKey = 0;
  uint32_t slots = 0;
  uint32_t slotBytes = 0;
  uint32_t ctsEntries = 0;
};
constexpr size_t kDetailsBytes = 4 + 4 + 4 + 16 + 2 + 1 + 1 + 8 + 4 + 4 + 4 + 4;

void encodeDetails(const ConnectionDetails& details, uint8_t* out);
// Rejects a wrong version or values outside what any rank would send (weftInvalidUsage).
Status decodeDetails(const uint8_t* in, size_t length, ConnectionDetails* out);

// Limits both ends enforce on the region geometry.
constexpr uint32_t kMaxSlots = 1024;
constexpr uint32_t kMinSlotBytes = 256;
constexpr uint32_t kMaxSlotBytes = 16 << 20;
constexpr uint32_t kMaxCtsEntries = 256;

// The 32-bit immediate of every write with immediate: 4 bits of kind, 28 of value.
enum class ImmKind : uint8_t {
  kEager = 1,         // value: the slot written
  kCredit = 2,        // value: slots the receiver consumed since its last credit message
  kCts = 3,           // value: the clear-to-send entry written
  kZeroCopyDone = 4,  // value: the clear-to-send entry whose buffer is now filled
};
constexpr uint32_t kImmValueBits = 28;
constexpr uint32_t kMaxImmValue = (1u << kImmValueBits) - 1;

uint32_t encodeImm(ImmKind kind, uint32_t value);
// False for a kind this version does not know.
bool decodeImm(uint32_t imm, ImmKind* kind, uint32_t* value);

// The first bytes of every slot. Written by the sender, validated by the receiver.
struct SlotHeader {
  uint64_t tag;
  uint64_t messageBytes;
  uint64_t offset;  // of this chunk within the message
  uint32_t chunkBytes;
  uint32_t flags;
};
constexpr uint32_t kSlotRendezvous = 1;  // header only: a zero-copy message follows
constexpr size_t kSlotHeaderBytes = 64;  // payload starts here, cache-line aligned
static_assert(sizeof(SlotHeader) <= kSlotHeaderBytes);

// Written by a receiver into its sender's region: where to put message number `sequence`.
struct CtsEntry {
  uint64_t tag;
  uint64_t bytes;
  uint64_t address;
  uint32_t rkey;
  uint32_t sequence;  // zero-copy messages of this direction, counted from 0
};
static_assert(sizeof(CtsEntry) == 32);

// Eager chunking: the payload a slot carries, and how many chunks a message takes (a
// zero-length message still takes one, so that it is matched and checked).
inline size_t slotPayload(uint32_t slotBytes) {
  return slotBytes - kSlotHeaderBytes;
}
inline size_t chunksFor(size_t bytes, uint32_t slotBytes) {
  size_t payload = slotPayload(slotBytes);
  return bytes == 0 ? 1 : (bytes + payload - 1) / payload;
}

std::string describeGid(const std::array<uint8_t, 16>& gid);

}  // namespace weft::rdma
