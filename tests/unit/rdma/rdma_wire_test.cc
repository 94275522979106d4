#include "transports/rdma/rdma_wire.h"

#include <catch2/catch.hpp>
#include <cstring>

using weft::rdma::chunksFor;
using weft::rdma::ConnectionDetails;
using weft::rdma::decodeDetails;
using weft::rdma::decodeImm;
using weft::rdma::encodeDetails;
using weft::rdma::encodeImm;
using weft::rdma::ImmKind;
using weft::rdma::kDetailsBytes;
using weft::rdma::kMaxImmValue;
using weft::rdma::kSlotHeaderBytes;
using weft::rdma::slotPayload;

namespace {

ConnectionDetails sample() {
  ConnectionDetails d;
  d.qpn = 0xabcdef;
  d.psn = 0x123456;
  for (int i = 0; i < 16; ++i) d.gid[i] = static_cast<uint8_t>(0xf0 + i);
  d.lid = 0x1234;
  d.mtu = 3;
  d.ethernet = 1;
  d.regionAddress = 0x00007f0012345000ull;
  d.regionKey = 0xdeadbeef;
  d.slots = 16;
  d.slotBytes = 65536;
  d.ctsEntries = 16;
  return d;
}

bool contains(const weft::Status& status, const std::string& text) {
  return status.message().find(text) != std::string::npos;
}

}  // namespace

TEST_CASE("rdma connection details survive the wire, every field") {
  uint8_t wire[kDetailsBytes];
  encodeDetails(sample(), wire);
  ConnectionDetails back;
  REQUIRE(decodeDetails(wire, sizeof(wire), &back).isOk());
  const ConnectionDetails d = sample();
  CHECK(back.qpn == d.qpn);
  CHECK(back.psn == d.psn);
  CHECK(back.gid == d.gid);
  CHECK(back.lid == d.lid);
  CHECK(back.mtu == d.mtu);
  CHECK(back.ethernet == d.ethernet);
  CHECK(back.regionAddress == d.regionAddress);
  CHECK(back.regionKey == d.regionKey);
  CHECK(back.slots == d.slots);
  CHECK(back.slotBytes == d.slotBytes);
  CHECK(back.ctsEntries == d.ctsEntries);
  // Little-endian on the wire whatever the host: the version leads.
  CHECK(wire[0] == 1);
  CHECK(wire[1] == 0);
}

TEST_CASE("rdma connection details reject truncation, versions and impossible values") {
  uint8_t wire[kDetailsBytes];
  ConnectionDetails out;
  encodeDetails(sample(), wire);
  CHECK(contains(decodeDetails(wire, sizeof(wire) - 1, &out), "expected"));
  wire[0] = 9;
  CHECK(contains(decodeDetails(wire, sizeof(wire), &out), "version 9"));

  auto rejects = [](void (*spoil)(ConnectionDetails&), const char* what) {
    ConnectionDetails d = sample();
    spoil(d);
    uint8_t bytes[kDetailsBytes];
    encodeDetails(d, bytes);
    ConnectionDetails decoded;
    weft::Status status = decodeDetails(bytes, sizeof(bytes), &decoded);
    INFO(what << ": " << status.message());
    return !status.isOk() && contains(status, what);
  };
  CHECK(rejects([](ConnectionDetails& d) { d.qpn = 1u << 24; }, "queue pair"));
  CHECK(rejects([](ConnectionDetails& d) { d.qpn = 0; }, "queue pair"));
  CHECK(rejects([](ConnectionDetails& d) { d.psn = 1u << 24; }, "sequence"));
  CHECK(rejects([](ConnectionDetails& d) { d.mtu = 6; }, "MTU"));
  CHECK(rejects([](ConnectionDetails& d) { d.mtu = 0; }, "MTU"));
  CHECK(rejects([](ConnectionDetails& d) { d.ethernet = 2; }, "link layer"));
  CHECK(rejects([](ConnectionDetails& d) { d.slots = 0; }, "slot count"));
  CHECK(rejects([](ConnectionDetails& d) { d.slots = 5000; }, "slot count"));
  CHECK(rejects([](ConnectionDetails& d) { d.slotBytes = 100; }, "slot size"));
  CHECK(rejects([](ConnectionDetails& d) { d.slotBytes = 65536 + 8; }, "slot size"));
  CHECK(rejects([](ConnectionDetails& d) { d.ctsEntries = 0; }, "clear-to-send"));
  CHECK(rejects([](ConnectionDetails& d) { d.regionAddress = 0; }, "region"));
}

TEST_CASE("rdma immediates: 4 bits of kind, 28 of value, unknown kinds refused") {
  for (ImmKind kind : {ImmKind::kEager, ImmKind::kCredit, ImmKind::kCts, ImmKind::kZeroCopyDone}) {
    for (uint32_t value : {0u, 1u, 15u, 1000u, kMaxImmValue}) {
      ImmKind k;
      uint32_t v;
      REQUIRE(decodeImm(encodeImm(kind, value), &k, &v));
      CHECK(k == kind);
      CHECK(v == value);
    }
  }
  ImmKind k;
  uint32_t v;
  CHECK_FALSE(decodeImm(0, &k, &v));
  CHECK_FALSE(decodeImm(0xf0000000u, &k, &v));
  // A value too large for 28 bits cannot leak into the kind.
  REQUIRE(decodeImm(encodeImm(ImmKind::kCredit, 0xffffffffu), &k, &v));
  CHECK(k == ImmKind::kCredit);
  CHECK(v == kMaxImmValue);
}

TEST_CASE("rdma eager chunking: zero-length and short messages take one chunk") {
  const uint32_t slotBytes = 4096;
  const size_t payload = slotPayload(slotBytes);
  CHECK(payload == 4096 - kSlotHeaderBytes);
  CHECK(chunksFor(0, slotBytes) == 1);
  CHECK(chunksFor(1, slotBytes) == 1);
  CHECK(chunksFor(payload, slotBytes) == 1);
  CHECK(chunksFor(payload + 1, slotBytes) == 2);
  CHECK(chunksFor(10 * payload, slotBytes) == 10);
}
