// Scalar conversions between float and the two 16-bit floating-point formats weft reduces:
// IEEE 754 binary16 ("half", float16) and bfloat16 (the top half of a binary32).
//
// Every conversion is exact IEEE: round to nearest, ties to even; subnormals are kept, never
// flushed; values beyond the largest finite become infinity; NaN stays NaN and comes out quiet.
// For float16 the results, NaN payloads included, equal those of the x86 F16C / AVX-512
// instructions (vcvtph2ps, and vcvtps2ph with its rounding immediate set to nearest), so that a
// vectorised kernel and this scalar code agree bit for bit. Nothing here depends on the
// floating-point environment (rounding mode, DAZ/FTZ), which the hardware instructions ignore too.
//
// The code is written without branches (selects only) so that loops over it vectorise.
#pragma once

#include <bit>
#include <cstdint>

namespace weft {

inline float halfToFloat(uint16_t half) {
  const uint32_t sign = uint32_t(half & 0x8000u) << 16;
  const uint32_t magnitude = half & 0x7fffu;
  // Moving exponent and mantissa into place and re-biasing the exponent (15 -> 127) is all a
  // normal number needs; infinity and NaN need their exponent to stay all ones.
  uint32_t bits = (magnitude << 13) + ((127u - 15u) << 23);
  bits += magnitude >= 0x7c00u ? (128u - 16u) << 23 : 0u;
  // vcvtph2ps quiets a signalling NaN; matching it keeps the scalar and vector paths identical.
  bits |= magnitude > 0x7c00u ? 0x00400000u : 0u;
  // A subnormal m * 2^-24 is read as the normal 2^-14 * (1 + m / 1024) and 2^-14 is subtracted,
  // which the float unit does exactly (and without subnormal operands, so DAZ cannot interfere).
  const float twoPowMinus14 = std::bit_cast<float>(113u << 23);
  const float subnormal = std::bit_cast<float>((magnitude << 13) + (113u << 23)) - twoPowMinus14;
  bits = magnitude < 0x0400u ? std::bit_cast<uint32_t>(subnormal) : bits;
  return std::bit_cast<float>(bits | sign);
}

inline uint16_t floatToHalf(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  const uint32_t sign = (bits >> 16) & 0x8000u;
  const uint32_t magnitude = bits & 0x7fffffffu;

  // Normal results (|value| >= 2^-14): re-bias the exponent (127 -> 15), then round the 13 bits
  // that drop off. Adding 0xfff plus the kept lowest bit rounds half to even; a carry out of the
  // mantissa correctly bumps the exponent, up to infinity (0x7c00) and beyond, hence the clamp.
  const uint32_t rebiased = magnitude - ((127u - 15u) << 23);
  uint32_t normal = (rebiased + 0x0fffu + ((rebiased >> 13) & 1u)) >> 13;
  normal = normal > 0x7c00u ? 0x7c00u : normal;

  // Subnormal results: shift the significand (implicit bit included) right so that one unit is
  // 2^-24, rounding half to even by hand. Integer arithmetic keeps this independent of the
  // rounding mode; shifts of 25 or more round to zero, and 31 stands in for them all. The
  // exponent is clamped first so that the shifts stay defined for inputs this path does not serve.
  const uint32_t exponent = magnitude >> 23 > 112u ? 112u : magnitude >> 23;
  const uint32_t significand = (magnitude & 0x007fffffu) | 0x00800000u;
  const uint32_t shift = exponent < 95u ? 31u : 126u - exponent;
  const uint32_t truncated = significand >> shift;
  const uint32_t remainder = significand & ((1u << shift) - 1u);
  const uint32_t halfway = 1u << (shift - 1u);
  const uint32_t roundUp = (remainder > halfway) | ((remainder == halfway) & truncated);
  const uint32_t subnormal = truncated + roundUp;

  uint32_t result = magnitude < (113u << 23) ? subnormal : normal;
  // NaN: keep the top of the payload and set the quiet bit, as vcvtps2ph does.
  result = magnitude > 0x7f800000u ? 0x7e00u | ((magnitude >> 13) & 0x03ffu) : result;
  return uint16_t(result | sign);
}

inline float bfloat16ToFloat(uint16_t bf16) {
  uint32_t bits = uint32_t(bf16) << 16;
  // Quieted for the same reason as halfToFloat: a NaN result is always a quiet NaN.
  bits |= (bits & 0x7fffffffu) > 0x7f800000u ? 0x00400000u : 0u;
  return std::bit_cast<float>(bits);
}

inline uint16_t floatToBfloat16(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  // Round half to even on the 16 dropped bits; a carry into the exponent is the correct result,
  // including overflow to infinity. The sum cannot wrap: only NaN patterns lie above 0xff800000.
  // A NaN instead gets its quiet bit, since rounding could carry its payload into infinity.
  const uint32_t roundingBias = 0x7fffu + ((bits >> 16) & 1u);
  const bool isNan = (bits & 0x7fffffffu) > 0x7f800000u;
  return uint16_t((isNan ? bits | 0x00400000u : bits + roundingBias) >> 16);
}

}  // namespace weft
