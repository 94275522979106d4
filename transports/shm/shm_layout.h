// The layout of a rank's shared segment, which every rank of the host maps:
//
//   [header: identity, the owner's "sleeping" word, its state and news words]
//   [flags: SharedWindows::kFlags words, one cache line each]
//   [ring controls: one per local rank (the owner's own is unused)]
//   [readable: one word per local rank (RingControl's companion, see below)]
//   [rings: one incoming ring's slots per local rank]
//   [window: windowBytes for the direct algorithms]
//
// A ring carries messages from one producer (the local rank it is indexed by) to the owner:
// slots of kSlotBytes (kSlots of them up to kFullRingRanks local ranks, fewer beyond, so that a
// segment does not grow with the square of the host's ranks), a head the producer advances and a
// tail the owner advances, each on its own cache line so that the two sides never write the same
// line. The controls lie together, away from the slots: a rank touches a peer's slots only when
// they talk, so a host of a thousand ranks does not commit a page per pair.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "transports/shared_windows.h"

namespace weft::shm {

constexpr size_t kCacheLine = 64;
constexpr uint64_t kMagic = 0x316d687374666577ull;  // "weftshm1"
constexpr size_t kSlotBytes = 32 * 1024;
constexpr size_t kSlots = 32;
constexpr int kFullRingRanks = 32;
constexpr size_t kMinSlots = 4;
constexpr size_t kSlotHeaderBytes = 64;
constexpr size_t kSlotPayload = kSlotBytes - kSlotHeaderBytes;

struct alignas(kCacheLine) SegmentHeader {
  uint64_t magic;
  int32_t ownerRank;
  int32_t localSize;
  uint64_t windowBytes;
  int32_t ownerPid;
  uint64_t ownerStartTicks;  // with the pid, the owner process's identity (topo/process_state.h)
  // Set by the owner before it blocks on its eventfd; whoever makes work for it checks this
  // after publishing and writes the eventfd only then, so a busy owner costs no system call.
  alignas(kCacheLine) std::atomic<uint32_t> sleeping;
  // What the owner tells every peer at once (OwnerState), written by the owner only; `culprit`
  // goes with kFailed: the rank its failure notice names (-1: a timeout or an abort).
  alignas(kCacheLine) std::atomic<uint32_t> state;
  std::atomic<int32_t> culprit;
  // Bumped by a peer that changed its own state: the owner then reads the peers' states, and
  // only then, so that a wake-up without news costs no scan of the host.
  alignas(kCacheLine) std::atomic<uint64_t> news;
};

enum class OwnerState : uint32_t {
  kRunning = 0,
  kDeparted = 1,  // closed on purpose: what it sent is still delivered
  kFailed = 2,    // its communicator failed (a failure notice)
  kClosed = 3,    // closed without a goodbye (destroyed after a failure or an abort)
};

struct alignas(kCacheLine) PaddedFlag {
  std::atomic<uint64_t> value;
  char payload[SharedWindows::kFlagPayloadBytes];
};
static_assert(sizeof(PaddedFlag) == kCacheLine);

struct RingControl {
  alignas(kCacheLine) std::atomic<uint64_t> head;  // slots published by the producer
  alignas(kCacheLine) std::atomic<uint64_t> tail;  // slots consumed by the owner
};

// readable[producer] is 1 once the owner found that it can read the producer's memory
// (process_vm_readv): the producer may then announce large messages for reading in place
// instead of copying them.
using ReadableWord = std::atomic<uint32_t>;

enum class SlotKind : uint32_t { kInline = 1, kCrossMemory = 2 };

// At the start of every slot. A message spans one or more slots; `offset` places this slot's
// bytes within it. A cross-memory slot carries no payload: the owner reads `bytes` straight from
// the producer's memory at `address` (process_vm_readv), and consuming the slot is the signal
// that the producer's buffer may be reused.
struct SlotHeader {
  uint64_t tag;
  uint64_t totalBytes;
  uint64_t offset;
  uint64_t address;
  uint32_t bytes;
  SlotKind kind;
};
static_assert(sizeof(SlotHeader) <= kSlotHeaderBytes);

struct Layout {
  size_t slots;  // per ring
  size_t flagsOffset;
  size_t controlsOffset;
  size_t readableOffset;
  size_t ringsOffset;
  size_t ringBytes;
  size_t windowOffset;
  size_t windowBytes;
  size_t totalBytes;
};

inline size_t roundUp(size_t value, size_t unit) {
  return (value + unit - 1) / unit * unit;
}

inline size_t slotsFor(int localSize) {
  if (localSize <= kFullRingRanks) return kSlots;
  return std::max(kMinSlots, kSlots * kFullRingRanks / static_cast<size_t>(localSize));
}

inline Layout layoutFor(int localSize, size_t windowBytes) {
  Layout layout;
  layout.slots = slotsFor(localSize);
  layout.flagsOffset = roundUp(sizeof(SegmentHeader), kCacheLine);
  layout.controlsOffset =
      roundUp(layout.flagsOffset + SharedWindows::kFlags * sizeof(PaddedFlag), kCacheLine);
  layout.readableOffset = layout.controlsOffset + localSize * sizeof(RingControl);
  layout.ringsOffset = roundUp(layout.readableOffset + localSize * sizeof(ReadableWord), 4096);
  layout.ringBytes = layout.slots * kSlotBytes;
  layout.windowOffset = roundUp(layout.ringsOffset + localSize * layout.ringBytes, 4096);
  layout.windowBytes = windowBytes;
  layout.totalBytes = roundUp(layout.windowOffset + windowBytes, 4096);
  return layout;
}

// Views of a mapped segment.
struct SegmentView {
  char* base = nullptr;
  Layout layout{};

  SegmentHeader& header() const { return *reinterpret_cast<SegmentHeader*>(base); }
  PaddedFlag& flag(int which) const {
    return reinterpret_cast<PaddedFlag*>(base + layout.flagsOffset)[which];
  }
  RingControl& ring(int producer) const {
    return reinterpret_cast<RingControl*>(base + layout.controlsOffset)[producer];
  }
  ReadableWord& readable(int producer) const {
    return reinterpret_cast<ReadableWord*>(base + layout.readableOffset)[producer];
  }
  char* slot(int producer, uint64_t index) const {
    return base + layout.ringsOffset + producer * layout.ringBytes +
           (index % layout.slots) * kSlotBytes;
  }
  char* window() const { return base + layout.windowOffset; }
};

}  // namespace weft::shm
