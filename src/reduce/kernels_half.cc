// float16 and bfloat16 kernels. Each element is widened to float, combined there, and rounded to
// nearest even once on the way back, so every variant equals the scalar half.h reference.
//
// The AVX2 and AVX-512 variants are written with intrinsics around one idea: a "lane format"
// loads 8 or 16 elements as floats and stores floats back as elements. float16 uses the F16C /
// AVX-512 conversion instructions; bfloat16 uses the integer bit operations of half.h, which the
// compiler does vectorise on its own, but with about half the throughput of this version. The
// baseline runs the scalar half.h code (auto-vectorised with SSE2 for bfloat16), which returns
// what the instructions return, NaN payloads included.
// GCC 12's AVX-512 headers seed unused result lanes with a self-initialised variable, which
// -Wmaybe-uninitialized reports once the intrinsics are inlined (GCC bug 105593, fixed later).
// The warning is silenced for the header's lines only; this file's own code stays checked.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop

#include <bit>
#include <cstring>

#include "reduce/kernels.h"

namespace weft::reduce::detail {
namespace {

struct HalfCodec {
  using Storage = uint16_t;
  using Compute = float;
  [[gnu::always_inline]] static float decode(uint16_t value) { return halfToFloat(value); }
  [[gnu::always_inline]] static uint16_t encode(float value) { return floatToHalf(value); }
};

// Widens without bfloat16ToFloat's NaN quieting, which no kernel result can observe: sum, prod
// and avg quiet a NaN in the float unit, and max/min hand the selected NaN to floatToBfloat16,
// which quiets it. Skipping it saves a quarter of the instructions of the loop.
struct Bfloat16Codec {
  using Storage = uint16_t;
  using Compute = float;
  [[gnu::always_inline]] static float decode(uint16_t value) {
    return std::bit_cast<float>(uint32_t(value) << 16);
  }
  [[gnu::always_inline]] static uint16_t encode(float value) { return floatToBfloat16(value); }
};

// The rounding is part of the instruction, so the MXCSR rounding mode cannot change it.
constexpr int kRoundNearestEven = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;

// Lane-wise the scalar rule of combine(): max/min take x where x > y (x < y) or x is NaN, else y.
// Ordered comparisons are false against NaN, so a NaN in y is taken as well.
template <weftRedOp_t kOp>
WEFT_TARGET_AVX512 inline __m512 combine16(__m512 x, __m512 y) {
  if constexpr (kOp == weftSum || kOp == weftAvg) {
    return _mm512_add_ps(x, y);
  } else if constexpr (kOp == weftProd) {
    return _mm512_mul_ps(x, y);
  } else {
    const __mmask16 ordered = kOp == weftMax ? _mm512_cmp_ps_mask(x, y, _CMP_GT_OQ)
                                             : _mm512_cmp_ps_mask(x, y, _CMP_LT_OQ);
    return _mm512_mask_mov_ps(y, ordered | _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), x);
  }
}

template <weftRedOp_t kOp>
WEFT_TARGET_AVX2 inline __m256 combine8(__m256 x, __m256 y) {
  if constexpr (kOp == weftSum || kOp == weftAvg) {
    return _mm256_add_ps(x, y);
  } else if constexpr (kOp == weftProd) {
    return _mm256_mul_ps(x, y);
  } else {
    const __m256 ordered =
        kOp == weftMax ? _mm256_cmp_ps(x, y, _CMP_GT_OQ) : _mm256_cmp_ps(x, y, _CMP_LT_OQ);
    return _mm256_blendv_ps(y, x, _mm256_or_ps(ordered, _mm256_cmp_ps(x, x, _CMP_UNORD_Q)));
  }
}

// ---- AVX-512: 16 lanes; tails are masked, so they run the same instructions as the body ------

struct Float16x16 {
  WEFT_TARGET_AVX512 static __m512 load(const uint16_t* src, __mmask16 lanes) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(lanes, src));
  }
  WEFT_TARGET_AVX512 static void store(uint16_t* dst, __m512 values, __mmask16 lanes) {
    _mm256_mask_storeu_epi16(dst, lanes, _mm512_cvtps_ph(values, kRoundNearestEven));
  }
};

