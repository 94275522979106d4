// The other ranks' weftMemAlloc allocations, mapped into this process so that the direct
// algorithms can read and reduce peers' buffers in place, and write a reduced result straight
// into the receive buffer a peer offered for the call. One per communicator: a peer's
// allocation is mapped the first time a call names it and kept for the next calls. Mappings
// beyond the capacity are dropped least recently used first (never one the current call uses);
// a dropped mapping of memory its owner has freed is what finally returns those pages.
//
// Every access goes through resolve(), which checks the range against the allocation it maps:
// a rank never reads or writes outside the allocation a peer named, whatever the peer says.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <utility>

#include "base/status.h"
#include "mem/host_memory.h"

namespace weft::mem {

class PeerMappings {
 public:
  explicit PeerMappings(size_t capacity = 256) : capacity_(capacity) {}
  ~PeerMappings();
  PeerMappings(const PeerMappings&) = delete;
  PeerMappings& operator=(const PeerMappings&) = delete;

  // Starts a call: mappings used from now on are kept until the next call at least.
  void beginCall() { ++call_; }
  // The address, in this process, of `bytes` of rank `rank`'s (process `pid`) buffer at
  // `extent`. Fails naming the rank when the allocation cannot be reached or the range does not
  // lie inside it.
  Status resolve(int rank, pid_t pid, const SharedExtent& extent, size_t bytes, char** out);

  size_t mappedCount() const { return mappings_.size(); }

 private:
  struct Mapping {
    char* base = nullptr;
    size_t bytes = 0;
    uint64_t lastCall = 0;
  };
  using Key = std::pair<int, uint64_t>;  // (rank, allocation number)

  Status map(int rank, pid_t pid, const SharedExtent& extent, Mapping* out);
  void dropUnused();

  size_t capacity_;
  uint64_t call_ = 0;
  std::map<Key, Mapping> mappings_;
};

}  // namespace weft::mem
