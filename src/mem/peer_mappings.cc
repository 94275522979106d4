#include "mem/peer_mappings.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <string_view>

namespace weft::mem {
namespace {

std::string rankName(int rank) {
  return "rank " + std::to_string(rank);
}

// Whether descriptor `fd` (ours) is the memfd of allocation `number`: /proc shows it as
// "/memfd:weft-mem-<number> (deleted)". A peer's descriptor number can be reused for anything
// once the peer frees the allocation; the name tells.
bool isAllocation(int fd, uint64_t number) {
  char target[128];
  const std::string link = "/proc/self/fd/" + std::to_string(fd);
  const ssize_t length = readlink(link.c_str(), target, sizeof target - 1);
  if (length <= 0) return false;
  const std::string expected = std::string("/memfd:") + memfdPrefix() + std::to_string(number);
  const std::string_view name(target, static_cast<size_t>(length));
  return name.starts_with(expected) &&
         (name.size() == expected.size() || name[expected.size()] == ' ');
}

}  // namespace

PeerMappings::~PeerMappings() {
  for (auto& [key, mapping] : mappings_) munmap(mapping.base, mapping.bytes);
}

Status PeerMappings::map(int rank, pid_t pid, const SharedExtent& extent, Mapping* out) {
  const std::string path = "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(extent.fd);
  const int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    return systemError("opening " + rankName(rank) + "'s weftMemAlloc memory (" + path + ")",
                       errno);
  }
  struct stat info;
  const size_t bytes = static_cast<size_t>(extent.pages) * pageBytes();
  if (!isAllocation(fd, extent.allocation) || fstat(fd, &info) != 0 ||
      static_cast<size_t>(info.st_size) < bytes) {
    close(fd);
    return invalidUsage(rankName(rank) + " named weftMemAlloc memory it no longer holds (" + path +
                        "): it was freed during the call");
  }
  void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int error = errno;
  close(fd);
  if (base == MAP_FAILED) {
    return systemError("mapping " + rankName(rank) + "'s weftMemAlloc memory", error);
  }
  out->base = static_cast<char*>(base);
  out->bytes = bytes;
  return Status::ok();
}

void PeerMappings::dropUnused() {
  while (mappings_.size() >= capacity_) {
    auto victim = mappings_.end();
    for (auto it = mappings_.begin(); it != mappings_.end(); ++it) {
      if (it->second.lastCall == call_) continue;
      if (victim == mappings_.end() || it->second.lastCall < victim->second.lastCall) victim = it;
    }
    if (victim == mappings_.end()) return;  // all in use: grow past the capacity
    munmap(victim->second.base, victim->second.bytes);
    mappings_.erase(victim);
  }
}

Status PeerMappings::resolve(int rank, pid_t pid, const SharedExtent& extent, size_t bytes,
                             char** out) {
  const Key key{rank, extent.allocation};
  auto it = mappings_.find(key);
  if (it == mappings_.end()) {
    dropUnused();
    Mapping mapping;
    WEFT_TRY(map(rank, pid, extent, &mapping));
    it = mappings_.emplace(key, mapping).first;
  }
  Mapping& mapping = it->second;
  mapping.lastCall = call_;
  if (extent.offset > mapping.bytes || bytes > mapping.bytes - extent.offset) {
    return invalidUsage(rankName(rank) + " named " + std::to_string(bytes) + " bytes at offset " +
                        std::to_string(extent.offset) + " of a " + std::to_string(mapping.bytes) +
                        "-byte weftMemAlloc allocation");
  }
  *out = mapping.base + extent.offset;
  return Status::ok();
}

}  // namespace weft::mem
