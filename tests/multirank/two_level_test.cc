// The two-level algorithms (and the tuner's choices) on thread ranks whose host identities are
// overridden to form nodes: even and uneven nodes, ranks numbered node by node, interleaved and
// scattered, over shm inside nodes and tcp between them.
#include <dirent.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <iterator>
#include <string>
#include <vector>

#include "multirank/check_matrix.h"
#include "scoped_env.h"

namespace weft::test {
namespace {

// Layout strings name each rank's node: "AABB" is two nodes numbered node by node, "ABAB"
// interleaved, "AABAC" uneven and scattered.
const char* nodeOf(const std::string& layout, int rank) {
  static const char* kHosts[] = {"node-A", "node-B", "node-C", "node-D"};
  return kHosts[layout[rank] - 'A'];
}

void checkLayout(const std::string& layout, const MatrixOptions& options) {
  checkMatrix(static_cast<int>(layout.size()), options,
              [&](int rank) { return nodeOf(layout, rank); });
}

}  // namespace

TEST_CASE("two-level algorithms on even, uneven and interleaved nodes", "[threads][two_level]") {
  // Each entry runs the collectives it forces. The chain reduce's entry runs all four: its
  // all-reduce, all-gather and broadcast are the library's own choices on these layouts.
  const Coll kAll[] = {Coll::kAllReduce, Coll::kAllGather, Coll::kBroadcast, Coll::kReduce};
  const int entry = GENERATE(range(0, 6));
  const char* const kAlgos[] = {
      "allreduce=two_level_leader,allgather=two_level_leader,"
      "broadcast=two_level_leader,reduce=two_level_leader",
      "reduce=two_level_leader/chain",
      "allreduce=two_level_split",
      "allreduce=two_level_shm",
      "allreduce=two_level_replicated",
      "allreduce=two_level_replicated/ring"};
  const char* algos = kAlgos[entry];
  const char* layout =
      GENERATE("A", "AB", "AABB", "ABAB", "AABBCCDD", "ABCDABCD", "AAAB", "AABAC", "BAAB", "AAA");
  const char* slices = GENERATE("256", "524288");
  CAPTURE(algos, layout, slices);
  ScopedEnv forced("WEFT_ALGO", algos);
  ScopedEnv sliceBytes("WEFT_SLICE_BYTES", slices);
  MatrixOptions options;
  options.colls = entry < 2 ? std::vector<Coll>(std::begin(kAll), std::end(kAll))
                            : std::vector<Coll>{Coll::kAllReduce};
  options.types = {weftFloat32, weftInt32, weftBfloat16};
  checkLayout(layout, options);
}

TEST_CASE("two-level stages on shared windows over many rounds of a small window",
          "[threads][two_level]") {
  // 64 KiB windows: the split's stages inside a node and two_level_shm's take several rounds
  // each; nodes larger than the fewest ranks per node contribute without owning a part. The
  // two-level all-gather hands its blocks to the leader on the windows, and it and the
  // two-level broadcast end with a broadcast inside each node on them from 64 KiB, from a root
  // anywhere in its node.
  ScopedEnv window("WEFT_SHM_WINDOW_BYTES", "65536");
  const std::string algos = GENERATE("allreduce=two_level_split", "allreduce=two_level_shm",
                                     "allreduce=two_level_replicated",
                                     "allgather=two_level_leader,broadcast=two_level_leader");
  const char* layout = GENERATE("AAB", "ABA", "AABB", "ABAB", "AAABBC", "AAABB");
  CAPTURE(algos, layout);
  ScopedEnv forced("WEFT_ALGO", algos.c_str());
  MatrixOptions options;
  options.colls = algos.rfind("allreduce", 0) == 0
                      ? std::vector<Coll>{Coll::kAllReduce}
                      : std::vector<Coll>{Coll::kAllGather, Coll::kBroadcast};
  options.types = {weftFloat32, weftFloat16, weftInt64};
  options.counts = {0, 1, 7, 16381, 40000};  // 40000 x 8 bytes: 10 rounds of 32 KiB areas
  checkLayout(layout, options);
}

TEST_CASE("the replicated all-reduce gives every rank the same bits", "[threads][two_level]") {
  // Every local rank runs its own all-reduce among nodes, so a rank whose group added the node
  // sums in another order would end with other bits: fractions that rounding keeps apart. On
  // uneven nodes the ranks past the smallest node's count receive the result from a node-mate.
  const char* layout = GENERATE("AABB", "ABAB", "AAABBC", "ABCABA");
  const char* window = GENERATE("1048576", "65536");
  const char* transport = GENERATE("", "tcp");
  CAPTURE(layout, window, transport);
  ScopedEnv forced("WEFT_ALGO", "allreduce=two_level_replicated");
  ScopedEnv windowBytes("WEFT_SHM_WINDOW_BYTES", window);
  ScopedEnv transports("WEFT_TRANSPORT", *transport ? transport : nullptr);
  const int n = static_cast<int>(std::strlen(layout));
  if (skippedForRankCap(n)) return;
  // 20000 floats pass the 16 KiB limit of the node stage's single flag round.
  const std::vector<size_t> counts = {1, 13, 1000, 20000};
  std::vector<std::vector<std::vector<float>>> results(counts.size(),
                                                       std::vector<std::vector<float>>(n));
  std::vector<std::string> errors(n);
  std::vector<weftConfig_t> configs(n, weftConfig_t(WEFT_CONFIG_INITIALIZER));
  for (int rank = 0; rank < n; ++rank) configs[rank].hostId = nodeOf(layout, rank);
  std::string init = runAsThreadsWith(
      n,
      [&](weftComm_t comm, int rank) {
        for (size_t c = 0; c < counts.size(); ++c) {
          std::vector<float> buf(counts[c]);
          for (size_t i = 0; i < buf.size(); ++i) buf[i] = 1.0f / float(3 + rank * 7 + i % 11);
          if (weftAllReduce(buf.data(), buf.data(), buf.size(), weftFloat32, weftSum, comm,
                            nullptr) != weftSuccess) {
            errors[rank] = weftGetLastError(comm);
          }
          results[c][rank] = std::move(buf);
        }
      },
      [&](int rank) { return &configs[rank]; });
  REQUIRE(init.empty());
  for (int rank = 0; rank < n; ++rank) {
    INFO("rank " << rank << ": " << errors[rank]);
    CHECK(errors[rank].empty());
  }
  for (size_t c = 0; c < counts.size(); ++c) {
    for (int rank = 1; rank < n; ++rank) {
      INFO("count " << counts[c] << ", rank " << rank << " against rank 0");
      CHECK(results[c][rank] == results[c][0]);
    }
    // And the sum is the sum: within float rounding of the exact one.
    const double exact = [&] {
      double sum = 0;
      for (int rank = 0; rank < n; ++rank) sum += 1.0 / (3 + rank * 7);
      return sum;
    }();
    CHECK(results[c][0][0] == Approx(exact).epsilon(1e-5));
  }
}

TEST_CASE("flat algorithms arranged for the layout on several nodes", "[threads][two_level]") {
  // Rabenseifner starts with the nearest partner where ranks are numbered node by node.
  const char* algos = GENERATE("allreduce=rabenseifner", "allreduce=tree");
  const char* layout = GENERATE("AABB", "AABBCCDD", "AAABBBC", "ABAB");
  CAPTURE(algos, layout);
  ScopedEnv forced("WEFT_ALGO", algos);
  MatrixOptions options;
  options.colls = {Coll::kAllReduce};
  options.types = {weftFloat32, weftInt32};
  checkLayout(layout, options);
}

TEST_CASE("the tuner's own choices on several nodes", "[threads][two_level]") {
  const char* layout = GENERATE("AABB", "ABAB", "AABBBC", "AABBCCDD");
  const char* net = GENERATE("10Gbit,25us", "1Gbit,200us");
  CAPTURE(layout, net);
  ScopedEnv costs("WEFT_TUNE_NET", net);
  MatrixOptions options;
  options.types = {weftFloat32, weftInt8, weftFloat64};
  checkLayout(layout, options);
}

TEST_CASE("online trials try close candidates and every rank settles on one",
          "[threads][two_level]") {
  // Every shape the model ranks close gets trial calls with different algorithms; results must
  // stay right throughout, and ranks that settled on different winners would deadlock (the
  // matrix's deadline fails the test).
  const char* layout = GENERATE("AABB", "ABAB", "AABBBC");
  const char* calls = GENERATE("1", "2");
  CAPTURE(layout, calls);
  ScopedEnv online("WEFT_TUNE_ONLINE", calls);
  MatrixOptions options;
  options.colls = {Coll::kAllReduce, Coll::kBroadcast, Coll::kAllGather};
  options.types = {weftFloat32, weftInt32};
  checkLayout(layout, options);
}

TEST_CASE("links calibrated at init and cached by rank 0", "[threads][two_level]") {
  std::string cache = "/tmp/weft_calibration_test_" + std::to_string(getpid());
  ScopedEnv where("XDG_CACHE_HOME", cache.c_str());
  ScopedEnv calibrate("WEFT_TUNE_CALIBRATE", "1");
  MatrixOptions options;
  options.colls = {Coll::kAllReduce, Coll::kBroadcast, Coll::kAllGather};
  options.types = {weftFloat32};
  // Three ranks on two nodes: a shared-memory pair and a network link to measure, within the
  // rank cap of the sanitizer runs.
  checkLayout("AAB", options);  // measures and writes the cache
  DIR* directory = opendir((cache + "/weft").c_str());
  REQUIRE(directory != nullptr);
  int files = 0;
  while (dirent* entry = readdir(directory)) files += entry->d_name[0] != '.';
  closedir(directory);
  CHECK(files == 1);
  checkLayout("AAB", options);  // reads it
  CHECK(std::system(("rm -rf " + cache).c_str()) == 0);
}

}  // namespace weft::test