// floatToBfloat16 on 16 lanes (see half.h for why the rounding and NaN rules are right).
struct Bfloat16x16 {
  WEFT_TARGET_AVX512 static __m512 load(const uint16_t* src, __mmask16 lanes) {
    const __m512i widened = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(lanes, src));
    return _mm512_castsi512_ps(_mm512_slli_epi32(widened, 16));
  }
  WEFT_TARGET_AVX512 static void store(uint16_t* dst, __m512 values, __mmask16 lanes) {
    const __m512i bits = _mm512_castps_si512(values);
    const __m512i keptLowBit = _mm512_and_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(1));
    const __m512i rounded =
        _mm512_add_epi32(bits, _mm512_add_epi32(keptLowBit, _mm512_set1_epi32(0x7fff)));
    const __mmask16 nan = _mm512_cmp_ps_mask(values, values, _CMP_UNORD_Q);
    const __m512i chosen = _mm512_mask_or_epi32(rounded, nan, bits, _mm512_set1_epi32(0x00400000));
    _mm512_mask_cvtepi32_storeu_epi16(dst, lanes, _mm512_srli_epi32(chosen, 16));
  }
};

// Every step loads both inputs before it stores, so dst == a and dst == b are safe. A masked first
// step brings dst to a 32-byte boundary, so that no store straddles a cache line (see reduceLoop).
template <class Lanes>
struct Avx512Variant16 {
  static constexpr size_t kLanes = 16;

  template <weftRedOp_t kOp>
  WEFT_TARGET_AVX512 static void step(uint16_t* out, const uint16_t* lhs, const uint16_t* rhs,
                                      size_t lanes) {
    const __mmask16 mask = lanes >= kLanes ? __mmask16(0xffff) : __mmask16((1u << lanes) - 1u);
    const __m512 x = Lanes::load(lhs, mask);
    const __m512 y = Lanes::load(rhs, mask);
    Lanes::store(out, combine16<kOp>(x, y), mask);
  }

  template <class Codec, weftRedOp_t kOp>
  WEFT_TARGET_AVX512 static void reduce(void* dst, const void* a, const void* b, size_t count) {
    uint16_t* out = static_cast<uint16_t*>(dst);
    const uint16_t* lhs = static_cast<const uint16_t*>(a);
    const uint16_t* rhs = static_cast<const uint16_t*>(b);
    size_t i = ((0 - reinterpret_cast<uintptr_t>(out)) & 31) / sizeof(uint16_t);
    i = i < count ? i : count;
    if (i > 0) step<kOp>(out, lhs, rhs, i);
    for (; i + kLanes <= count; i += kLanes) step<kOp>(out + i, lhs + i, rhs + i, kLanes);
    if (i < count) step<kOp>(out + i, lhs + i, rhs + i, count - i);
  }

  template <class Codec>
  WEFT_TARGET_AVX512 static void avg(void* buf, size_t count, int nranks) {
    uint16_t* values = static_cast<uint16_t*>(buf);
    const __m512 scale = _mm512_set1_ps(1.0f / float(nranks));
    size_t i = 0;
    for (; i + kLanes <= count; i += kLanes) {
      Lanes::store(values + i, _mm512_mul_ps(Lanes::load(values + i, 0xffff), scale), 0xffff);
    }
    if (i < count) {
      const __mmask16 lanes = __mmask16((1u << (count - i)) - 1u);
      Lanes::store(values + i, _mm512_mul_ps(Lanes::load(values + i, lanes), scale), lanes);
    }
  }
};

// ---- AVX2: 8 lanes; tails are padded to a full vector on the stack (no 16-bit masked loads) ---

struct Float16x8 {
  WEFT_TARGET_AVX2 static __m256 load(const uint16_t* src) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src)));
  }
  WEFT_TARGET_AVX2 static void store(uint16_t* dst, __m256 values) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), _mm256_cvtps_ph(values, kRoundNearestEven));
  }
};

