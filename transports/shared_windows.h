// Shared windows: a region of memory per rank of a host that every rank of that host can read
// and write, plus flag words to synchronise on, for algorithms that work in place in shared
// memory (each rank reducing its share of the buffer straight from its peers' windows) instead
// of exchanging messages. The shm transport provides them when the whole communicator shares a
// host.
//
// Waiting on a flag goes through the communicator's wait loop (Fabric::waitUntil), which polls,
// then announces the sleep in shared memory and blocks; publish() wakes the ranks that sleep.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace weft {

class SharedWindows {
 public:
  // Flag words per rank, each at the start of its own cache line; the rest of the line can carry
  // a small payload, so that a reader's one cache miss brings the flag and the data together.
  static constexpr int kFlags = 8;
  static constexpr size_t kFlagPayloadBytes = 56;

  virtual ~SharedWindows() = default;
  virtual int localSize() const = 0;
  virtual int localIndex() const = 0;
  // The communicator rank of local rank `index` (local ranks are ordered by communicator rank).
  virtual int rankOf(int index) const = 0;
  // The process id of local rank `index`, to map its weftMemAlloc memory (mem/peer_mappings.h).
  virtual pid_t processOf(int index) const = 0;
  // Whether every local rank has found that it can read every other's memory (the shm
  // transport's set-up probe). Once true it stays true; a rank still in set-up may make it read
  // false for a while.
  virtual bool everyRankReadsEveryOther() const = 0;
  virtual size_t windowBytes() const = 0;
  virtual char* window(int index) = 0;
  virtual std::atomic<uint64_t>& flag(int index, int which) = 0;
  // The kFlagPayloadBytes after flag `which` of local rank `index`, in the same cache line.
  char* flagPayload(int index, int which) {
    return reinterpret_cast<char*>(&flag(index, which)) + sizeof(uint64_t);
  }
  // Stores `value` into this rank's flag (release) and wakes every sleeping local rank (one that
  // falls asleep just then: by the end of the operation, see ShmTransport::publish()).
  virtual void publish(int which, uint64_t value) = 0;
};

}  // namespace weft
