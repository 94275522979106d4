// Reduction kernels: every (type, op) of every compiled variant against a scalar reference, the
// aliasing cases, wrap-around, NaN propagation, finishAvg and dispatch. The float16 / bfloat16
// conversions the reference relies on are tested on their own in half_test.cc.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "reduce/half.h"
#include "reduce/kernels.h"
#include "reduce/reduce.h"

namespace weft::reduce {
namespace {

using detail::Isa;

constexpr weftDataType_t kTypes[] = {weftInt8,    weftUint8,   weftInt32,   weftUint32,
                                     weftInt64,   weftUint64,  weftFloat16, weftFloat32,
                                     weftFloat64, weftBfloat16};
constexpr weftRedOp_t kOps[] = {weftSum, weftProd, weftMax, weftMin, weftAvg};
constexpr size_t kCounts[] = {0, 1, 7, 33, 1000, 100003};

std::vector<Isa> supportedIsas() {
  std::vector<Isa> isas;
  for (int i = 0; i < detail::kNumIsas; ++i) {
    if (detail::isaSupported(Isa(i))) isas.push_back(Isa(i));
  }
  return isas;
}

// ---- A scalar model of the semantics, written independently of kernels.h -----------------------

enum class Kind { kInt, kFloat, kHalf, kBfloat16 };

template <class T, Kind K>
struct Tag {
  using Storage = T;
  static constexpr Kind kind = K;
};

template <class F>
decltype(auto) visitType(weftDataType_t type, F&& f) {
  switch (type) {
    case weftInt8:
      return f(Tag<int8_t, Kind::kInt>{});
    case weftUint8:
      return f(Tag<uint8_t, Kind::kInt>{});
    case weftInt32:
      return f(Tag<int32_t, Kind::kInt>{});
    case weftUint32:
      return f(Tag<uint32_t, Kind::kInt>{});
    case weftInt64:
      return f(Tag<int64_t, Kind::kInt>{});
    case weftUint64:
      return f(Tag<uint64_t, Kind::kInt>{});
    case weftFloat16:
      return f(Tag<uint16_t, Kind::kHalf>{});
    case weftFloat32:
      return f(Tag<float, Kind::kFloat>{});
    case weftFloat64:
      return f(Tag<double, Kind::kFloat>{});
    default:
      return f(Tag<uint16_t, Kind::kBfloat16>{});
  }
}

template <class F>
F referenceFloat(weftRedOp_t op, F a, F b) {
  switch (op) {
    case weftProd:
      return a * b;
    case weftMax:
    case weftMin:
      if (std::isnan(a)) return a;
      if (std::isnan(b)) return b;
      if (op == weftMax) return a > b ? a : b;  // ties (+0 vs -0) give b
      return a < b ? a : b;
    default:
      return a + b;
  }
}

template <class TagT>
typename TagT::Storage referenceElement(weftRedOp_t op, typename TagT::Storage a,
                                        typename TagT::Storage b) {
  using T = typename TagT::Storage;
  if constexpr (TagT::kind == Kind::kInt) {
    // Arithmetic modulo 2^64, then truncation: the two's-complement wrap the kernels promise.
    if (op == weftProd) return T(uint64_t(a) * uint64_t(b));
    if (op == weftMax) return a > b ? a : b;
    if (op == weftMin) return a < b ? a : b;
    return T(uint64_t(a) + uint64_t(b));
  } else if constexpr (TagT::kind == Kind::kFloat) {
    return referenceFloat(op, a, b);
  } else if constexpr (TagT::kind == Kind::kHalf) {
    return floatToHalf(referenceFloat(op, halfToFloat(a), halfToFloat(b)));
  } else {
    return floatToBfloat16(referenceFloat(op, bfloat16ToFloat(a), bfloat16ToFloat(b)));
  }
}

template <class TagT>
bool isNan(typename TagT::Storage v) {
  if constexpr (TagT::kind == Kind::kFloat) return std::isnan(v);
  if constexpr (TagT::kind == Kind::kHalf) return (v & 0x7fff) > 0x7c00;
  if constexpr (TagT::kind == Kind::kBfloat16) return (v & 0x7fff) > 0x7f80;
  return false;
}

// Bit-exact, except that any NaN matches any NaN: which payload survives an operation on two NaNs
// is not specified, and the compiler may order the operands of + and * either way.
constexpr size_t kNoMismatch = ~size_t(0);
size_t firstMismatch(weftDataType_t type, const void* expected, const void* actual, size_t count) {
  return visitType(type, [&](auto tag) {
    using TagT = decltype(tag);
    using T = typename TagT::Storage;
    for (size_t i = 0; i < count; ++i) {
      T x, y;
      std::memcpy(&x, static_cast<const char*>(expected) + i * sizeof(T), sizeof(T));
      std::memcpy(&y, static_cast<const char*>(actual) + i * sizeof(T), sizeof(T));
      if (isNan<TagT>(x) && isNan<TagT>(y)) continue;
      if (std::memcmp(&x, &y, sizeof(T)) != 0) return i;
    }
    return kNoMismatch;
  });
}

// Mostly ordinary values of varied magnitude, with NaN, infinity, zeros, subnormals and the
// integer extremes mixed in.
std::vector<unsigned char> randomData(weftDataType_t type, size_t count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<unsigned char> bytes(count * typeSize(type));
  visitType(type, [&](auto tag) {
    using TagT = decltype(tag);
    using T = typename TagT::Storage;
    std::uniform_real_distribution<double> unit(-1.0, 1.0);
    std::uniform_int_distribution<int> exponent(-20, 20);
    for (size_t i = 0; i < count; ++i) {
      const uint64_t bits = rng();
      const int pick = int(rng() % 100);
      T value;
      if constexpr (TagT::kind == Kind::kInt) {
        value = pick < 5    ? std::numeric_limits<T>::min()
                : pick < 10 ? std::numeric_limits<T>::max()
                            : T(bits);
      } else if constexpr (TagT::kind == Kind::kFloat) {
        value = T(std::ldexp(unit(rng), exponent(rng)));
        if (pick < 3) value = std::numeric_limits<T>::quiet_NaN();
        if (pick >= 3 && pick < 6) value = (bits & 1 ? -1 : 1) * std::numeric_limits<T>::infinity();
        if (pick >= 6 && pick < 9) value = (bits & 1 ? -0.0 : 0.0);
        if (pick >= 9 && pick < 12) value = std::numeric_limits<T>::denorm_min() * T(bits % 1000);
      } else {
        const float f = float(std::ldexp(unit(rng), exponent(rng) / 2));
        value = pick < 15                   ? T(bits)
                : TagT::kind == Kind::kHalf ? floatToHalf(f)
                                            : floatToBfloat16(f);
      }
      std::memcpy(bytes.data() + i * sizeof(T), &value, sizeof(T));
    }
  });
  return bytes;
}

std::vector<unsigned char> referenceResult(weftDataType_t type, weftRedOp_t op,
                                           const std::vector<unsigned char>& a,
                                           const std::vector<unsigned char>& b) {
  std::vector<unsigned char> out(a.size());
  visitType(type, [&](auto tag) {
    using T = typename decltype(tag)::Storage;
    for (size_t i = 0; i < a.size() / sizeof(T); ++i) {
      T x, y;
      std::memcpy(&x, a.data() + i * sizeof(T), sizeof(T));
      std::memcpy(&y, b.data() + i * sizeof(T), sizeof(T));
      const T r = referenceElement<decltype(tag)>(op, x, y);
      std::memcpy(out.data() + i * sizeof(T), &r, sizeof(T));
    }
  });
  return out;
}

enum class Alias { kNone, kDstIsA, kDstIsB };

// Runs fn on copies of the inputs that start `shift` elements into their allocations (malloc
// aligns to 16 bytes, so shifts move the data across every offset within a cache line, and thus
// across every length of the kernels' alignment prologue), with guard bytes before and after that
// must survive.
std::vector<unsigned char> runKernel(ReduceFn fn, weftDataType_t type,
                                     const std::vector<unsigned char>& a,
                                     const std::vector<unsigned char>& b, Alias alias,
                                     size_t shift = 1) {
  const size_t size = typeSize(type), bytes = a.size(), front = shift * size, guard = 64;
  std::vector<unsigned char> dst(front + bytes + guard, 0xa5), lhs(dst), rhs(dst);
  std::copy(a.begin(), a.end(), lhs.begin() + front);
  std::copy(b.begin(), b.end(), rhs.begin() + front);
  unsigned char* out = dst.data() + front;
  if (alias == Alias::kDstIsA) std::copy(a.begin(), a.end(), out);
  if (alias == Alias::kDstIsB) std::copy(b.begin(), b.end(), out);
  fn(out, alias == Alias::kDstIsA ? out : lhs.data() + front,
     alias == Alias::kDstIsB ? out : rhs.data() + front, bytes / size);
  for (size_t i = 0; i < dst.size(); ++i) {
    if ((i < front || i >= front + bytes) && dst[i] != 0xa5) FAIL("kernel wrote outside dst");
  }
  return {out, out + bytes};
}

std::string describe(Isa isa, weftDataType_t type, weftRedOp_t op, size_t count) {
  return std::string(detail::isaName(isa)) + " " + typeName(type) + " " + opName(op) +
         " count=" + std::to_string(count);
}

TEST_CASE("reduce: every variant, type and op matches the scalar reference", "[reduce]") {
  for (weftDataType_t type : kTypes) {
    for (size_t count : kCounts) {
      const auto a = randomData(type, count, 1 + count * 31 + type);
      const auto b = randomData(type, count, 2 + count * 37 + type);
      for (weftRedOp_t op : kOps) {
        const auto expected = referenceResult(type, op, a, b);
        for (Isa isa : supportedIsas()) {
          ReduceFn fn = detail::kernelForIsa(isa, type, op);
          REQUIRE(fn != nullptr);
          for (Alias alias : {Alias::kNone, Alias::kDstIsA, Alias::kDstIsB}) {
            const auto actual = runKernel(fn, type, a, b, alias);
            const size_t bad = firstMismatch(type, expected.data(), actual.data(), count);
            if (bad != kNoMismatch) {
              FAIL_CHECK(describe(isa, type, op, count)
                         << " alias=" << int(alias) << " first mismatch at " << bad);
            }
          }
        }
      }
    }
  }
}

TEST_CASE("reduce: all variants agree bit for bit, heads and tails included", "[reduce]") {
  const std::vector<Isa> isas = supportedIsas();
  INFO("variants compiled and runnable here: " << isas.size());
  for (weftDataType_t type : kTypes) {
    for (weftRedOp_t op : kOps) {
      for (size_t step = 0; step < 70; ++step) {
        // Short arrays (shorter than some alignment prologues) and long ones with every tail.
        const size_t count = step % 2 ? step : step + 4099;
        const auto a = randomData(type, count, 7 * step + 3);
        const auto b = randomData(type, count, 11 * step + 5);
        const auto base =
            runKernel(detail::kernelForIsa(Isa::kBaseline, type, op), type, a, b, Alias::kNone, 0);
        for (Isa isa : isas) {
          const auto other =
              runKernel(detail::kernelForIsa(isa, type, op), type, a, b, Alias::kNone, step % 67);
          const size_t bad = firstMismatch(type, base.data(), other.data(), count);
          if (bad != kNoMismatch) FAIL_CHECK(describe(isa, type, op, count) << " at " << bad);
        }
      }
    }
  }
}

template <class T>
void checkWrap(weftDataType_t type, T a, T b, weftRedOp_t op, T expected) {
  for (Isa isa : supportedIsas()) {
    std::vector<T> x(37, a), y(37, b), out(37);
    detail::kernelForIsa(isa, type, op)(out.data(), x.data(), y.data(), out.size());
    for (T v : out) REQUIRE(int64_t(v) == int64_t(expected));
  }
}

TEST_CASE("reduce: signed sum and product wrap around", "[reduce]") {
  checkWrap<int8_t>(weftInt8, 127, 1, weftSum, -128);
  checkWrap<int8_t>(weftInt8, -128, -1, weftSum, 127);
  checkWrap<int8_t>(weftInt8, 16, 16, weftProd, 0);
  checkWrap<int8_t>(weftInt8, -128, -1, weftProd, -128);
  checkWrap<int32_t>(weftInt32, INT32_MAX, 1, weftSum, INT32_MIN);
  checkWrap<int32_t>(weftInt32, 65536, 65536, weftProd, 0);
  checkWrap<int32_t>(weftInt32, INT32_MIN, -1, weftProd, INT32_MIN);
  checkWrap<int64_t>(weftInt64, INT64_MAX, 1, weftAvg, INT64_MIN);
  checkWrap<int64_t>(weftInt64, INT64_MIN, -1, weftProd, INT64_MIN);
  checkWrap<int64_t>(weftInt64, int64_t(1) << 32, int64_t(1) << 32, weftProd, 0);
  checkWrap<uint8_t>(weftUint8, 255, 2, weftSum, 1);
  checkWrap<uint32_t>(weftUint32, 0x80000000u, 2, weftProd, 0);
  checkWrap<uint64_t>(weftUint64, UINT64_MAX, UINT64_MAX, weftProd, 1);
}

template <class TagT>
void checkNanPropagation(weftDataType_t type, typename TagT::Storage nan,
                         typename TagT::Storage one, typename TagT::Storage two) {
  using T = typename TagT::Storage;
  for (Isa isa : supportedIsas()) {
    for (weftRedOp_t op : {weftMax, weftMin}) {
      for (size_t count : {size_t(3), size_t(37)}) {
        // Element i: NaN in a (i % 3 == 0), in b (== 1), in neither (== 2).
        std::vector<T> a(count), b(count), out(count);
        for (size_t i = 0; i < count; ++i) {
          a[i] = i % 3 == 0 ? nan : one;
          b[i] = i % 3 == 1 ? nan : two;
        }
        detail::kernelForIsa(isa, type, op)(out.data(), a.data(), b.data(), count);
        INFO(describe(isa, type, op, count));
        for (size_t i = 0; i < count; ++i) {
          if (i % 3 == 2) {
            REQUIRE(std::memcmp(&out[i], op == weftMax ? &two : &one, sizeof(T)) == 0);
          } else {
            REQUIRE(isNan<TagT>(out[i]));
          }
        }
      }
    }
  }
}

TEST_CASE("reduce: max and min propagate NaN from either operand", "[reduce]") {
  checkNanPropagation<Tag<float, Kind::kFloat>>(weftFloat32, NAN, 1.0f, 2.0f);
  checkNanPropagation<Tag<double, Kind::kFloat>>(weftFloat64, NAN, 1.0, 2.0);
  checkNanPropagation<Tag<uint16_t, Kind::kHalf>>(weftFloat16, 0x7e00, 0x3c00, 0x4000);
  checkNanPropagation<Tag<uint16_t, Kind::kHalf>>(weftFloat16, 0xfd01, 0x3c00, 0x4000);
  checkNanPropagation<Tag<uint16_t, Kind::kBfloat16>>(weftBfloat16, 0x7fc0, 0x3f80, 0x4000);
}

// ---- finishAvg, dispatch and names ------------------------------------------------------------

template <class TagT>
typename TagT::Storage referenceAvg(typename TagT::Storage v, int n) {
  using T = typename TagT::Storage;
  if constexpr (TagT::kind == Kind::kInt) return T(v / T(n));
  if constexpr (TagT::kind == Kind::kFloat) return T(v * (T(1) / T(n)));
  if constexpr (TagT::kind == Kind::kHalf) return floatToHalf(halfToFloat(v) * (1.0f / float(n)));
  if constexpr (TagT::kind == Kind::kBfloat16) {
    return floatToBfloat16(bfloat16ToFloat(v) * (1.0f / float(n)));
  }
}

TEST_CASE("finishAvg: every type and variant against the reference", "[reduce]") {
  for (weftDataType_t type : kTypes) {
    for (size_t count : kCounts) {
      const auto input = randomData(type, count, 99 + count + type);
      for (int nranks : {1, 2, 3, 7, 64}) {
        std::vector<unsigned char> expected(input.size());
        visitType(type, [&](auto tag) {
          using T = typename decltype(tag)::Storage;
          for (size_t i = 0; i < count; ++i) {
            T v;
            std::memcpy(&v, input.data() + i * sizeof(T), sizeof(T));
            if (nranks > 1) v = referenceAvg<decltype(tag)>(v, nranks);
            std::memcpy(expected.data() + i * sizeof(T), &v, sizeof(T));
          }
        });
        std::vector<unsigned char> viaPublic = input;
        finishAvg(viaPublic.data(), count, type, nranks);
        INFO(typeName(type) << " count=" << count << " nranks=" << nranks);
        CHECK(firstMismatch(type, expected.data(), viaPublic.data(), count) == kNoMismatch);
        if (nranks == 1) continue;
        for (Isa isa : supportedIsas()) {
          std::vector<unsigned char> actual = input;
          detail::avgKernelForIsa(isa, type)(actual.data(), count, nranks);
          INFO(detail::isaName(isa));
          CHECK(firstMismatch(type, expected.data(), actual.data(), count) == kNoMismatch);
        }
      }
    }
  }
}

TEST_CASE("finishAvg: integer division truncates toward zero", "[reduce]") {
  std::vector<int32_t> s32 = {-7, 7, INT32_MIN, INT32_MAX, -1, 0, -5};
  finishAvg(s32.data(), s32.size(), weftInt32, 2);
  CHECK(s32 == std::vector<int32_t>{-3, 3, INT32_MIN / 2, INT32_MAX / 2, 0, 0, -2});
  std::vector<uint32_t> u32 = {UINT32_MAX, 5};
  finishAvg(u32.data(), u32.size(), weftUint32, 3);
  CHECK(u32 == std::vector<uint32_t>{UINT32_MAX / 3, 1});
  std::vector<int64_t> s64 = {INT64_MIN, INT64_MAX, -8};
  finishAvg(s64.data(), s64.size(), weftInt64, 3);
  CHECK(s64 == std::vector<int64_t>{INT64_MIN / 3, INT64_MAX / 3, -2});
  std::vector<int8_t> s8 = {-128, 127, -3};
  finishAvg(s8.data(), s8.size(), weftInt8, 2);
  CHECK(s8 == std::vector<int8_t>{-64, 63, -1});
}

TEST_CASE("reduce: dispatch covers all 50 pairs and picks the best variant", "[reduce]") {
  const Isa selected = detail::selectedIsa();
  INFO("reduction kernels dispatch to " << isaName());
  CHECK(detail::isaSupported(Isa::kBaseline));
  CHECK(detail::isaSupported(selected));
  for (int i = int(selected) + 1; i < detail::kNumIsas; ++i)
    CHECK_FALSE(detail::isaSupported(Isa(i)));
  CHECK(std::string(isaName()) == detail::isaName(selected));
  for (weftDataType_t type : kTypes) {
    for (weftRedOp_t op : kOps) {
      CHECK(kernelFor(type, op) != nullptr);
      CHECK(kernelFor(type, op) == detail::kernelForIsa(selected, type, op));
    }
    CHECK(kernelFor(type, weftAvg) == kernelFor(type, weftSum));
  }
  // Out-of-range values that the enums can still hold (casting beyond their range is undefined).
  CHECK(kernelFor(weftNumTypes, weftSum) == nullptr);
  CHECK(kernelFor(weftDataType_t(15), weftSum) == nullptr);
  CHECK(kernelFor(weftFloat32, weftNumOps) == nullptr);
  CHECK(kernelFor(weftFloat32, weftRedOp_t(7)) == nullptr);
}

TEST_CASE("reduce: type and op names, sizes and validity", "[reduce]") {
  const char* names[] = {"int8",   "uint8",   "int32",   "uint32",  "int64",
                         "uint64", "float16", "float32", "float64", "bfloat16"};
  const size_t sizes[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2};
  for (int t = 0; t < weftNumTypes; ++t) {
    CHECK(std::string(typeName(weftDataType_t(t))) == names[t]);
    CHECK(typeSize(weftDataType_t(t)) == sizes[t]);
    CHECK(isValidType(t));
  }
  const char* ops[] = {"sum", "prod", "max", "min", "avg"};
  for (int o = 0; o < weftNumOps; ++o) {
    CHECK(std::string(opName(weftRedOp_t(o))) == ops[o]);
    CHECK(isValidOp(o));
  }
  CHECK_FALSE(isValidType(-1));
  CHECK_FALSE(isValidType(weftNumTypes));
  CHECK_FALSE(isValidOp(-1));
  CHECK_FALSE(isValidOp(weftNumOps));
  CHECK(typeSize(weftDataType_t(15)) == 0);
  CHECK(std::string(typeName(weftNumTypes)) == "invalid");
  CHECK(std::string(opName(weftNumOps)) == "invalid");
}

}  // namespace
}  // namespace weft::reduce
