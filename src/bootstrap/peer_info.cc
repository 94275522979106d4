#include "bootstrap/peer_info.h"

#include <algorithm>
#include <cstring>

namespace weft {
namespace {

constexpr uint32_t kVersion = 3;
constexpr size_t kMaxStringBytes = 4096;

void putU32(std::string& out, uint32_t value) {
  out.append(reinterpret_cast<char*>(&value), 4);
}
void putU64(std::string& out, uint64_t value) {
  out.append(reinterpret_cast<char*>(&value), 8);
}
void putString(std::string& out, const std::string& value) {
  putU32(out, static_cast<uint32_t>(value.size()));
  out += value;
}

class Reader {
 public:
  explicit Reader(const std::string& bytes) : bytes_(bytes) {}
  bool u32(uint32_t* out) { return take(out, 4); }
  bool u64(uint64_t* out) { return take(out, 8); }
  bool string(std::string* out) {
    uint32_t length;
    if (!u32(&length) || length > kMaxStringBytes || bytes_.size() - offset_ < length) return false;
    out->assign(bytes_.data() + offset_, length);
    offset_ += length;
    return true;
  }
  bool finished() const { return offset_ == bytes_.size(); }

 private:
  bool take(void* out, size_t n) {
    if (bytes_.size() - offset_ < n) return false;
    std::memcpy(out, bytes_.data() + offset_, n);
    offset_ += n;
    return true;
  }
  const std::string& bytes_;
  size_t offset_ = 0;
};

}  // namespace

std::string PeerInfo::describe() const {
  return "rank " + std::to_string(rank) + " (" + hostName + ":pid " + std::to_string(pid) + ")";
}

std::string encodePeerInfo(const PeerInfo& info) {
  std::string out;
  putU32(out, kVersion);
  putU32(out, static_cast<uint32_t>(info.rank));
  putU64(out, info.hostId);
  putU64(out, info.machineId);
  putU32(out, static_cast<uint32_t>(info.pid));
  putU64(out, info.startTicks);
  putU32(out, static_cast<uint32_t>(info.cores));
  putString(out, info.hostName);
  putString(out, info.tcpAddress);
  putString(out, info.shmAddress);
  return out;
}

Status decodePeerInfo(const std::string& bytes, PeerInfo* out) {
  Reader reader(bytes);
  uint32_t version, rank, pid, cores;
  if (!reader.u32(&version) || version != kVersion) {
    return invalidUsage("peer description has an unknown version (mixed weft versions?)");
  }
  if (!reader.u32(&rank) || !reader.u64(&out->hostId) || !reader.u64(&out->machineId) ||
      !reader.u32(&pid) || !reader.u64(&out->startTicks) || !reader.u32(&cores) ||
      !reader.string(&out->hostName) || !reader.string(&out->tcpAddress) ||
      !reader.string(&out->shmAddress) || !reader.finished()) {
    return invalidUsage("peer description is malformed");
  }
  out->rank = static_cast<int>(rank);
  out->pid = static_cast<int32_t>(pid);
  out->cores = static_cast<int32_t>(std::min<uint32_t>(cores, 1 << 20));
  return Status::ok();
}

}  // namespace weft
