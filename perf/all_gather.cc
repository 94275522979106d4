// all_gather_perf: weftAllGather. Size = the gathered total (count * n * type size), count = each
// rank's block; busbw = algbw * (n-1)/n with algbw = count * n * type size / time.
#include "common.h"
#include "data.h"

namespace weft::perf {
namespace {

CollCounts getCounts(size_t count, size_t eltSize, int nranks) {
  const size_t block = perRankCount(count, eltSize, nranks);
  return {block, block * size_t(nranks), block, block, 0};
}

// Rank r's block holds elements r * block .. of one pattern: the gathered buffer is that pattern.
void initData(const InitArgs& a) {
  fillPattern(a.input, a.counts.send, a.type, a.seed, size_t(a.rank) * a.counts.send);
  fillPattern(a.expected, a.counts.recv, a.type, a.seed, 0);
}

weftResult_t run(const RunArgs& a) {
#ifdef WEFT_HAVE_CUDA
  if (a.stream) return weftAllGatherOnStream(a.send, a.recv, a.count, a.type, a.comm, a.stream);
#endif
  return weftAllGather(a.send, a.recv, a.count, a.type, a.comm, a.requests);
}

}  // namespace
}  // namespace weft::perf

int main(int argc, char** argv) {
  using namespace weft::perf;
  const CollTest test{"AllGather", false, false, true, BwModel::kPerRank, getCounts, initData, run};
  return runPerfTest(argc, argv, test);
}
