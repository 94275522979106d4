// Memory from weftMemAlloc: each allocation is its own anonymous memfd, mapped shared, so that
// the other ranks of the host can map it too (peer_mappings.h) and read a rank's buffers in
// place. The registry is process-wide, like the allocations: any communicator may be handed
// any of them.
//
// A memfd has no name in /dev/shm: nothing is left behind when a process dies. A peer reaches
// the descriptor through /proc/<pid>/fd/<fd> (the same permission as the process_vm_readv that
// the shm transport already needs), and checks the memfd's name, which carries the allocation's
// number, before it maps it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "base/status.h"

namespace weft::mem {

// Where a buffer lies in an allocation, as a peer needs it to map and read it. Fits, twice, in
// a shared window's flag payload (transports/shared_windows.h).
struct SharedExtent {
  uint64_t allocation = 0;  // process-unique number, from 1; 0: not shareable
  uint32_t fd = 0;          // the allocation's memfd in the owning process
  uint32_t pages = 0;       // the allocation's size in pages
  uint64_t offset = 0;      // the buffer's start within the allocation

  bool shareable() const { return allocation != 0; }
};
static_assert(sizeof(SharedExtent) == 24);

size_t pageBytes();

Status allocate(size_t bytes, void** out);
// invalidArgument naming `ptr` when it is not the start of a live allocation.
Status release(void* ptr);

// The extent of [ptr, ptr + bytes) when it lies inside one live allocation. Costs one atomic
// load while the process holds no allocation.
std::optional<SharedExtent> find(const void* ptr, size_t bytes);
// Whether ptr lies in memory that weftMemFree released and no allocation has reused since (a
// use after free that the API reports instead of crashing). Costs one atomic load while
// nothing has been freed.
bool wasReleased(const void* ptr);

// The memfd name of an allocation, as /proc shows its descriptor ("/memfd:NAME (deleted)").
const char* memfdPrefix();

}  // namespace weft::mem
