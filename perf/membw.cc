// Memory bandwidth of this machine, the ceiling for any intra-host collective: memcpy and a
// streaming c = a + b over float arrays (64 MiB by default), best of several repetitions, run
// by 1..T threads at once (each on its own arrays) to see what the cores reach together.
// Prints GB/s of bytes moved (memcpy: read + write = 2 x size; a + b: 3 x size), summed over
// the threads.
//   membw [MiB per array] [repetitions] [max threads]
#include <barrier>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct Arrays {
  std::vector<float> a, b, c;
  explicit Arrays(size_t count) : a(count, 1.0f), b(count, 2.0f), c(count, 0.0f) {}
};

// Runs `work` on every thread at once, `repetitions` times; returns the best wall time.
template <typename Work>
double bestSeconds(int threads, int repetitions, Work work) {
  std::barrier sync(threads + 1);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      for (int r = 0; r < repetitions; ++r) {
        sync.arrive_and_wait();
        work(t);
        sync.arrive_and_wait();
      }
    });
  }
  double best = 1e30;
  for (int r = 0; r < repetitions; ++r) {
    sync.arrive_and_wait();
    auto start = Clock::now();
    sync.arrive_and_wait();
    best = std::min(best, std::chrono::duration<double>(Clock::now() - start).count());
  }
  for (auto& thread : pool) thread.join();
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  size_t bytes = (argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 64) << 20;
  int repetitions = argc > 2 ? std::atoi(argv[2]) : 10;
  int maxThreads = argc > 3 ? std::atoi(argv[3]) : 1;
  size_t count = bytes / sizeof(float);
  std::printf("# threads array_MiB memcpy_GBps add_GBps (bytes moved: memcpy 2x, add 3x)\n");
  for (int threads = 1; threads <= maxThreads; ++threads) {
    std::vector<Arrays> arrays;
    for (int t = 0; t < threads; ++t) arrays.emplace_back(count);
    double copy = bestSeconds(threads, repetitions, [&](int t) {
      std::memcpy(arrays[t].c.data(), arrays[t].a.data(), bytes);
    });
    double add = bestSeconds(threads, repetitions, [&](int t) {
      Arrays& x = arrays[t];
      for (size_t i = 0; i < count; ++i) x.c[i] = x.a[i] + x.b[i];
    });
    std::printf("%d %zu %.2f %.2f\n", threads, bytes >> 20, threads * 2.0 * bytes / copy / 1e9,
                threads * 3.0 * bytes / add / 1e9);
  }
  return 0;
}
