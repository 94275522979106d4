// Every collective over 1..8 ranks running as threads, checked against local references.
#include <catch2/catch.hpp>

#include <string>

#include "multirank/check_matrix.h"
#include "scoped_env.h"

namespace weft::test {

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
  // Each entry runs the collectives it forces.
  const bool pipelined = GENERATE(true, false);
  const char* algos =
      pipelined ? "allreduce=ring,broadcast=chain,reduce=chain,allgather=ring,reducescatter=ring"
                : "allreduce=recursive_doubling,broadcast=binomial,reduce=binomial";
  const char* transport = GENERATE("shm", "tcp");
  int n = GENERATE(2, 3, 5, 8);
  CAPTURE(algos, transport, n);
  ScopedEnv forced("WEFT_ALGO", algos);
  ScopedEnv via("WEFT_TRANSPORT", transport);
  MatrixOptions options;
  options.colls = {Coll::kAllReduce, Coll::kBroadcast, Coll::kReduce};
  if (pipelined) {
    options.colls.insert(options.colls.end(), {Coll::kAllGather, Coll::kReduceScatter});
  }
  options.types = {weftFloat16, weftInt32, weftFloat64};
  checkMatrix(n, options);
}

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
  // Tiny slices on the rank counts of "forced algorithms with tiny pipeline slices".
  if (tiny && n != 2 && n != 3 && n != 5 && n != 8) return;
  CAPTURE(slices ? slices : "default", algos, transport, n);
  ScopedEnv sliceBytes("WEFT_SLICE_BYTES", slices);
  ScopedEnv forced("WEFT_ALGO", algos);
  ScopedEnv via("WEFT_TRANSPORT", transport);
  MatrixOptions options;
  options.colls = {Coll::kAllReduce, Coll::kAllGather};
  options.types = {weftFloat16, weftInt32, weftFloat64, weftBfloat16};
  checkMatrix(n, options);
}

TEST_CASE("recursive-halving reduce-scatter and Bruck all-to-all on 1..8 ranks",
          "[threads][algos]") {
  const char* transport = GENERATE("shm", "tcp");
  int n = GENERATE(range(1, 9));
  CAPTURE(transport, n);
  ScopedEnv forced("WEFT_ALGO", "reducescatter=recursive_halving,alltoall=bruck");
  ScopedEnv via("WEFT_TRANSPORT", transport);
  MatrixOptions options;
  options.colls = {Coll::kReduceScatter, Coll::kAlltoAll};
  options.types = {weftFloat16, weftInt32, weftFloat64, weftBfloat16};
  checkMatrix(n, options);
}

}  // namespace weft::test
