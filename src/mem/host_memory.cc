#include "mem/host_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <deque>
#include <iterator>
#include <map>
#include <mutex>
#include <string>

namespace weft::mem {
namespace {

struct Allocation {
  size_t bytes;  // mapped, a whole number of pages
  int fd;
  uint64_t number;
};

// Released ranges are remembered so that a call given one fails naming the buffer. Their pages
// are dropped but the addresses stay reserved (PROT_NONE), so that no other mapping can take
// them while they are remembered and be mistaken for freed memory; the oldest are unmapped and
// forgotten past this many.
constexpr size_t kReleasedRemembered = 256;

struct Registry {
  std::mutex mutex;
  std::map<uintptr_t, Allocation> live;  // by start address
  std::deque<std::pair<uintptr_t, uintptr_t>> released;
  std::atomic<bool> anyReleased{false};
  std::atomic<size_t> liveCount{0};
  uint64_t nextNumber = 1;
};

Registry& registry() {
  static Registry* instance = new Registry;  // never destroyed: used until the process ends
  return *instance;
}

size_t roundUpToPages(size_t bytes) {
  const size_t page = pageBytes();
  return (bytes + page - 1) / page * page;
}

// The allocation holding [address, address + bytes), or end().
std::map<uintptr_t, Allocation>::iterator containing(Registry& reg, uintptr_t address,
                                                     size_t bytes) {
  auto it = reg.live.upper_bound(address);
  if (it == reg.live.begin()) return reg.live.end();
  --it;
  const uintptr_t end = it->first + it->second.bytes;
  if (address >= end || bytes > end - address) return reg.live.end();
  return it;
}

}  // namespace

size_t pageBytes() {
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return page;
}

const char* memfdPrefix() {
  return "weft-mem-";
}

Status allocate(size_t bytes, void** out) {
  const size_t mapped = roundUpToPages(bytes);
  if (mapped / pageBytes() > UINT32_MAX) {
    return invalidArgument("size " + std::to_string(bytes) + " is too large for weftMemAlloc");
  }
  Registry& reg = registry();
  uint64_t number;
  {
    std::lock_guard<std::mutex> lock(reg.mutex);
    number = reg.nextNumber++;
  }
  const std::string name = memfdPrefix() + std::to_string(number);
  int fd = memfd_create(name.c_str(), MFD_CLOEXEC);
  if (fd < 0) return systemError("memfd_create for weftMemAlloc", errno);
  if (ftruncate(fd, static_cast<off_t>(mapped)) != 0) {
    const int error = errno;
    close(fd);
    return systemError("ftruncate of weftMemAlloc's " + std::to_string(mapped) + " bytes", error);
  }
  void* base = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    const int error = errno;
    close(fd);
    return systemError("mmap of weftMemAlloc's " + std::to_string(mapped) + " bytes", error);
  }
  const auto start = reinterpret_cast<uintptr_t>(base);
  {
    std::lock_guard<std::mutex> lock(reg.mutex);
    reg.live.emplace(start, Allocation{mapped, fd, number});
    reg.liveCount.store(reg.live.size(), std::memory_order_release);
    // The address range is in use again: it no longer counts as released.
    std::erase_if(reg.released, [&](const auto& range) {
      return range.first < start + mapped && start < range.second;
    });
  }
  *out = base;
  return Status::ok();
}

Status release(void* ptr) {
  Registry& reg = registry();
  Allocation allocation;
  const auto start = reinterpret_cast<uintptr_t>(ptr);
  {
    std::lock_guard<std::mutex> lock(reg.mutex);
    auto it = reg.live.find(start);
    if (it == reg.live.end()) {
      const bool inside = containing(reg, start, 1) != reg.live.end();
      return invalidArgument(std::string("ptr ") +
                             (inside
                                  ? "points inside an allocation of weftMemAlloc, not at its start"
                                  : "was not returned by weftMemAlloc, or was freed already"));
    }
    allocation = it->second;
    reg.live.erase(it);
    reg.liveCount.store(reg.live.size(), std::memory_order_release);
    // Replaces the shared pages with an inaccessible reservation in one step.
    void* reserved = mmap(ptr, allocation.bytes, PROT_NONE,
                          MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (reserved == MAP_FAILED) {
      munmap(ptr, allocation.bytes);
    } else {
      reg.released.emplace_back(start, start + allocation.bytes);
      if (reg.released.size() > kReleasedRemembered) {
        const auto [oldest, oldestEnd] = reg.released.front();
        munmap(reinterpret_cast<void*>(oldest), oldestEnd - oldest);
        reg.released.pop_front();
      }
      reg.anyReleased.store(true, std::memory_order_release);
    }
  }
  close(allocation.fd);
  return Status::ok();
}

std::optional<SharedExtent> find(const void* ptr, size_t bytes) {
  Registry& reg = registry();
  if (reg.liveCount.load(std::memory_order_acquire) == 0) return std::nullopt;
  const auto address = reinterpret_cast<uintptr_t>(ptr);
  std::lock_guard<std::mutex> lock(reg.mutex);
  auto it = containing(reg, address, bytes);
  if (it == reg.live.end()) return std::nullopt;
  SharedExtent extent;
  extent.allocation = it->second.number;
  extent.fd = static_cast<uint32_t>(it->second.fd);
  extent.pages = static_cast<uint32_t>(it->second.bytes / pageBytes());
  extent.offset = address - it->first;
  return extent;
}

bool wasReleased(const void* ptr) {
  Registry& reg = registry();
  if (!reg.anyReleased.load(std::memory_order_acquire)) return false;
  const auto address = reinterpret_cast<uintptr_t>(ptr);
  std::lock_guard<std::mutex> lock(reg.mutex);
  for (const auto& [begin, end] : reg.released) {
    if (address >= begin && address < end) return true;
  }
  return false;
}

}  // namespace weft::mem
