// Every collective over 1..8 ranks running as threads, checked against local references.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "multirank/coll_matrix.h"
#include "multirank/rank_threads.h"
#include "scoped_env.h"

namespace weft::test {
namespace {

// Sanitizer builds run 5-20x slower; CI caps their rank counts with WEFT_TEST_MAX_RANKS.
bool skippedForRankCap(int n) {
  const char* cap = std::getenv("WEFT_TEST_MAX_RANKS");
  if (cap == nullptr || n <= std::atoi(cap)) return false;
  WARN("skipped: " << n << " ranks exceed WEFT_TEST_MAX_RANKS=" << cap);
  return true;
}

// Runs the matrix on n threads and fails the test with the first messages on any mismatch.
// hostOf(rank), when given, overrides each rank's host identity (to mix shm and tcp).
void checkMatrix(int n, const MatrixOptions& options,
                 const std::function<const char*(int)>& hostOf = nullptr) {
  if (skippedForRankCap(n)) return;
  std::mutex mutex;
  MatrixResult total;
  std::vector<weftConfig_t> configs(n, weftConfig_t(WEFT_CONFIG_INITIALIZER));
  for (int rank = 0; hostOf && rank < n; ++rank) configs[rank].hostId = hostOf(rank);
  std::string initErrors = runAsThreadsWith(
      n,
      [&](weftComm_t comm, int) {
        MatrixResult result = runMatrix(comm, options);
        std::lock_guard<std::mutex> lock(mutex);
        total.calls += result.calls;
        total.failures += result.failures;
        total.messages.insert(total.messages.end(), result.messages.begin(), result.messages.end());
      },
      [&](int rank) { return &configs[rank]; });
  INFO(initErrors);
  REQUIRE(initErrors.empty());
  std::string messages;
  for (const auto& message : total.messages) messages += message + "\n";
  INFO(messages);
  CHECK(total.failures == 0);
  CHECK(total.calls > 0);
}

}  // namespace

TEST_CASE("every collective, datatype, op and size class on 1..8 thread ranks", "[threads]") {
  int n = GENERATE(1, 2, 3, 4, 5, 6, 7, 8);
  CAPTURE(n);
  checkMatrix(n, MatrixOptions{});  // one host: shared memory
}

TEST_CASE("every collective over tcp on 2..8 thread ranks", "[threads][tcp]") {
  ScopedEnv transport("WEFT_TRANSPORT", "tcp");
  int n = GENERATE(2, 3, 5, 8);
  CAPTURE(n);
  checkMatrix(n, MatrixOptions{});
}

TEST_CASE("a communicator mixing shm and tcp (host identities overridden)", "[threads][mixed]") {
  // Two hosts of two ranks, numbered host by host and interleaved; and three uneven hosts.
  const char* layout = GENERATE("AABB", "ABAB", "AABBBC");
  CAPTURE(layout);
  int n = static_cast<int>(std::string(layout).size());
  MatrixOptions options;
  options.types = {weftFloat32, weftInt8, weftBfloat16};
  checkMatrix(n, options, [&](int rank) {
    static const char* kHosts[] = {"host-A", "host-B", "host-C"};
    return kHosts[layout[rank] - 'A'];
  });
}

TEST_CASE("non-blocking calls complete through weftWait", "[threads]") {
  int n = GENERATE(2, 3);
  CAPTURE(n);
  MatrixOptions options;
  options.nonBlocking = true;
  options.types = {weftFloat32, weftInt8};
  checkMatrix(n, options);
}

TEST_CASE("forced algorithms with tiny pipeline slices", "[threads]") {
  // Slices of 256 bytes make the large size class span hundreds of slices, exercising the
  // pipelines' receive windows and slot reuse.
  ScopedEnv slices("WEFT_SLICE_BYTES", "256");
  const char* algos =
      GENERATE("allreduce=ring,broadcast=chain,reduce=chain,allgather=ring,reducescatter=ring",
               "allreduce=recursive_doubling,broadcast=binomial,reduce=binomial");
  const char* transport = GENERATE("shm", "tcp");
  int n = GENERATE(2, 3, 5, 8);
  CAPTURE(algos, transport, n);
  ScopedEnv forced("WEFT_ALGO", algos);
  ScopedEnv via("WEFT_TRANSPORT", transport);
  MatrixOptions options;
  options.colls = {Coll::kAllReduce, Coll::kBroadcast, Coll::kReduce, Coll::kAllGather,
                   Coll::kReduceScatter};
  options.types = {weftFloat16, weftInt32, weftFloat64};
  checkMatrix(n, options);
}

}  // namespace weft::test

