#include "transports/rdma/mr_cache.h"

#include <catch2/catch.hpp>
#include <map>

using weft::Status;
using weft::rdma::MrCache;
using weft::rdma::Registration;

namespace {

// Stands in for ibv_reg_mr: hands out keys, remembers what is registered, can be made to fail.
struct FakeNic {
  std::map<uint32_t, std::pair<uintptr_t, uintptr_t>> live;  // key -> range
  uint32_t nextKey = 1;
  bool failNext = false;

  MrCache cache(size_t capacity, size_t maxEntries) {
    return MrCache(
        [this](uintptr_t start, size_t bytes, Registration* out) {
          if (failNext) {
            failNext = false;
            return weft::systemError("ibv_reg_mr", 12);
          }
          uint32_t key = nextKey++;
          live[key] = {start, start + bytes};
          *out = Registration{start, start + bytes, key, key, nullptr};
          return Status::ok();
        },
        [this](const Registration& r) { REQUIRE(live.erase(r.lkey) == 1); }, capacity, maxEntries);
  }
};

const void* at(uintptr_t address) {
  return reinterpret_cast<const void*>(address);
}

}  // namespace

TEST_CASE("registration cache: page-aligned entries, hits inside them") {
  FakeNic nic;
  MrCache cache = nic.cache(1 << 30, 64);
  const Registration* r = nullptr;
  REQUIRE(cache.acquire(at(0x10010), 100, &r).isOk());
  CHECK(r->start == 0x10000);
  CHECK(r->end == 0x11000);
  const Registration* again = nullptr;
  REQUIRE(cache.acquire(at(0x10800), 0x800, &again).isOk());
  CHECK(again == r);
  CHECK(cache.registrations() == 1);
  cache.release(r);
  cache.release(again);
  CHECK(nic.live.size() == 1);  // idle, still cached within the operation
}

TEST_CASE("registration cache: overlapping and touching idle entries merge into one") {
  FakeNic nic;
  MrCache cache = nic.cache(1 << 30, 64);
  const Registration* a = nullptr;
  const Registration* b = nullptr;
  REQUIRE(cache.acquire(at(0x10000), 0x1000, &a).isOk());
  cache.release(a);
  REQUIRE(cache.acquire(at(0x11000), 0x1000, &b).isOk());  // touches a: one entry for both
  CHECK(cache.entries() == 1);
  CHECK(b->start == 0x10000);
  CHECK(b->end == 0x12000);
  CHECK(nic.live.size() == 1);
  // A busy entry is never deregistered under its user: the new one overlaps it instead.
  const Registration* c = nullptr;
  REQUIRE(cache.acquire(at(0x11800), 0x2000, &c).isOk());
  CHECK(cache.entries() == 2);
  CHECK(nic.live.size() == 2);
  CHECK(c->start <= 0x11000);
  CHECK(c->end >= 0x13800);
  cache.release(b);
  cache.release(c);
}

TEST_CASE("registration cache: endOperation drops user entries, keeps persistent ones") {
  FakeNic nic;
  MrCache cache = nic.cache(1 << 30, 64);
  const Registration* user = nullptr;
  const Registration* owned = nullptr;
  const Registration* busy = nullptr;
  REQUIRE(cache.acquire(at(0x100000), 4096, &user).isOk());
  REQUIRE(cache.acquire(at(0x200000), 4096, &owned, true).isOk());
  REQUIRE(cache.acquire(at(0x300000), 4096, &busy).isOk());
  cache.release(user);
  cache.release(owned);
  cache.endOperation();
  CHECK(nic.live.size() == 2);  // owned, and busy until released
  cache.release(busy);
  CHECK(nic.live.size() == 1);
  // The freed range is registered anew next time, never served by a stale entry.
  const Registration* fresh = nullptr;
  REQUIRE(cache.acquire(at(0x100000), 4096, &fresh).isOk());
  CHECK(cache.registrations() == 4);
  cache.release(fresh);
}

TEST_CASE("registration cache: least recently used idle entries go beyond the capacity") {
  FakeNic nic;
  MrCache cache = nic.cache(3 * 4096, 64);
  const Registration* r[4] = {};
  for (int i = 0; i < 3; ++i) {
    REQUIRE(cache.acquire(at(0x100000 * (i + 1)), 4096, &r[i]).isOk());
    cache.release(r[i]);
  }
  const Registration* touch = nullptr;
  REQUIRE(cache.acquire(at(0x100000), 4096, &touch).isOk());  // the first is now the newest
  cache.release(touch);
  REQUIRE(cache.acquire(at(0x400000), 4096, &r[3]).isOk());
  CHECK(cache.entries() == 3);
  bool secondGone = true;
  for (auto& [key, range] : nic.live) secondGone &= range.first != 0x200000;
  CHECK(secondGone);
  cache.release(r[3]);
  // With every entry busy the cache goes over its capacity rather than fail.
  const Registration* held[5] = {};
  for (int i = 0; i < 5; ++i)
    REQUIRE(cache.acquire(at(0x1000000 * (i + 1)), 4096, &held[i]).isOk());
  CHECK(cache.entries() >= 5);
  for (auto* h : held) cache.release(h);
}

TEST_CASE("registration cache: entry count cap, refcounts and invalidation") {
  FakeNic nic;
  MrCache cache = nic.cache(1 << 30, 2);
  const Registration* a = nullptr;
  const Registration* b = nullptr;
  const Registration* c = nullptr;
  REQUIRE(cache.acquire(at(0x100000), 4096, &a).isOk());
  REQUIRE(cache.acquire(at(0x100000), 4096, &a).isOk());  // two references
  REQUIRE(cache.acquire(at(0x300000), 4096, &b).isOk());
  cache.release(b);
  REQUIRE(cache.acquire(at(0x500000), 4096, &c).isOk());
  CHECK(cache.entries() == 2);  // b (idle) evicted for c
  cache.invalidate(at(0x100800), 16);
  CHECK(nic.live.count(a->lkey) == 1);  // referenced: dropped at its last release
  const uint32_t keyOfA = a->lkey;
  cache.release(a);
  CHECK(nic.live.count(keyOfA) == 1);
  cache.release(a);
  CHECK(nic.live.count(keyOfA) == 0);
  cache.release(c);
}

TEST_CASE("registration cache: a failed registration leaves the idle entries alone") {
  FakeNic nic;
  MrCache cache = nic.cache(1 << 30, 64);
  const Registration* a = nullptr;
  REQUIRE(cache.acquire(at(0x100000), 4096, &a).isOk());
  cache.release(a);
  nic.failNext = true;
  const Registration* b = nullptr;
  CHECK_FALSE(cache.acquire(at(0x100800), 8192, &b).isOk());
  CHECK(cache.entries() == 1);
  CHECK(nic.live.size() == 1);
  const Registration* again = nullptr;
  REQUIRE(cache.acquire(at(0x100000), 4096, &again).isOk());
  CHECK(cache.registrations() == 1);
  cache.release(again);
}
