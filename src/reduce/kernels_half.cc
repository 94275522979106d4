// float16 and bfloat16 kernels. Each element is widened to float, combined there, and rounded to
// nearest even once on the way back, so every variant equals the scalar half.h reference.
//
// bfloat16 widens and narrows by integer bit operations (half.h), which the generic loop
// vectorises on every variant. float16 needs the F16C / AVX-512 conversion instructions to be
// fast, so those two variants are written with intrinsics; the baseline runs the scalar half.h
// code, which returns what those instructions return, NaN payloads included.
#include <immintrin.h>

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

// The masked conversions with a full mask compile to the plain instructions; the unmasked
// intrinsics trip GCC 12's -Wmaybe-uninitialized inside its own headers.
WEFT_TARGET_AVX512 inline __m512 loadHalf16(const uint16_t* src, __mmask16 lanes) {
  return _mm512_maskz_cvtph_ps(0xffff, _mm256_maskz_loadu_epi16(lanes, src));
}

WEFT_TARGET_AVX512 inline void storeHalf16(uint16_t* dst, __m512 values, __mmask16 lanes) {
  _mm256_mask_storeu_epi16(dst, lanes, _mm512_maskz_cvtps_ph(0xffff, values, kRoundNearestEven));
}

// Every step loads both inputs before it stores, so dst == a and dst == b are safe. The tails
// are handled with the body's instructions (masked, or padded to a full vector) rather than a
// scalar loop, so no element takes a different path.
struct HalfAvx512Variant {
  static constexpr size_t kLanes = 16;

  template <class Codec, weftRedOp_t kOp>
  WEFT_TARGET_AVX512 static void reduce(void* dst, const void* a, const void* b, size_t count) {
    uint16_t* out = static_cast<uint16_t*>(dst);
    const uint16_t* lhs = static_cast<const uint16_t*>(a);
    const uint16_t* rhs = static_cast<const uint16_t*>(b);
    size_t i = 0;
    for (; i + kLanes <= count; i += kLanes) {
      const __m512 x = loadHalf16(lhs + i, 0xffff);
      const __m512 y = loadHalf16(rhs + i, 0xffff);
      storeHalf16(out + i, combine16<kOp>(x, y), 0xffff);
    }
    if (i < count) {
      const __mmask16 lanes = __mmask16((1u << (count - i)) - 1u);
      const __m512 x = loadHalf16(lhs + i, lanes);
      const __m512 y = loadHalf16(rhs + i, lanes);
      storeHalf16(out + i, combine16<kOp>(x, y), lanes);
    }
  }

  template <class Codec>
  WEFT_TARGET_AVX512 static void avg(void* buf, size_t count, int nranks) {
    uint16_t* values = static_cast<uint16_t*>(buf);
    const __m512 scale = _mm512_set1_ps(1.0f / float(nranks));
    size_t i = 0;
    for (; i + kLanes <= count; i += kLanes) {
      storeHalf16(values + i, _mm512_mul_ps(loadHalf16(values + i, 0xffff), scale), 0xffff);
    }
    if (i < count) {
      const __mmask16 lanes = __mmask16((1u << (count - i)) - 1u);
      storeHalf16(values + i, _mm512_mul_ps(loadHalf16(values + i, lanes), scale), lanes);
    }
  }
};

WEFT_TARGET_AVX2 inline __m256 loadHalf8(const uint16_t* src) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src)));
}

WEFT_TARGET_AVX2 inline void storeHalf8(uint16_t* dst, __m256 values) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), _mm256_cvtps_ph(values, kRoundNearestEven));
}

struct HalfAvx2Variant {
  static constexpr size_t kLanes = 8;

  template <class Codec, weftRedOp_t kOp>
  WEFT_TARGET_AVX2 static void reduce(void* dst, const void* a, const void* b, size_t count) {
    uint16_t* out = static_cast<uint16_t*>(dst);
    const uint16_t* lhs = static_cast<const uint16_t*>(a);
    const uint16_t* rhs = static_cast<const uint16_t*>(b);
    size_t i = 0;
    for (; i + kLanes <= count; i += kLanes) {
      storeHalf8(out + i, combine8<kOp>(loadHalf8(lhs + i), loadHalf8(rhs + i)));
    }
    if (i < count) {
      // AVX2 has no 16-bit masked load: pad the tail out to a vector on the stack.
      const size_t bytes = (count - i) * sizeof(uint16_t);
      uint16_t x[kLanes] = {}, y[kLanes] = {}, result[kLanes];
      std::memcpy(x, lhs + i, bytes);
      std::memcpy(y, rhs + i, bytes);
      storeHalf8(result, combine8<kOp>(loadHalf8(x), loadHalf8(y)));
      std::memcpy(out + i, result, bytes);
    }
  }

  template <class Codec>
  WEFT_TARGET_AVX2 static void avg(void* buf, size_t count, int nranks) {
    uint16_t* values = static_cast<uint16_t*>(buf);
    const __m256 scale = _mm256_set1_ps(1.0f / float(nranks));
    size_t i = 0;
    for (; i + kLanes <= count; i += kLanes) {
      storeHalf8(values + i, _mm256_mul_ps(loadHalf8(values + i), scale));
    }
    if (i < count) {
      const size_t bytes = (count - i) * sizeof(uint16_t);
      uint16_t padded[kLanes] = {};
      std::memcpy(padded, values + i, bytes);
      storeHalf8(padded, _mm256_mul_ps(loadHalf8(padded), scale));
      std::memcpy(values + i, padded, bytes);
    }
  }
};

}  // namespace

void addHalfKernels(Isa isa, KernelTable& table) {
  fillGenericRow<Bfloat16Codec>(isa, weftBfloat16, table);
  switch (isa) {
    case Isa::kBaseline:
      fillRow<BaselineVariant, HalfCodec>(weftFloat16, table);
      break;
    case Isa::kAvx2:
      fillRow<HalfAvx2Variant, HalfCodec>(weftFloat16, table);
      break;
    case Isa::kAvx512:
      fillRow<HalfAvx512Variant, HalfCodec>(weftFloat16, table);
      break;
  }
}

}  // namespace weft::reduce::detail
