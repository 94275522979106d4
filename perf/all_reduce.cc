// all_reduce_perf: weftAllReduce. Size = count * type size; busbw = algbw * 2(n-1)/n.
#include "common.h"
#include "data.h"

namespace weft::perf {
namespace {

CollCounts getCounts(size_t count, size_t /*eltSize*/, int /*nranks*/) {
  return {count, count, count, 0, 0};
}

void initData(const InitArgs& a) {
  fillReduceInput(a.input, a.counts.send, a.type, a.op, a.nranks, a.rank, a.seed, 0);
  fillReduceExpected(a.expected, a.counts.recv, a.type, a.op, a.nranks, a.seed, 0);
}

weftResult_t run(const RunArgs& a) {
#ifdef WEFT_HAVE_CUDA
  if (a.stream)
    return weftAllReduceOnStream(a.send, a.recv, a.count, a.type, a.op, a.comm, a.stream);
#endif
  return weftAllReduce(a.send, a.recv, a.count, a.type, a.op, a.comm, a.requests);
}

}  // namespace
}  // namespace weft::perf

int main(int argc, char** argv) {
  using namespace weft::perf;
  const CollTest test{"AllReduce",         true,      false,    true,
                      BwModel::kAllReduce, getCounts, initData, run};
  return runPerfTest(argc, argv, test);
}
