// reduce_perf: weftReduce. Size = count * type size; busbw = algbw.
#include <cstring>

#include "common.h"
#include "data.h"

namespace weft::perf {
namespace {

CollCounts getCounts(size_t count, size_t /*eltSize*/, int /*nranks*/) {
  return {count, count, count, 0, 0};
}

// Only the root receives; everyone else's receive buffer must come back untouched.
void initData(const InitArgs& a) {
  fillReduceInput(a.input, a.counts.send, a.type, a.op, a.nranks, a.rank, a.seed, 0);
  if (a.rank == a.root) {
    fillReduceExpected(a.expected, a.counts.recv, a.type, a.op, a.nranks, a.seed, 0);
  } else {
    std::memcpy(a.expected, a.checked, a.counts.recv * typeSize(a.type));
  }
}

weftResult_t run(const RunArgs& a) {
#ifdef WEFT_HAVE_CUDA
  if (a.stream)
    return weftReduceOnStream(a.send, a.recv, a.count, a.type, a.op, a.root, a.comm, a.stream);
#endif
  return weftReduce(a.send, a.recv, a.count, a.type, a.op, a.root, a.comm, a.requests);
}

}  // namespace
}  // namespace weft::perf

int main(int argc, char** argv) {
  using namespace weft::perf;
  const CollTest test{"Reduce", true, true, true, BwModel::kOne, getCounts, initData, run};
  return runPerfTest(argc, argv, test);
}
