// broadcast_perf: weftBroadcast. Size = count * type size; busbw = algbw.
#include "common.h"
#include "data.h"

namespace weft::perf {
namespace {

CollCounts getCounts(size_t count, size_t /*eltSize*/, int /*nranks*/) {
  return {count, count, count, 0, 0};
}

void initData(const InitArgs& a) {
  if (a.rank == a.root) fillPattern(a.input, a.counts.send, a.type, a.seed, 0);
  fillPattern(a.expected, a.counts.recv, a.type, a.seed, 0);
}

weftResult_t run(const RunArgs& a) {
#ifdef WEFT_HAVE_CUDA
  if (a.stream)
    return weftBroadcastOnStream(a.send, a.recv, a.count, a.type, a.root, a.comm, a.stream);
#endif
  return weftBroadcast(a.send, a.recv, a.count, a.type, a.root, a.comm, a.requests);
}

}  // namespace
}  // namespace weft::perf

int main(int argc, char** argv) {
  using namespace weft::perf;
  const CollTest test{"Broadcast", false, true, true, BwModel::kOne, getCounts, initData, run};
  return runPerfTest(argc, argv, test);
}
