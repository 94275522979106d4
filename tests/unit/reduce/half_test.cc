// The scalar float16 / bfloat16 conversions of src/reduce/half.h: rounding to nearest even in
// both directions, subnormals, overflow, NaN, every 16-bit pattern, and agreement with the F16C
// instructions the vectorised kernels use.
#include <immintrin.h>

#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <limits>

#include "reduce/half.h"

namespace weft {
namespace {

float fromBits(uint32_t bits) {
  return std::bit_cast<float>(bits);
}
uint32_t bitsOf(float value) {
  return std::bit_cast<uint32_t>(value);
}

TEST_CASE("half: rounding, subnormals, overflow and NaN", "[reduce][half]") {
  CHECK(floatToHalf(1.0f) == 0x3c00);
  CHECK(floatToHalf(-2.0f) == 0xc000);
  CHECK(floatToHalf(-0.0f) == 0x8000);
  CHECK(floatToHalf(1.0f + 0x1p-11f) == 0x3c00);      // tie, rounds down to even
  CHECK(floatToHalf(1.0f + 3 * 0x1p-11f) == 0x3c02);  // tie, rounds up to even
  CHECK(floatToHalf(std::nextafter(1.0f + 0x1p-11f, 2.0f)) == 0x3c01);
  CHECK(floatToHalf(65504.0f) == 0x7bff);  // largest finite
  CHECK(floatToHalf(std::nextafter(65520.0f, 0.0f)) == 0x7bff);
  CHECK(floatToHalf(65520.0f) == 0x7c00);  // tie rounds to even: infinity
  CHECK(floatToHalf(1e30f) == 0x7c00);
  CHECK(floatToHalf(-INFINITY) == 0xfc00);
  CHECK(floatToHalf(0x1p-24f) == 0x0001);  // smallest subnormal
  CHECK(floatToHalf(0x1p-25f) == 0x0000);  // tie to even (zero)
  CHECK(floatToHalf(std::nextafter(0x1p-25f, 1.0f)) == 0x0001);
  CHECK(floatToHalf(3 * 0x1p-25f) == 0x0002);        // tie to even (two)
  CHECK(floatToHalf(1023.5f * 0x1p-24f) == 0x0400);  // rounds up into the normals
  CHECK(floatToHalf(-0x1p-140f) == 0x8000);
  CHECK(floatToHalf(fromBits(0x00000001)) == 0x0000);
  CHECK(floatToHalf(fromBits(0x7f800001)) == 0x7e00);  // signalling NaN comes out quiet
  CHECK(floatToHalf(fromBits(0xffc00000)) == 0xfe00);
  CHECK(halfToFloat(0x0001) == 0x1p-24f);
  CHECK(halfToFloat(0x03ff) == 1023 * 0x1p-24f);
  CHECK(halfToFloat(0x0400) == 0x1p-14f);
  CHECK(halfToFloat(0x7bff) == 65504.0f);
  CHECK(halfToFloat(0xfc00) == -INFINITY);
  CHECK(bitsOf(halfToFloat(0x8000)) == 0x80000000u);
  CHECK(bitsOf(halfToFloat(0x7c01)) == 0x7fc02000u);  // quieted, payload kept
}

TEST_CASE("half: all 65536 patterns decode exactly and round-trip", "[reduce][half]") {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = halfToFloat(uint16_t(h));
    const uint32_t exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
    const float sign = h & 0x8000 ? -1.0f : 1.0f;
    if (exponent == 31 && mantissa != 0) {
      REQUIRE(std::isnan(f));
      REQUIRE(floatToHalf(f) == (h | 0x0200));  // quiet, same sign and payload
      continue;
    }
    const float expected = exponent == 31 ? sign * INFINITY
                           : exponent == 0
                               ? sign * std::ldexp(float(mantissa), -24)
                               : sign * std::ldexp(float(1024 + mantissa), int(exponent) - 25);
    REQUIRE(bitsOf(f) == bitsOf(expected));
    REQUIRE(floatToHalf(f) == h);
  }
}

__attribute__((target("f16c"))) uint16_t hardwareToHalf(float f) {
  return uint16_t(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}
__attribute__((target("f16c"))) float hardwareToFloat(uint16_t h) {
  return _cvtsh_ss(h);
}

TEST_CASE("half: the scalar code equals the F16C instructions", "[reduce][half]") {
  if (!__builtin_cpu_supports("f16c")) return;
  for (uint32_t h = 0; h < 65536; ++h) {
    REQUIRE(bitsOf(halfToFloat(uint16_t(h))) == bitsOf(hardwareToFloat(uint16_t(h))));
    // Around every representable half, where the rounding decisions are: ties, their neighbours.
    for (uint32_t offset : {0u, 1u, 0xfffu, 0x1000u, 0x1001u, 0x1fffu}) {
      for (uint32_t base : {0x38000000u, 0x33000000u, 0x30000000u}) {  // normal, subnormal, tiny
        const float f = fromBits(((h & 0x8000) << 16) + base + ((h & 0x7fff) << 13) + offset);
        REQUIRE(floatToHalf(f) == hardwareToHalf(f));
      }
    }
  }
  for (uint64_t bits = 0; bits < (uint64_t(1) << 32); bits += 0x1003) {
    const float f = fromBits(uint32_t(bits));
    REQUIRE(floatToHalf(f) == hardwareToHalf(f));
  }
}

TEST_CASE("bfloat16: rounding, subnormals, overflow, NaN and round trip", "[reduce][half]") {
  CHECK(floatToBfloat16(1.0f) == 0x3f80);
  CHECK(floatToBfloat16(fromBits(0x3f808000)) == 0x3f80);  // tie, rounds down to even
  CHECK(floatToBfloat16(fromBits(0x3f818000)) == 0x3f82);  // tie, rounds up to even
  CHECK(floatToBfloat16(fromBits(0x3f808001)) == 0x3f81);
  CHECK(floatToBfloat16(fromBits(0x7f7f7fff)) == 0x7f7f);  // largest finite stays
  CHECK(floatToBfloat16(fromBits(0x7f7f8000)) == 0x7f80);  // tie to even: infinity
  CHECK(floatToBfloat16(std::numeric_limits<float>::max()) == 0x7f80);
  CHECK(floatToBfloat16(-std::numeric_limits<float>::max()) == 0xff80);
  CHECK(floatToBfloat16(fromBits(0x00008000)) == 0x0000);  // tie between 0 and the smallest
  CHECK(floatToBfloat16(fromBits(0x00008001)) == 0x0001);
  CHECK(floatToBfloat16(fromBits(0x00018000)) == 0x0002);
  CHECK(floatToBfloat16(fromBits(0x7f800001)) == 0x7fc0);  // signalling NaN comes out quiet
  CHECK(floatToBfloat16(fromBits(0xffc00000)) == 0xffc0);
  CHECK(bitsOf(bfloat16ToFloat(0x0001)) == 0x00010000u);
  CHECK(bitsOf(bfloat16ToFloat(0x7f81)) == 0x7fc10000u);
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = bfloat16ToFloat(uint16_t(h));
    const bool nan = (h & 0x7fff) > 0x7f80;
    REQUIRE(std::isnan(f) == nan);
    REQUIRE(floatToBfloat16(f) == (nan ? h | 0x0040 : h));
    if (!nan) REQUIRE(bitsOf(f) == h << 16);
  }
  // Against an independent model: the nearer of the two truncation neighbours, ties to even.
  for (uint64_t bits = 0; bits < (uint64_t(1) << 32); bits += 0x10003) {
    const float f = fromBits(uint32_t(bits));
    if (std::isnan(f) || std::isinf(f)) continue;
    const uint16_t down = uint16_t(bits >> 16), up = uint16_t(down + 1);
    const double upValue =
        (up & 0x7fff) == 0x7f80 ? std::copysign(0x1p128, f) : bfloat16ToFloat(up);
    const double below = std::fabs(double(f) - bfloat16ToFloat(down));
    const double above = std::fabs(upValue - double(f));
    const uint16_t expected = below < above ? down : above < below ? up : (down & 1 ? up : down);
    REQUIRE(floatToBfloat16(f) == expected);
  }
}

}  // namespace
}  // namespace weft
