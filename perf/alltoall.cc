// alltoall_perf: weftAlltoAll. Size = each rank's whole buffer (count * n * type size), count =
// one block; busbw = algbw * (n-1)/n with algbw = count * n * type size / time.
#include "common.h"
#include "data.h"

namespace weft::perf {
namespace {

CollCounts getCounts(size_t count, size_t eltSize, int nranks) {
  const size_t block = perRankCount(count, eltSize, nranks);
  return {block * size_t(nranks), block * size_t(nranks), block, 0, 0};
}

// Rank r's buffer is pattern (seed, r); the block rank r receives from rank j is block r of j's.
void initData(const InitArgs& a) {
  const size_t block = a.counts.param;
  fillPattern(a.input, a.counts.send, a.type, mixSeed(a.seed, uint64_t(a.rank)), 0);
  char* expected = static_cast<char*>(a.expected);
  for (int j = 0; j < a.nranks; ++j) {
    fillPattern(expected + size_t(j) * block * typeSize(a.type), block, a.type,
                mixSeed(a.seed, uint64_t(j)), size_t(a.rank) * block);
  }
}

weftResult_t run(const RunArgs& a) {
#ifdef WEFT_HAVE_CUDA
  if (a.stream) return weftAlltoAllOnStream(a.send, a.recv, a.count, a.type, a.comm, a.stream);
#endif
  return weftAlltoAll(a.send, a.recv, a.count, a.type, a.comm, a.requests);
}

}  // namespace
}  // namespace weft::perf

int main(int argc, char** argv) {
  using namespace weft::perf;
  // weft defines in-place alltoall (nccl-tests does not check it), so both variants are checked.
  const CollTest test{"AlltoAll", false, false, true, BwModel::kPerRank, getCounts, initData, run};
  return runPerfTest(argc, argv, test);
}
