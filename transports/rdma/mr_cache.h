// Registration cache for user buffers: zero-copy transfers need the memory registered with the
// NIC, and registering costs far more than a lookup, while one operation's messages keep
// touching the same few buffers (every slice of a ring all-reduce lies in one user buffer).
//
// Entries cover whole pages. A lookup that no entry covers registers the pages it needs, merged
// with any idle entries it overlaps (so neighbouring slices end up in one registration instead
// of many overlapping ones). Each transfer holds a reference while it uses an entry. Idle
// entries beyond the capacity are evicted least recently used first.
//
// A registration pins the pages that were mapped when it was made; if the user frees a buffer
// and later gets new memory at the same address, an old entry would send data to the old pages.
// The transport therefore drops idle entries when an operation ends (endOperation), the point
// after which the user may free what the operation was given; only entries created with
// `persistent` (memory the transport owns) survive it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "base/status.h"

namespace weft::rdma {

struct Registration {
  uintptr_t start = 0;  // page-aligned
  uintptr_t end = 0;
  uint32_t lkey = 0;
  uint32_t rkey = 0;
  void* handle = nullptr;  // the ibv_mr
};

class MrCache {
 public:
  using RegisterFn = std::function<Status(uintptr_t start, size_t bytes, Registration* out)>;
  using DeregisterFn = std::function<void(const Registration&)>;

  MrCache(RegisterFn registerFn, DeregisterFn deregisterFn, size_t capacityBytes, size_t maxEntries,
          size_t pageBytes = 4096);
  ~MrCache();
  MrCache(const MrCache&) = delete;
  MrCache& operator=(const MrCache&) = delete;

  // A registration covering [addr, addr + bytes), referenced until release(). bytes > 0.
  Status acquire(const void* addr, size_t bytes, const Registration** out, bool persistent = false);
  void release(const Registration* registration);
  // The operation that handed over the user's buffers is over: drops every idle entry that is
  // not persistent. Referenced ones are dropped when released.
  void endOperation();
  // The memory [addr, addr + bytes) is going away: drops the entries that overlap it (at
  // release, for referenced ones).
  void invalidate(const void* addr, size_t bytes);

  size_t entries() const { return entries_.size(); }
  size_t registeredBytes() const { return registeredBytes_; }
  uint64_t registrations() const { return registrations_; }  // made so far (for tests)

 private:
  struct Entry {
    Registration registration;
    int references = 0;
    bool persistent = false;
    bool doomed = false;  // drop when the last reference goes
    uint64_t lastUse = 0;
  };

  Entry* find(uintptr_t start, uintptr_t end);
  Entry* entryOf(const Registration* registration);
  void drop(size_t index);
  void evictBeyondCapacity(const Entry* keep);

  RegisterFn register_;
  DeregisterFn deregister_;
  size_t capacityBytes_;
  size_t maxEntries_;
  uintptr_t pageMask_;
  // Few entries (one per buffer in use), so a vector scanned linearly is the fastest lookup.
  // Entries are heap-allocated so that the Registration pointers handed out stay valid.
  std::vector<Entry*> entries_;
  size_t registeredBytes_ = 0;
  uint64_t clock_ = 0;
  uint64_t registrations_ = 0;
};

}  // namespace weft::rdma
