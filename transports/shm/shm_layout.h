// The layout of a rank's shared segment, which every rank of the host maps:
//
//   [header: identity, the owner's "sleeping" word]
//   [flags: SharedWindows::kFlags words, one cache line each]
//   [rings: one incoming ring per local rank (the owner's own is unused)]
//   [window: windowBytes for the direct algorithms]
//
// A ring carries messages from one producer (the local rank it is indexed by) to the owner:
// kSlots slots of kSlotBytes, a head the producer advances and a tail the owner advances, each
// on its own cache line so that the two sides never write the same line.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "transports/shared_windows.h"

namespace weft::shm {

constexpr size_t kCacheLine = 64;
constexpr uint64_t kMagic = 0x316d687374666577ull;  // "weftshm1"
constexpr size_t kSlotBytes = 32 * 1024;
constexpr size_t kSlots = 32;
constexpr size_t kSlotHeaderBytes = 64;
constexpr size_t kSlotPayload = kSlotBytes - kSlotHeaderBytes;

struct alignas(kCacheLine) SegmentHeader {
  uint64_t magic;
  int32_t ownerRank;
  int32_t localSize;
  uint64_t windowBytes;
  // Set by the owner before it blocks on its eventfd; whoever makes work for it checks this
  // after publishing and writes the eventfd only then, so a busy owner costs no system call.
  alignas(kCacheLine) std::atomic<uint32_t> sleeping;
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
  size_t flagsOffset;
  size_t ringsOffset;
  size_t ringBytes;
  size_t windowOffset;
  size_t windowBytes;
  size_t totalBytes;
};

inline size_t roundUp(size_t value, size_t unit) {
  return (value + unit - 1) / unit * unit;
}

inline Layout layoutFor(int localSize, size_t windowBytes) {
  Layout layout;
  layout.flagsOffset = roundUp(sizeof(SegmentHeader), kCacheLine);
  layout.ringsOffset =
      roundUp(layout.flagsOffset + SharedWindows::kFlags * sizeof(PaddedFlag), 4096);
  layout.ringBytes = roundUp(sizeof(RingControl), kCacheLine) + kSlots * kSlotBytes;
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
    return *reinterpret_cast<RingControl*>(base + layout.ringsOffset + producer * layout.ringBytes);
  }
  char* slot(int producer, uint64_t index) const {
    return base + layout.ringsOffset + producer * layout.ringBytes +
           roundUp(sizeof(RingControl), kCacheLine) + (index % kSlots) * kSlotBytes;
  }
  char* window() const { return base + layout.windowOffset; }
};

}  // namespace weft::shm