struct Bfloat16x8 {
  WEFT_TARGET_AVX2 static __m256 load(const uint16_t* src) {
    const __m256i widened =
        _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(widened, 16));
  }
  WEFT_TARGET_AVX2 static void store(uint16_t* dst, __m256 values) {
    const __m256i bits = _mm256_castps_si256(values);
    const __m256i keptLowBit = _mm256_and_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(1));
    const __m256i rounded =
        _mm256_add_epi32(bits, _mm256_add_epi32(keptLowBit, _mm256_set1_epi32(0x7fff)));
    const __m256i quietNan = _mm256_or_si256(bits, _mm256_set1_epi32(0x00400000));
    const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(values, values, _CMP_UNORD_Q));
    const __m256i chosen = _mm256_srli_epi32(_mm256_blendv_epi8(rounded, quietNan, nan), 16);
    // Each lane now holds 0..0xffff, so the saturating pack is a plain narrowing.
    const __m128i packed =
        _mm_packus_epi32(_mm256_castsi256_si128(chosen), _mm256_extracti128_si256(chosen, 1));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), packed);
  }
};

template <class Lanes>
struct Avx2Variant16 {
  static constexpr size_t kLanes = 8;

  template <class Codec, weftRedOp_t kOp>
  WEFT_TARGET_AVX2 static void reduce(void* dst, const void* a, const void* b, size_t count) {
    uint16_t* out = static_cast<uint16_t*>(dst);
    const uint16_t* lhs = static_cast<const uint16_t*>(a);
    const uint16_t* rhs = static_cast<const uint16_t*>(b);
    size_t i = 0;
    for (; i + kLanes <= count; i += kLanes) {
      Lanes::store(out + i, combine8<kOp>(Lanes::load(lhs + i), Lanes::load(rhs + i)));
    }
    if (i < count) {
      const size_t bytes = (count - i) * sizeof(uint16_t);
      uint16_t x[kLanes] = {}, y[kLanes] = {}, result[kLanes];
      std::memcpy(x, lhs + i, bytes);
      std::memcpy(y, rhs + i, bytes);
      Lanes::store(result, combine8<kOp>(Lanes::load(x), Lanes::load(y)));
      std::memcpy(out + i, result, bytes);
    }
  }

  template <class Codec>
  WEFT_TARGET_AVX2 static void avg(void* buf, size_t count, int nranks) {
    uint16_t* values = static_cast<uint16_t*>(buf);
    const __m256 scale = _mm256_set1_ps(1.0f / float(nranks));
    size_t i = 0;
    for (; i + kLanes <= count; i += kLanes) {
      Lanes::store(values + i, _mm256_mul_ps(Lanes::load(values + i), scale));
    }
    if (i < count) {
      const size_t bytes = (count - i) * sizeof(uint16_t);
      uint16_t padded[kLanes] = {};
      std::memcpy(padded, values + i, bytes);
      Lanes::store(padded, _mm256_mul_ps(Lanes::load(padded), scale));
      std::memcpy(values + i, padded, bytes);
    }
  }
};

}  // namespace

void addHalfKernels(Isa isa, KernelTable& table) {
  switch (isa) {
    case Isa::kBaseline:
      fillRow<BaselineVariant, HalfCodec>(weftFloat16, table);
      fillRow<BaselineVariant, Bfloat16Codec>(weftBfloat16, table);
      break;
    case Isa::kAvx2:
      fillRow<Avx2Variant16<Float16x8>, HalfCodec>(weftFloat16, table);
      fillRow<Avx2Variant16<Bfloat16x8>, Bfloat16Codec>(weftBfloat16, table);
      break;
    case Isa::kAvx512:
      fillRow<Avx512Variant16<Float16x16>, HalfCodec>(weftFloat16, table);
      fillRow<Avx512Variant16<Bfloat16x16>, Bfloat16Codec>(weftBfloat16, table);
      break;
  }
}

}  // namespace weft::reduce::detail
