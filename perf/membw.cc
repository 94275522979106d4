// Memory bandwidth of this machine, the ceiling for any intra-node collective: memcpy and a
// streaming c = a + b over 64 MiB float arrays (single thread), best of several repetitions.
// Prints GB/s of bytes moved (memcpy: read + write = 2 x size; a + b: 3 x size).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

template <typename Fn>
double bestSeconds(int repetitions, Fn fn) {
  double best = 1e30;
  for (int r = 0; r < repetitions; ++r) {
    auto start = std::chrono::steady_clock::now();
    fn();
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (seconds < best) best = seconds;
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  size_t bytes = (argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 64) << 20;
  int repetitions = argc > 2 ? std::atoi(argv[2]) : 10;
  size_t count = bytes / sizeof(float);
  std::vector<float> a(count, 1.0f), b(count, 2.0f), c(count, 0.0f);
  double copy = bestSeconds(repetitions, [&] { std::memcpy(c.data(), a.data(), bytes); });
  double add = bestSeconds(repetitions, [&] {
    for (size_t i = 0; i < count; ++i) c[i] = a[i] + b[i];
  });
  std::printf("# array_MiB memcpy_GBps add_GBps (bytes moved: memcpy 2x, add 3x)\n");
  std::printf("%zu %.2f %.2f\n", bytes >> 20, 2.0 * bytes / copy / 1e9, 3.0 * bytes / add / 1e9);
  return c[count / 2] == 3.0f ? 0 : 1;
}
