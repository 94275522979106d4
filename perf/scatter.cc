// scatter_perf: weftScatter. Size = the root's whole buffer (count * n * type size), count = each
// rank's block; busbw = algbw * (n-1)/n with algbw = count * n * type size / time.
#include "common.h"
#include "data.h"

namespace weft::perf {
namespace {

CollCounts getCounts(size_t count, size_t eltSize, int nranks) {
  const size_t block = perRankCount(count, eltSize, nranks);
  return {block * size_t(nranks), block, block, 0, block};
}

// Only the root's input is read; rank r receives elements r * block .. of it.
void initData(const InitArgs& a) {
  if (a.rank == a.root) fillPattern(a.input, a.counts.send, a.type, a.seed, 0);
  fillPattern(a.expected, a.counts.recv, a.type, a.seed, size_t(a.rank) * a.counts.recv);
}

weftResult_t run(const RunArgs& a) {
#ifdef WEFT_HAVE_CUDA
  if (a.stream)
    return weftScatterOnStream(a.send, a.recv, a.count, a.type, a.root, a.comm, a.stream);
#endif
  return weftScatter(a.send, a.recv, a.count, a.type, a.root, a.comm, a.requests);
}

}  // namespace
}  // namespace weft::perf

int main(int argc, char** argv) {
  using namespace weft::perf;
  const CollTest test{"Scatter", false, true, true, BwModel::kPerRank, getCounts, initData, run};
  return runPerfTest(argc, argv, test);
}
