// Internal to the reduction module: the per-instruction-set kernel tables and the generic loops
// they are stamped from. Tests and benchmarks include it to run every compiled variant, not only
// the one this CPU dispatches to.
//
// How the variants come about: the loops below are plain element-wise C++ forced inline into
// small wrappers that carry a target attribute, so the compiler vectorises one copy per
// instruction set from the same source. Explicit wrappers (rather than target_clones) let a test
// call each variant directly and let the choice be made once, by reduce.cc, per process.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "reduce/half.h"
#include "reduce/reduce.h"

namespace weft::reduce::detail {

enum class Isa : int { kBaseline = 0, kAvx2 = 1, kAvx512 = 2 };
inline constexpr int kNumIsas = 3;

// The features each variant is compiled for, and exactly those reduce.cc checks at run time:
// what the kernels use rather than a whole x86-64-v3/v4 level, so that a virtual machine hiding an
// unrelated feature (MOVBE, say) does not fall back to the baseline. FMA is left out on purpose:
// were a*b+c ever contracted in one variant and not another, their results would differ.
// 512-bit vectors are asked for explicitly because the generic tuning may settle for 256 bits.
#define WEFT_TARGET_AVX2 __attribute__((target("avx2,f16c")))
#define WEFT_TARGET_AVX512 \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,f16c,prefer-vector-width=512")))

// Completes an average in place; nranks >= 2 (finishAvg filters the trivial cases).
using AvgFn = void (*)(void* buf, size_t count, int nranks);

struct KernelTable {
  ReduceFn reduce[weftNumTypes][weftNumOps] = {};
  AvgFn avg[weftNumTypes] = {};
};

// Each kernels_*.cc fills the rows of the types it implements, for one instruction set.
void addIntKernels(Isa isa, KernelTable& table);    // int8 .. uint64
void addFloatKernels(Isa isa, KernelTable& table);  // float32, float64
void addHalfKernels(Isa isa, KernelTable& table);   // float16, bfloat16

// Whether this CPU (and OS) can run the variant.
bool isaSupported(Isa isa);
// The variant kernelFor() and finishAvg() use: the best supported one.
Isa selectedIsa();
const char* isaName(Isa isa);
// A specific variant's kernels; nullptr when the variant is not supported here or the arguments
// are out of range.
ReduceFn kernelForIsa(Isa isa, weftDataType_t type, weftRedOp_t op);
AvgFn avgKernelForIsa(Isa isa, weftDataType_t type);

// ---- Building blocks for the kernels_*.cc files ------------------------------------------------

// A codec maps a stored element to the type the arithmetic is done in, and back.
template <class T>
struct PlainCodec {
  using Storage = T;
  using Compute = T;
  [[gnu::always_inline]] static T decode(T value) { return value; }
  [[gnu::always_inline]] static T encode(T value) { return value; }
};

template <weftRedOp_t kOp, class T>
[[gnu::always_inline]] inline T combine(T a, T b) {
  if constexpr (kOp == weftSum || kOp == weftAvg || kOp == weftProd) {
    if constexpr (std::is_integral_v<T>) {
      // Signed overflow is undefined; unsigned arithmetic wraps, and converting back is modular.
      using U = std::make_unsigned_t<T>;
      return kOp == weftProd ? T(U(a) * U(b)) : T(U(a) + U(b));
    } else {
      return kOp == weftProd ? a * b : a + b;
    }
  } else {
    const bool takeA = kOp == weftMax ? a > b : a < b;
    if constexpr (std::is_floating_point_v<T>) {
      // a != a only for NaN: a NaN in a is taken, and one in b fails the comparison and is taken
      // too. '|' rather than '||' keeps the condition a select the vectoriser can use.
      return (takeA | (a != a)) ? a : b;
    } else {
      return takeA ? a : b;
    }
  }
}

// No __restrict: dst may be a or b. GCC versions such loops on a run-time overlap test that
// admits a distance of zero, so the in-place cases run vectorised too (see docs/REDUCTIONS.md).
//
// The elements before dst's next 64-byte boundary go first, one by one (a loop with two exits,
// which the vectoriser leaves alone), so that the vector loop's stores, and in place its loads,
// do not straddle cache lines. malloc aligns to 16 bytes only, and on cache-resident data the
// split accesses cost about a fifth of the throughput.
template <class Codec, weftRedOp_t kOp>
[[gnu::always_inline]] inline void reduceLoop(void* dst, const void* a, const void* b,
                                              size_t count) {
  using T = typename Codec::Storage;
  T* out = static_cast<T*>(dst);
  const T* lhs = static_cast<const T*>(a);
  const T* rhs = static_cast<const T*>(b);
  size_t i = 0;
  for (; i < count && ((0 - reinterpret_cast<uintptr_t>(out + i)) & 63) >= sizeof(T); ++i) {
    out[i] = Codec::encode(combine<kOp>(Codec::decode(lhs[i]), Codec::decode(rhs[i])));
  }
  for (; i < count; ++i) {
    out[i] = Codec::encode(combine<kOp>(Codec::decode(lhs[i]), Codec::decode(rhs[i])));
  }
}

template <class Codec>
[[gnu::always_inline]] inline void avgLoop(void* buf, size_t count, int nranks) {
  using T = typename Codec::Storage;
  using C = typename Codec::Compute;
  T* values = static_cast<T*>(buf);
  if constexpr (std::is_integral_v<C> && sizeof(C) <= 4) {
    // Dividing in double is exact here (|value| < 2^32, so the rounded quotient never reaches
    // the next integer) and, unlike integer division, vectorises. The conversion truncates.
    const double divisor = double(nranks);
    for (size_t i = 0; i < count; ++i) values[i] = T(double(values[i]) / divisor);
  } else if constexpr (std::is_integral_v<C>) {
    const C divisor = C(nranks);
    for (size_t i = 0; i < count; ++i) values[i] = T(values[i] / divisor);
  } else {
    const C scale = C(1) / C(nranks);
    for (size_t i = 0; i < count; ++i) values[i] = Codec::encode(Codec::decode(values[i]) * scale);
  }
}

// The three compilations of the generic loops. fillRow() takes one of these.
struct BaselineVariant {
  template <class Codec, weftRedOp_t kOp>
  static void reduce(void* dst, const void* a, const void* b, size_t count) {
    reduceLoop<Codec, kOp>(dst, a, b, count);
  }
  template <class Codec>
  static void avg(void* buf, size_t count, int nranks) {
    avgLoop<Codec>(buf, count, nranks);
  }
};

struct Avx2Variant {
  template <class Codec, weftRedOp_t kOp>
  WEFT_TARGET_AVX2 static void reduce(void* dst, const void* a, const void* b, size_t count) {
    reduceLoop<Codec, kOp>(dst, a, b, count);
  }
  template <class Codec>
  WEFT_TARGET_AVX2 static void avg(void* buf, size_t count, int nranks) {
    avgLoop<Codec>(buf, count, nranks);
  }
};

struct Avx512Variant {
  template <class Codec, weftRedOp_t kOp>
  WEFT_TARGET_AVX512 static void reduce(void* dst, const void* a, const void* b, size_t count) {
    reduceLoop<Codec, kOp>(dst, a, b, count);
  }
  template <class Codec>
  WEFT_TARGET_AVX512 static void avg(void* buf, size_t count, int nranks) {
    avgLoop<Codec>(buf, count, nranks);
  }
};

// Variant is one of the structs above, or any struct with the same two member templates.
template <class Variant, class Codec>
void fillRow(weftDataType_t type, KernelTable& table) {
  ReduceFn* row = table.reduce[type];
  row[weftSum] = &Variant::template reduce<Codec, weftSum>;
  row[weftProd] = &Variant::template reduce<Codec, weftProd>;
  row[weftMax] = &Variant::template reduce<Codec, weftMax>;
  row[weftMin] = &Variant::template reduce<Codec, weftMin>;
  row[weftAvg] = row[weftSum];  // the division happens once, in finishAvg
  table.avg[type] = &Variant::template avg<Codec>;
}

template <class Codec>
void fillGenericRow(Isa isa, weftDataType_t type, KernelTable& table) {
  switch (isa) {
    case Isa::kBaseline:
      fillRow<BaselineVariant, Codec>(type, table);
      break;
    case Isa::kAvx2:
      fillRow<Avx2Variant, Codec>(type, table);
      break;
    case Isa::kAvx512:
      fillRow<Avx512Variant, Codec>(type, table);
      break;
  }
}

}  // namespace weft::reduce::detail
