#include "transports/rdma/rdma_wire.h"

#include <arpa/inet.h>

#include <cstdio>
#include <cstring>

#include "net/wire.h"

namespace weft::rdma {
namespace {

using net::wire::getU16;
using net::wire::getU32;
using net::wire::getU64;
using net::wire::putU16;
using net::wire::putU32;
using net::wire::putU64;

constexpr uint32_t kMax24Bits = (1u << 24) - 1;

}  // namespace

void encodeDetails(const ConnectionDetails& details, uint8_t* out) {
  putU32(out, kWireVersion);
  putU32(out + 4, details.qpn);
  putU32(out + 8, details.psn);
  std::memcpy(out + 12, details.gid.data(), 16);
  putU16(out + 28, details.lid);
  out[30] = details.mtu;
  out[31] = details.ethernet;
  putU64(out + 32, details.regionAddress);
  putU32(out + 40, details.regionKey);
  putU32(out + 44, details.slots);
  putU32(out + 48, details.slotBytes);
  putU32(out + 52, details.ctsEntries);
}

Status decodeDetails(const uint8_t* in, size_t length, ConnectionDetails* out) {
  if (length != kDetailsBytes) {
    return invalidUsage("rdma connection details have " + std::to_string(length) +
                        " bytes, expected " + std::to_string(kDetailsBytes));
  }
  const uint32_t version = getU32(in);
  if (version != kWireVersion) {
    return invalidUsage("rdma connection details have version " + std::to_string(version) +
                        ", this weft speaks " + std::to_string(kWireVersion) +
                        " (mixed weft versions?)");
  }
  ConnectionDetails d;
  d.qpn = getU32(in + 4);
  d.psn = getU32(in + 8);
  std::memcpy(d.gid.data(), in + 12, 16);
  d.lid = getU16(in + 28);
  d.mtu = in[30];
  d.ethernet = in[31];
  d.regionAddress = getU64(in + 32);
  d.regionKey = getU32(in + 40);
  d.slots = getU32(in + 44);
  d.slotBytes = getU32(in + 48);
  d.ctsEntries = getU32(in + 52);
  const char* bad = nullptr;
  if (d.qpn == 0 || d.qpn > kMax24Bits) {
    bad = "queue pair number";
  } else if (d.psn > kMax24Bits) {
    bad = "packet sequence number";
  } else if (d.mtu < 1 || d.mtu > 5) {
    bad = "MTU";
  } else if (d.ethernet > 1) {
    bad = "link layer";
  } else if (d.slots == 0 || d.slots > kMaxSlots) {
    bad = "slot count";
  } else if (d.slotBytes < kMinSlotBytes || d.slotBytes > kMaxSlotBytes || d.slotBytes % 64 != 0) {
    bad = "slot size";
  } else if (d.ctsEntries == 0 || d.ctsEntries > kMaxCtsEntries) {
    bad = "clear-to-send entry count";
  } else if (d.regionAddress == 0) {
    bad = "region address";
  }
  if (bad != nullptr) return invalidUsage(std::string("rdma connection details: bad ") + bad);
  *out = d;
  return Status::ok();
}

uint32_t encodeImm(ImmKind kind, uint32_t value) {
  return (static_cast<uint32_t>(kind) << kImmValueBits) | (value & kMaxImmValue);
}

bool decodeImm(uint32_t imm, ImmKind* kind, uint32_t* value) {
  const uint32_t raw = imm >> kImmValueBits;
  if (raw < static_cast<uint32_t>(ImmKind::kEager) ||
      raw > static_cast<uint32_t>(ImmKind::kZeroCopyDone)) {
    return false;
  }
  *kind = static_cast<ImmKind>(raw);
  *value = imm & kMaxImmValue;
  return true;
}

std::string describeGid(const std::array<uint8_t, 16>& gid) {
  char text[INET6_ADDRSTRLEN] = {};
  if (inet_ntop(AF_INET6, gid.data(), text, sizeof(text)) == nullptr) return "?";
  return text;
}

}  // namespace weft::rdma
