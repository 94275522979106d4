#include "transports/rdma/port_choice.h"

#include <cstdlib>

#include "net/address.h"

namespace weft::rdma {

bool isZeroGid(const std::array<uint8_t, 16>& gid) {
  for (uint8_t byte : gid) {
    if (byte != 0) return false;
  }
  return true;
}

bool isIpv4MappedGid(const std::array<uint8_t, 16>& gid) {
  for (int i = 0; i < 10; ++i) {
    if (gid[i] != 0) return false;
  }
  return gid[10] == 0xff && gid[11] == 0xff;
}

bool isLinkLocalGid(const std::array<uint8_t, 16>& gid) {
  return gid[0] == 0xfe && (gid[1] & 0xc0) == 0x80;
}

Status chooseGid(const std::vector<GidCandidate>& table, int forcedIndex, bool ethernet,
                 GidCandidate* out) {
  if (forcedIndex >= 0) {
    for (const GidCandidate& candidate : table) {
      if (candidate.index != forcedIndex) continue;
      if (isZeroGid(candidate.gid)) {
        return invalidUsage("WEFT_IB_GID_INDEX=" + std::to_string(forcedIndex) +
                            " names an empty GID");
      }
      *out = candidate;
      return Status::ok();
    }
    return invalidUsage("WEFT_IB_GID_INDEX=" + std::to_string(forcedIndex) +
                        " is beyond the GID table (" + std::to_string(table.size()) + " entries)");
  }
  // Preference ranks, lower is better; 0 disqualifies.
  auto rank = [ethernet](const GidCandidate& c) {
    if (isZeroGid(c.gid)) return 0;
    if (!ethernet) return 1;
    if (c.kind == GidKind::kRoceV2 && isIpv4MappedGid(c.gid)) return 1;
    if (c.kind == GidKind::kRoceV2) return 2;
    return 3;
  };
  const GidCandidate* best = nullptr;
  for (const GidCandidate& candidate : table) {
    int r = rank(candidate);
    if (r == 0) continue;
    if (best == nullptr || r < rank(*best) || (r == rank(*best) && candidate.index < best->index)) {
      best = &candidate;
    }
  }
  if (best == nullptr) {
    return invalidUsage("no usable GID (" + std::to_string(table.size()) +
                        " entries, all empty; is the port's network interface up with an "
                        "address?)");
  }
  *out = *best;
  return Status::ok();
}

bool hcaAdmits(const std::string& filter, const std::string& device, int* port) {
  *port = 0;
  if (filter.empty()) return true;
  size_t pos = 0;
  std::string flags;
  while (pos < filter.size() && (filter[pos] == '^' || filter[pos] == '=')) flags += filter[pos++];
  const bool exclude = flags.find('^') != std::string::npos;
  const bool exact = flags.find('=') != std::string::npos;
  // The names alone go to the shared NCCL-style matcher; a ":port" is looked up here.
  std::string names = flags;
  for (bool first = true; pos <= filter.size(); first = false) {
    size_t comma = filter.find(',', pos);
    if (comma == std::string::npos) comma = filter.size();
    std::string entry = filter.substr(pos, comma - pos);
    pos = comma + 1;
    size_t colon = entry.find(':');
    std::string name = entry.substr(0, colon);
    names += (first ? "" : ",") + name;
    bool matches = exact ? device == name : !name.empty() && device.rfind(name, 0) == 0;
    if (!exclude && matches && colon != std::string::npos && *port == 0) {
      *port = std::atoi(entry.c_str() + colon + 1);
    }
  }
  return net::interfaceMatches(names, device);
}

}  // namespace weft::rdma
