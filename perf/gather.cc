// gather_perf: weftGather. Size = the gathered total (count * n * type size), count = each rank's
// block; busbw = algbw * (n-1)/n with algbw = count * n * type size / time.
#include <cstring>

#include "common.h"
#include "data.h"

namespace weft::perf {
namespace {

CollCounts getCounts(size_t count, size_t eltSize, int nranks) {
  const size_t block = perRankCount(count, eltSize, nranks);
  return {block, block * size_t(nranks), block, block, 0};
}

// Only the root receives; everyone else's receive buffer must come back untouched.
void initData(const InitArgs& a) {
  fillPattern(a.input, a.counts.send, a.type, a.seed, size_t(a.rank) * a.counts.send);
  if (a.rank == a.root) {
    fillPattern(a.expected, a.counts.recv, a.type, a.seed, 0);
  } else {
    std::memcpy(a.expected, a.checked, a.counts.recv * typeSize(a.type));
  }
}

weftResult_t run(const RunArgs& a) {
#ifdef WEFT_HAVE_CUDA
  if (a.stream)
    return weftGatherOnStream(a.send, a.recv, a.count, a.type, a.root, a.comm, a.stream);
#endif
  return weftGather(a.send, a.recv, a.count, a.type, a.root, a.comm, a.requests);
}

}  // namespace
}  // namespace weft::perf

int main(int argc, char** argv) {
  using namespace weft::perf;
  const CollTest test{"Gather", false, true, true, BwModel::kPerRank, getCounts, initData, run};
  return runPerfTest(argc, argv, test);
}
