// The two-level algorithms (and the tuner's choices) on thread ranks whose host identities are
// overridden to form nodes: even and uneven nodes, ranks numbered node by node, interleaved and
// scattered, over shm inside nodes and tcp between them.
#include <dirent.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

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
  const char* algos = GENERATE(
      "allreduce=two_level_leader,allgather=two_level_leader,"
      "broadcast=two_level_leader,reduce=two_level_leader",
      "reduce=two_level_leader/chain", "allreduce=two_level_split", "allreduce=two_level_shm");
  const char* layout =
      GENERATE("A", "AB", "AABB", "ABAB", "AABBCCDD", "ABCDABCD", "AAAB", "AABAC", "BAAB", "AAA");
  const char* slices = GENERATE("256", "524288");
  CAPTURE(algos, layout, slices);
  ScopedEnv forced("WEFT_ALGO", algos);
  ScopedEnv sliceBytes("WEFT_SLICE_BYTES", slices);
  MatrixOptions options;
  options.colls = {Coll::kAllReduce, Coll::kAllGather, Coll::kBroadcast, Coll::kReduce};
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
