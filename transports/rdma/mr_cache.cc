#include "transports/rdma/mr_cache.h"

#include <algorithm>

namespace weft::rdma {

MrCache::MrCache(RegisterFn registerFn, DeregisterFn deregisterFn, size_t capacityBytes,
                 size_t maxEntries, size_t pageBytes)
    : register_(std::move(registerFn)),
      deregister_(std::move(deregisterFn)),
      capacityBytes_(capacityBytes),
      maxEntries_(std::max<size_t>(maxEntries, 1)),
      pageMask_(~(static_cast<uintptr_t>(pageBytes) - 1)) {}

MrCache::~MrCache() {
  for (Entry* entry : entries_) {
    deregister_(entry->registration);
    delete entry;
  }
}

MrCache::Entry* MrCache::find(uintptr_t start, uintptr_t end) {
  for (Entry* entry : entries_) {
    if (!entry->doomed && entry->registration.start <= start && entry->registration.end >= end) {
      return entry;
    }
  }
  return nullptr;
}

MrCache::Entry* MrCache::entryOf(const Registration* registration) {
  for (Entry* entry : entries_) {
    if (&entry->registration == registration) return entry;
  }
  return nullptr;
}

void MrCache::drop(size_t index) {
  Entry* entry = entries_[index];
  deregister_(entry->registration);
  registeredBytes_ -= entry->registration.end - entry->registration.start;
  entries_.erase(entries_.begin() + static_cast<std::ptrdiff_t>(index));
  delete entry;
}

Status MrCache::acquire(const void* addr, size_t bytes, const Registration** out, bool persistent) {
  const uintptr_t begin = reinterpret_cast<uintptr_t>(addr);
  uintptr_t start = begin & pageMask_;
  uintptr_t end = (begin + bytes + ~pageMask_) & pageMask_;
  if (Entry* hit = find(start, end)) {
    ++hit->references;
    hit->lastUse = ++clock_;
    hit->persistent |= persistent;
    *out = &hit->registration;
    return Status::ok();
  }
  // Idle entries that overlap or touch the new range are merged into it; busy ones stay (a
  // page may be registered more than once).
  std::vector<Entry*> merged;
  for (Entry* entry : entries_) {
    const Registration& r = entry->registration;
    if (entry->references == 0 && !entry->doomed && r.start <= end && r.end >= start) {
      start = std::min(start, r.start);
      end = std::max(end, r.end);
      persistent |= entry->persistent;
      merged.push_back(entry);
    }
  }
  Registration made;
  WEFT_TRY(register_(start, end - start, &made));
  for (size_t i = entries_.size(); i-- > 0;) {
    if (std::find(merged.begin(), merged.end(), entries_[i]) != merged.end()) drop(i);
  }
  auto* entry = new Entry{made, 1, persistent, false, ++clock_};
  entries_.push_back(entry);
  registeredBytes_ += made.end - made.start;
  ++registrations_;
  evictBeyondCapacity(entry);
  *out = &entry->registration;
  return Status::ok();
}

void MrCache::release(const Registration* registration) {
  Entry* entry = entryOf(registration);
  if (entry == nullptr || entry->references == 0) return;
  if (--entry->references == 0 && entry->doomed) {
    drop(
        static_cast<size_t>(std::find(entries_.begin(), entries_.end(), entry) - entries_.begin()));
  }
}

void MrCache::endOperation() {
  for (size_t i = entries_.size(); i-- > 0;) {
    Entry* entry = entries_[i];
    if (entry->persistent) continue;
    if (entry->references == 0) {
      drop(i);
    } else {
      entry->doomed = true;
    }
  }
}

void MrCache::invalidate(const void* addr, size_t bytes) {
  const uintptr_t start = reinterpret_cast<uintptr_t>(addr);
  const uintptr_t end = start + bytes;
  for (size_t i = entries_.size(); i-- > 0;) {
    Entry* entry = entries_[i];
    if (entry->registration.start >= end || entry->registration.end <= start) continue;
    if (entry->references == 0) {
      drop(i);
    } else {
      entry->doomed = true;
    }
  }
}

void MrCache::evictBeyondCapacity(const Entry* keep) {
  while (registeredBytes_ > capacityBytes_ || entries_.size() > maxEntries_) {
    size_t victim = entries_.size();
    for (size_t i = 0; i < entries_.size(); ++i) {
      const Entry* entry = entries_[i];
      if (entry == keep || entry->references > 0) continue;
      if (victim == entries_.size() || entry->lastUse < entries_[victim]->lastUse) victim = i;
    }
    if (victim == entries_.size()) return;  // everything else is in use
    drop(victim);
  }
}

}  // namespace weft::rdma
