// reduce_scatter_perf: weftReduceScatter. Size = the input total (count * n * type size), count =
// each rank's result block; busbw = algbw * (n-1)/n with algbw = count * n * type size / time.
#include "common.h"
#include "data.h"

namespace weft::perf {
namespace {

CollCounts getCounts(size_t count, size_t eltSize, int nranks) {
  const size_t block = perRankCount(count, eltSize, nranks);
  return {block * size_t(nranks), block, block, 0, block};
}

// Rank r receives the reduction of elements r * block .. of everyone's input.
void initData(const InitArgs& a) {
  fillReduceInput(a.input, a.counts.send, a.type, a.op, a.nranks, a.rank, a.seed, 0);
  fillReduceExpected(a.expected, a.counts.recv, a.type, a.op, a.nranks, a.seed,
                     size_t(a.rank) * a.counts.recv);
}

weftResult_t run(const RunArgs& a) {
#ifdef WEFT_HAVE_CUDA
  if (a.stream)
    return weftReduceScatterOnStream(a.send, a.recv, a.count, a.type, a.op, a.comm, a.stream);
#endif
  return weftReduceScatter(a.send, a.recv, a.count, a.type, a.op, a.comm, a.requests);
}

}  // namespace
}  // namespace weft::perf

int main(int argc, char** argv) {
  using namespace weft::perf;
  const CollTest test{"ReduceScatter",   true,      false,    true,
                      BwModel::kPerRank, getCounts, initData, run};
  return runPerfTest(argc, argv, test);
}