namespace weft::test {

TEST_CASE("shared-memory direct algorithms over many rounds of a small window", "[threads]") {
  // 64 KiB windows: the large size class takes several rounds of each direct algorithm, and the
  // rounds' flags and alternating halves are exercised across calls.
  ScopedEnv window("WEFT_SHM_WINDOW_BYTES", "65536");
  int n = GENERATE(2, 3, 5, 8);
  CAPTURE(n);
  MatrixOptions options;
  options.colls = {Coll::kAllReduce, Coll::kBroadcast, Coll::kReduce, Coll::kAllGather,
                   Coll::kReduceScatter};
  options.types = {weftFloat16, weftInt32, weftFloat64};
  checkMatrix(n, options);
}

TEST_CASE("large messages striped over several sockets per peer", "[threads]") {
  ScopedEnv sockets("WEFT_NSOCKS", "3");
  ScopedEnv transport("WEFT_TRANSPORT", "tcp");
  int n = GENERATE(2, 3);
  CAPTURE(n);
  MatrixOptions options;
  options.colls = {Coll::kAllReduce, Coll::kBroadcast, Coll::kAllGather, Coll::kAlltoAll,
                   Coll::kSendRecv};
  options.types = {weftFloat32};
  options.ops = {weftSum};
  options.counts = {300007};  // 1.2 MB: above the 256 KiB striping threshold
  checkMatrix(n, options);
}

}  // namespace weft::test

namespace weft::test {

TEST_CASE("IPv6: the whole matrix over ::1", "[threads][ipv6]") {
  ScopedEnv family("WEFT_SOCKET_FAMILY", "AF_INET6");
  ScopedEnv transport("WEFT_TRANSPORT", "tcp");
  int n = GENERATE(2, 4);
  CAPTURE(n);
  MatrixOptions options;
  options.types = {weftFloat32, weftUint8};
  options.ops = {weftSum, weftMax};
  checkMatrix(n, options);
}

}  // namespace weft::test

namespace weft::test {

TEST_CASE("tree, Rabenseifner, Bruck and recursive-doubling all-gather on 1..8 ranks",
          "[threads][algos]") {
  // 256-byte slices cut the tree's halves into many chunks, so its up and down pipelines overlap
  // and reuse their staging slots; default slices run the same in one or two chunks.
  const bool tiny = GENERATE(true, false);
  const char* slices = tiny ? "256" : nullptr;
  const char* algos = GENERATE("allreduce=tree,allgather=bruck",
                               "allreduce=rabenseifner,allgather=recursive_doubling");
  const char* transport = GENERATE("shm", "tcp");
  int n = GENERATE(range(1, 9));
  CAPTURE(slices ? slices : "default", algos, transport, n);
  ScopedEnv sliceBytes("WEFT_SLICE_BYTES", slices);
  ScopedEnv forced("WEFT_ALGO", algos);
  ScopedEnv via("WEFT_TRANSPORT", transport);
  MatrixOptions options;
  options.colls = {Coll::kAllReduce, Coll::kAllGather};
  options.types = {weftFloat16, weftInt32, weftFloat64, weftBfloat16};
  checkMatrix(n, options);
}

}  // namespace weft::test
