// Which RDMA port and GID a rank uses, and the MTU of a pair: pure decisions over what the
// device reported, so that they can be tested without a device.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace weft::rdma {

enum class GidKind : uint8_t { kUnknown, kInfiniBand, kRoceV1, kRoceV2 };

struct GidCandidate {
  int index = 0;
  std::array<uint8_t, 16> gid{};
  GidKind kind = GidKind::kUnknown;
};

bool isZeroGid(const std::array<uint8_t, 16>& gid);
bool isIpv4MappedGid(const std::array<uint8_t, 16>& gid);  // ::ffff:a.b.c.d
bool isLinkLocalGid(const std::array<uint8_t, 16>& gid);   // fe80::/10

// The GID to use: `forcedIndex` (WEFT_IB_GID_INDEX) when >= 0, which must exist and be
// non-zero; else, on Ethernet (RoCE), a RoCE v2 IPv4-mapped GID (routable, what RoCE v2
// fabrics are configured for), then any other RoCE v2 GID, then any non-zero one; on
// InfiniBand the first non-zero GID. The lowest index wins within a preference. The error says
// what the table held.
Status chooseGid(const std::vector<GidCandidate>& table, int forcedIndex, bool ethernet,
                 GidCandidate* out);

// The path MTU of a pair: the smaller of the two ends' active MTUs (enum ibv_mtu values).
inline uint8_t commonMtu(uint8_t local, uint8_t remote) {
  return local < remote ? local : remote;
}

// WEFT_IB_HCA, NCCL_IB_HCA's syntax: "mlx5_0:1,mlx5_1" (prefixes, a ":port" suffix picks the
// port), "^mlx5_1" excludes, "=mlx5_0" exact names. Whether `device` is admitted, and which port
// the filter names for it (0: any).
bool hcaAdmits(const std::string& filter, const std::string& device, int* port);

}  // namespace weft::rdma
