// Throughput of the reduction kernels, per compiled variant, on one core.
//
//   reduce_bench [seconds-per-case]     (default 0.5)
//
// Build alone (from the repository root), all on one line:
//   g++ -std=c++20 -O3 -Iinclude -Isrc perf/reduce_bench.cc src/reduce/*.cc -o reduce_bench
// In CMake it needs weft_internal rather than weft: it reaches each variant through the internal
// src/reduce/kernels.h.
//
// GB/s counts the bytes of dst written per second (10^9 bytes). Each element also reads two
// inputs, so the memory traffic is about three times that (four with the read-for-ownership of a
// dst line that is not cached, in the out-of-place case). "in place" is dst == a, the common case
// in a collective. Inputs are ordinary normal numbers, so no subnormal slow paths are measured.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "reduce/half.h"
#include "reduce/kernels.h"
#include "reduce/reduce.h"

namespace {

using weft::reduce::ReduceFn;
using weft::reduce::detail::Isa;
using Clock = std::chrono::steady_clock;

struct Buffers {
  std::vector<unsigned char> dst, a, b;
};

void fill(std::vector<unsigned char>& bytes, weftDataType_t type, unsigned seed) {
  const size_t size = weft::typeSize(type), count = bytes.size() / size;
  for (size_t i = 0; i < count; ++i) {
    // Values in [1, 2): finite, normal and far from overflow after many repetitions of a sum
    // whose result is not fed back (out of place) or grows slowly (in place, float types).
    const float value = 1.0f + float((i * 2654435761u + seed) % 1024) / 1024.0f;
    unsigned char* p = bytes.data() + i * size;
    switch (type) {
      case weftFloat32:
        std::memcpy(p, &value, 4);
        break;
      case weftFloat16: {
        const uint16_t h = weft::floatToHalf(value);
        std::memcpy(p, &h, 2);
        break;
      }
      case weftBfloat16: {
        const uint16_t h = weft::floatToBfloat16(value);
        std::memcpy(p, &h, 2);
        break;
      }
      default: {
        const int32_t v = int32_t(value * 1000);
        std::memcpy(p, &v, size);
        break;
      }
    }
  }
}

// Best of several trials, each long enough to swamp the clock's resolution.
double measureGBps(ReduceFn fn, Buffers& buf, size_t count, size_t bytes, bool inPlace,
                   double secondsPerCase) {
  void* dst = buf.dst.data();
  const void* a = inPlace ? buf.dst.data() : buf.a.data();
  const void* b = buf.b.data();
  fn(dst, a, b, count);  // touches every page and warms the caches
  const auto start = Clock::now();
  size_t calls = 0;
  while (std::chrono::duration<double>(Clock::now() - start).count() < secondsPerCase / 10) {
    fn(dst, a, b, count);
    ++calls;
  }
  double best = 0;
  for (int trial = 0; trial < 5; ++trial) {
    const auto t0 = Clock::now();
    for (size_t i = 0; i < calls; ++i) fn(dst, a, b, count);
    const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    const double gbps = double(bytes) * double(calls) / seconds / 1e9;
    if (gbps > best) best = gbps;
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  const double secondsPerCase = argc > 1 ? std::atof(argv[1]) : 0.5;
  const weftDataType_t types[] = {weftFloat32, weftFloat16, weftBfloat16, weftInt32};
  const size_t sizes[] = {size_t(64) << 20, size_t(256) << 10};

  std::printf("dispatch picks: %s\n", weft::reduce::isaName());
  std::printf("%-9s %-9s %8s %14s %14s\n", "variant", "type", "dst", "GB/s out-of-pl",
              "GB/s in place");
  for (int isaIndex = weft::reduce::detail::kNumIsas - 1; isaIndex >= 0; --isaIndex) {
    const Isa isa = Isa(isaIndex);
    if (!weft::reduce::detail::isaSupported(isa)) continue;
    for (size_t bytes : sizes) {
      for (weftDataType_t type : types) {
        const size_t count = bytes / weft::typeSize(type);
        Buffers buf{std::vector<unsigned char>(bytes), std::vector<unsigned char>(bytes),
                    std::vector<unsigned char>(bytes)};
        fill(buf.a, type, 1);
        fill(buf.b, type, 2);
        fill(buf.dst, type, 3);
        ReduceFn fn = weft::reduce::detail::kernelForIsa(isa, type, weftSum);
        const double outOfPlace = measureGBps(fn, buf, count, bytes, false, secondsPerCase);
        const double inPlace = measureGBps(fn, buf, count, bytes, true, secondsPerCase);
        std::printf("%-9s %-9s %5zu %s %14.1f %14.1f\n", weft::reduce::detail::isaName(isa),
                    weft::typeName(type), bytes >= (1 << 20) ? bytes >> 20 : bytes >> 10,
                    bytes >= (1 << 20) ? "MiB" : "KiB", outOfPlace, inPlace);
      }
    }
  }
  return 0;
}
