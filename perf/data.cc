#include "data.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <mutex>
#include <tuple>
#include <vector>

#include "reduce/half.h"

namespace weft::perf {
namespace {

// Tags keep the hash streams of the different uses independent of each other.
enum Tag : uint64_t { kTagValue = 1, kTagSign, kTagTwos, kTagStart, kTagPattern };

// splitmix64's finaliser: cheap, and every input bit affects every output bit.
uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t hashOf(uint64_t seed, Tag tag, uint64_t a, uint64_t b) {
  return mix64(mix64(mix64(seed ^ (uint64_t(tag) << 56)) + a) + b);
}

bool isUnsigned(weftDataType_t type) {
  return type == weftUint8 || type == weftUint32 || type == weftUint64;
}

// The largest magnitude up to which every integer is exact in the type and no sum wraps. Capped at
// 2^52 so that the int64 arithmetic computing expected values cannot overflow either.
int64_t exactLimit(weftDataType_t type) {
  switch (type) {
    case weftInt8:
      return INT8_MAX;
    case weftUint8:
      return UINT8_MAX;
    case weftInt32:
      return INT32_MAX;
    case weftUint32:
      return UINT32_MAX;
    case weftFloat16:
      return 2048;  // 11 significant bits
    case weftBfloat16:
      return 256;  // 8 significant bits
    case weftFloat32:
      return int64_t(1) << 24;
    default:
      return int64_t(1) << 52;  // int64, uint64, float64
  }
}

// How many factors of 2 one element may collect over all ranks: 2^e (negated for signed types)
// must stay in range. float16's 2^15 is below its largest finite value, 65504.
int prodExponentLimit(weftDataType_t type) {
  switch (type) {
    case weftInt8:
      return 6;
    case weftUint8:
      return 7;
    case weftFloat16:
      return 15;
    case weftInt32:
    case weftFloat32:
    case weftBfloat16:
      return 30;
    case weftUint32:
      return 31;
    default:
      return 52;
  }
}

// A value in [-limit, limit] (signed types) or [0, limit] (unsigned ones).
int64_t spread(uint64_t hash, int64_t limit, bool isUnsignedType) {
  if (isUnsignedType) return int64_t(hash % (uint64_t(limit) + 1));
  return int64_t(hash % (2 * uint64_t(limit) + 1)) - limit;
}

// A normal, finite floating-point number (or plain bits for integers): data-movement payload.
uint64_t patternBits(weftDataType_t type, uint64_t hash) {
  const uint64_t more = mix64(hash);  // sign and exponent come from independent bits
  const uint64_t sign = more >> 63;
  switch (type) {
    case weftFloat16:
      return sign << 15 | (1 + (more >> 8) % 30) << 10 | (hash & 0x3ff);
    case weftBfloat16:
      return sign << 15 | (1 + (more >> 8) % 254) << 7 | (hash & 0x7f);
    case weftFloat32:
      return sign << 31 | (1 + (more >> 8) % 254) << 23 | (hash & 0x7fffff);
    case weftFloat64:
      return sign << 63 | (1 + (more >> 8) % 2046) << 52 | (hash & ((uint64_t(1) << 52) - 1));
    default:
      return hash;
  }
}

void storeBits(void* dst, size_t size, uint64_t bits) {
  switch (size) {
    case 1:
      *static_cast<uint8_t*>(dst) = uint8_t(bits);
      break;
    case 2: {
      const uint16_t v = uint16_t(bits);
      std::memcpy(dst, &v, 2);
      break;
    }
    case 4: {
      const uint32_t v = uint32_t(bits);
      std::memcpy(dst, &v, 4);
      break;
    }
    default:
      std::memcpy(dst, &bits, 8);
      break;
  }
}

template <class T>
void storeAs(void* dst, T value) {
  std::memcpy(dst, &value, sizeof(T));
}

}  // namespace

size_t typeSize(weftDataType_t type) {
  switch (type) {
    case weftInt8:
    case weftUint8:
      return 1;
    case weftFloat16:
    case weftBfloat16:
      return 2;
    case weftInt32:
    case weftUint32:
    case weftFloat32:
      return 4;
    default:
      return 8;
  }
}

uint64_t mixSeed(uint64_t a, uint64_t b) {
  return mix64(mix64(a) ^ (b + 0x632be59bd9b4e019ull));
}

int64_t reduceInputValue(weftDataType_t type, weftRedOp_t op, int nranks, int rank, uint64_t seed,
                         uint64_t index) {
  const bool unsignedType = isUnsigned(type);
  switch (op) {
    case weftSum:
    case weftAvg: {
      // nranks values of at most `each` in magnitude add up to at most the limit. With more ranks
      // than the limit, only the first `limit` ranks contribute (0 or +-1), the others add 0.
      const int64_t limit = exactLimit(type);
      int64_t each = limit / nranks;
      if (each == 0) {
        if (rank >= limit) return 0;
        each = 1;
      }
      return spread(hashOf(seed, kTagValue, uint64_t(rank), index), each, unsignedType);
    }
    case weftProd: {
      // A window of `twos` consecutive ranks (from a per-element start) contributes 2, the others
      // 1; signed types flip signs at random, which keeps magnitudes powers of two.
      const uint64_t n = uint64_t(nranks);
      const uint64_t maxTwos = uint64_t(std::min(prodExponentLimit(type), nranks));
      const uint64_t twos = hashOf(seed, kTagTwos, index, 0) % (maxTwos + 1);
      const uint64_t start = hashOf(seed, kTagStart, index, 0) % n;
      int64_t value = (uint64_t(rank) + n - start) % n < twos ? 2 : 1;
      if (!unsignedType && (hashOf(seed, kTagSign, uint64_t(rank), index) & 1)) value = -value;
      return value;
    }
    default:  // max, min: anything exact
      return spread(hashOf(seed, kTagValue, uint64_t(rank), index), exactLimit(type), unsignedType);
  }
}

void storeInteger(void* dst, weftDataType_t type, int64_t value) {
  switch (type) {
    case weftInt8:
      storeAs(dst, int8_t(value));
      break;
    case weftUint8:
      storeAs(dst, uint8_t(value));
      break;
    case weftInt32:
      storeAs(dst, int32_t(value));
      break;
    case weftUint32:
      storeAs(dst, uint32_t(value));
      break;
    case weftInt64:
      storeAs(dst, value);
      break;
    case weftUint64:
      storeAs(dst, uint64_t(value));
      break;
    case weftFloat16:
      storeAs(dst, weft::floatToHalf(float(value)));
      break;
    case weftFloat32:
      storeAs(dst, float(value));
      break;
    case weftFloat64:
      storeAs(dst, double(value));
      break;
    case weftBfloat16:
      storeAs(dst, weft::floatToBfloat16(float(value)));
      break;
    default:
      break;
  }
}

void storeAverage(void* dst, weftDataType_t type, int64_t sum, int nranks) {
  // float(sum) and double(sum) are exact: sums stay within exactLimit().
  switch (type) {
    case weftFloat16:
      storeAs(dst, weft::floatToHalf(float(sum) * (1.0f / float(nranks))));
      break;
    case weftBfloat16:
      storeAs(dst, weft::floatToBfloat16(float(sum) * (1.0f / float(nranks))));
      break;
    case weftFloat32:
      storeAs(dst, float(sum) * (1.0f / float(nranks)));
      break;
    case weftFloat64:
      storeAs(dst, double(sum) * (1.0 / double(nranks)));
      break;
    default:
      storeInteger(dst, type, sum / nranks);
      break;  // C++ truncates toward zero
  }
}

void fillPattern(void* buf, size_t count, weftDataType_t type, uint64_t seed, size_t firstIndex) {
  const size_t size = typeSize(type);
  char* out = static_cast<char*>(buf);
  for (size_t i = 0; i < count; ++i) {
    const uint64_t hash = hashOf(seed, kTagPattern, firstIndex + i, 0);
    storeBits(out + i * size, size, patternBits(type, hash));
  }
}

void fillReduceInput(void* buf, size_t count, weftDataType_t type, weftRedOp_t op, int nranks,
                     int rank, uint64_t seed, size_t firstIndex) {
  const size_t size = typeSize(type);
  char* out = static_cast<char*>(buf);
  for (size_t i = 0; i < count; ++i) {
    storeInteger(out + i * size, type,
                 reduceInputValue(type, op, nranks, rank, seed, firstIndex + i));
  }
}

namespace {

void computeReduceExpected(void* buf, size_t count, weftDataType_t type, weftRedOp_t op, int nranks,
                           uint64_t seed, size_t firstIndex) {
  const size_t size = typeSize(type);
  char* out = static_cast<char*>(buf);
  for (size_t i = 0; i < count; ++i) {
    // Exact in int64 whatever the order: the values were chosen so (see data.h).
    int64_t acc = reduceInputValue(type, op, nranks, 0, seed, firstIndex + i);
    for (int r = 1; r < nranks; ++r) {
      const int64_t v = reduceInputValue(type, op, nranks, r, seed, firstIndex + i);
      switch (op) {
        case weftProd:
          acc *= v;
          break;
        case weftMax:
          acc = std::max(acc, v);
          break;
        case weftMin:
          acc = std::min(acc, v);
          break;
        default:
          acc += v;
          break;  // sum, avg
      }
    }
    if (op == weftAvg) {
      storeAverage(out + i * size, type, acc, nranks);
    } else {
      storeInteger(out + i * size, type, acc);
    }
  }
}

// The last expected buffer computed in this process. Every rank of an all-reduce expects the same
// values, and each costs nranks values per element: with -t 1024 thread-ranks, computing it once
// per process instead of once per thread is the difference between a second and an hour.
struct ExpectedMemo {
  std::mutex mutex;
  std::tuple<size_t, int, int, int, uint64_t, size_t> key{0, -1, -1, 0, 0, 0};
  std::vector<char> values;
};

}  // namespace

void fillReduceExpected(void* buf, size_t count, weftDataType_t type, weftRedOp_t op, int nranks,
                        uint64_t seed, size_t firstIndex) {
  static ExpectedMemo memo;
  const size_t bytes = count * typeSize(type);
  const auto key = std::make_tuple(count, int(type), int(op), nranks, seed, firstIndex);
  std::lock_guard<std::mutex> lock(memo.mutex);
  if (memo.key != key) {
    memo.values.resize(bytes);
    computeReduceExpected(memo.values.data(), count, type, op, nranks, seed, firstIndex);
    memo.key = key;
  }
  if (bytes > 0) std::memcpy(buf, memo.values.data(), bytes);
}

int64_t countMismatches(const void* got, const void* want, size_t count, size_t eltSize) {
  if (count == 0 || std::memcmp(got, want, count * eltSize) == 0) return 0;
  const char* a = static_cast<const char*>(got);
  const char* b = static_cast<const char*>(want);
  int64_t wrong = 0;
  for (size_t i = 0; i < count; ++i) {
    wrong += std::memcmp(a + i * eltSize, b + i * eltSize, eltSize) != 0;
  }
  return wrong;
}

}  // namespace weft::perf
