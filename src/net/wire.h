// Little-endian fixed-width field helpers for the wire formats (handshake, rendezvous, ring).
// Byte-by-byte so that the encoding is the same on every host and no unaligned access happens.
#pragma once

#include <cstddef>
#include <cstdint>

namespace weft::net::wire {

inline void putU16(uint8_t* out, uint16_t value) {
  for (size_t i = 0; i < 2; ++i) out[i] = static_cast<uint8_t>(value >> (8 * i));
}
inline void putU32(uint8_t* out, uint32_t value) {
  for (size_t i = 0; i < 4; ++i) out[i] = static_cast<uint8_t>(value >> (8 * i));
}
inline void putU64(uint8_t* out, uint64_t value) {
  for (size_t i = 0; i < 8; ++i) out[i] = static_cast<uint8_t>(value >> (8 * i));
}
inline uint16_t getU16(const uint8_t* in) {
  return static_cast<uint16_t>(in[0] | (in[1] << 8));
}
inline uint32_t getU32(const uint8_t* in) {
  uint32_t value = 0;
  for (size_t i = 0; i < 4; ++i) value |= static_cast<uint32_t>(in[i]) << (8 * i);
  return value;
}
inline uint64_t getU64(const uint8_t* in) {
  uint64_t value = 0;
  for (size_t i = 0; i < 8; ++i) value |= static_cast<uint64_t>(in[i]) << (8 * i);
  return value;
}

}  // namespace weft::net::wire
