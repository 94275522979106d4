#include "transports/rdma/port_choice.h"

#include <catch2/catch.hpp>

using weft::rdma::chooseGid;
using weft::rdma::commonMtu;
using weft::rdma::GidCandidate;
using weft::rdma::GidKind;
using weft::rdma::hcaAdmits;

namespace {

GidCandidate gid(int index, std::initializer_list<uint8_t> leading, GidKind kind,
                 std::initializer_list<uint8_t> trailing = {}) {
  GidCandidate c;
  c.index = index;
  int i = 0;
  for (uint8_t b : leading) c.gid[i++] = b;
  i = 16 - static_cast<int>(trailing.size());
  for (uint8_t b : trailing) c.gid[i++] = b;
  c.kind = kind;
  return c;
}

GidCandidate ipv4Mapped(int index, GidKind kind) {
  GidCandidate c;
  c.index = index;
  c.gid[10] = 0xff;
  c.gid[11] = 0xff;
  c.gid[12] = 10;
  c.gid[15] = 1;
  c.kind = kind;
  return c;
}

}  // namespace

TEST_CASE("GID choice on RoCE: IPv4-mapped RoCE v2 first, then RoCE v2, then anything") {
  const GidCandidate linkLocalV1 = gid(0, {0xfe, 0x80}, GidKind::kRoceV1, {1});
  const GidCandidate linkLocalV2 = gid(1, {0xfe, 0x80}, GidKind::kRoceV2, {1});
  const GidCandidate mappedV1 = ipv4Mapped(2, GidKind::kRoceV1);
  const GidCandidate mappedV2 = ipv4Mapped(3, GidKind::kRoceV2);
  GidCandidate chosen;
  REQUIRE(chooseGid({linkLocalV1, linkLocalV2, mappedV1, mappedV2}, -1, true, &chosen).isOk());
  CHECK(chosen.index == 3);
  REQUIRE(chooseGid({linkLocalV1, linkLocalV2, mappedV1}, -1, true, &chosen).isOk());
  CHECK(chosen.index == 1);
  REQUIRE(chooseGid({linkLocalV1, mappedV1}, -1, true, &chosen).isOk());
  CHECK(chosen.index == 0);
  // Types unknown (an old libibverbs): any non-empty GID, the lowest index.
  REQUIRE(chooseGid({gid(0, {}, GidKind::kUnknown), gid(1, {0xfe, 0x80}, GidKind::kUnknown, {7})},
                    -1, true, &chosen)
              .isOk());
  CHECK(chosen.index == 1);
}

TEST_CASE("GID choice: InfiniBand takes the first non-empty GID, empties are refused") {
  GidCandidate chosen;
  REQUIRE(
      chooseGid({gid(0, {}, GidKind::kInfiniBand), gid(1, {0xfe, 0x80}, GidKind::kInfiniBand, {2})},
                -1, false, &chosen)
          .isOk());
  CHECK(chosen.index == 1);
  weft::Status none = chooseGid({gid(0, {}, GidKind::kRoceV2)}, -1, true, &chosen);
  CHECK_FALSE(none.isOk());
  CHECK(none.message().find("no usable GID") != std::string::npos);
}

TEST_CASE("GID choice: a forced index must exist and be non-empty") {
  const std::vector<GidCandidate> table = {gid(0, {0xfe, 0x80}, GidKind::kRoceV1, {1}),
                                           gid(1, {}, GidKind::kRoceV2),
                                           ipv4Mapped(2, GidKind::kRoceV2)};
  GidCandidate chosen;
  REQUIRE(chooseGid(table, 0, true, &chosen).isOk());
  CHECK(chosen.index == 0);
  weft::Status empty = chooseGid(table, 1, true, &chosen);
  CHECK(empty.message().find("WEFT_IB_GID_INDEX=1") != std::string::npos);
  weft::Status beyond = chooseGid(table, 7, true, &chosen);
  CHECK(beyond.message().find("beyond") != std::string::npos);
}

TEST_CASE("path MTU is the smaller end's") {
  CHECK(commonMtu(5, 3) == 3);
  CHECK(commonMtu(1, 4) == 1);
  CHECK(commonMtu(3, 3) == 3);
}

TEST_CASE("WEFT_IB_HCA filter: prefixes, ports, exclusion, exact names") {
  int port = -1;
  CHECK(hcaAdmits("", "mlx5_0", &port));
  CHECK(port == 0);
  CHECK(hcaAdmits("mlx5", "mlx5_3", &port));
  CHECK_FALSE(hcaAdmits("mlx5", "rxe0", &port));
  CHECK(hcaAdmits("rxe0:1,mlx5_1:2", "mlx5_1", &port));
  CHECK(port == 2);
  CHECK(hcaAdmits("rxe0:1,mlx5_1:2", "rxe0", &port));
  CHECK(port == 1);
  CHECK_FALSE(hcaAdmits("^mlx5_1", "mlx5_1", &port));
  CHECK(hcaAdmits("^mlx5_1", "mlx5_0", &port));
  CHECK(port == 0);
  CHECK(hcaAdmits("=mlx5_1", "mlx5_1", &port));
  CHECK_FALSE(hcaAdmits("=mlx5_1", "mlx5_10", &port));
  CHECK(hcaAdmits("=mlx5_1:2", "mlx5_1", &port));
  CHECK(port == 2);
}
