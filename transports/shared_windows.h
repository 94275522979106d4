// Shared windows: a region of memory per rank of a host that every rank of that host can read
// and write, plus flag words to synchronise on, for algorithms that work in place in shared
// memory (each rank reducing its share of the buffer straight from its peers' windows) instead
// of exchanging messages. The shm transport provides them when the whole communicator shares a
// host.
//
// Waiting on a flag goes through the communicator's wait loop (Fabric::waitUntil), which polls,
// then announces the sleep in shared memory and blocks; publish() wakes the ranks that sleep.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace weft {

class SharedWindows {
 public:
  // Flag words per rank, each on its own cache line.
  static constexpr int kFlags = 8;

  virtual ~SharedWindows() = default;
  virtual int localSize() const = 0;
  virtual int localIndex() const = 0;
  // The communicator rank of local rank `index` (local ranks are ordered by communicator rank).
  virtual int rankOf(int index) const = 0;
  virtual size_t windowBytes() const = 0;
  virtual char* window(int index) = 0;
  virtual std::atomic<uint64_t>& flag(int index, int which) = 0;
  // Stores `value` into this rank's flag (release) and wakes every sleeping local rank.
  virtual void publish(int which, uint64_t value) = 0;
};

}  // namespace weft
