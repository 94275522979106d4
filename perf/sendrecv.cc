// sendrecv_perf: a ring of weftSend / weftRecv (send to rank + 1, receive from rank - 1) posted
// together in a group. Size = count * type size; busbw = algbw.
#include "common.h"
#include "data.h"

namespace weft::perf {
namespace {

CollCounts getCounts(size_t count, size_t /*eltSize*/, int /*nranks*/) {
  return {count, count, count, 0, 0};
}

void initData(const InitArgs& a) {
  const int from = (a.rank - 1 + a.nranks) % a.nranks;
  fillPattern(a.input, a.counts.send, a.type, mixSeed(a.seed, uint64_t(a.rank)), 0);
  fillPattern(a.expected, a.counts.recv, a.type, mixSeed(a.seed, uint64_t(from)), 0);
}

// Posts both halves of the ring: the stream-ordered forms with -s 1, else with requests (or
// blocking when there are none).
weftResult_t post(const RunArgs& a, int to, int from) {
#ifdef WEFT_HAVE_CUDA
  if (a.stream) {
    const weftResult_t sent = weftSendOnStream(a.send, a.count, a.type, to, a.comm, a.stream);
    if (sent != weftSuccess) return sent;
    return weftRecvOnStream(a.recv, a.count, a.type, from, a.comm, a.stream);
  }
#endif
  weftRequest_t* sendRequest = a.requests ? &a.requests[0] : nullptr;
  weftRequest_t* recvRequest = a.requests ? &a.requests[1] : nullptr;
  const weftResult_t sent = weftSend(a.send, a.count, a.type, to, a.comm, sendRequest);
  if (sent != weftSuccess) return sent;
  return weftRecv(a.recv, a.count, a.type, from, a.comm, recvRequest);
}

// The group lets both directions progress together: every rank sends and receives at once.
weftResult_t run(const RunArgs& a) {
  const int to = (a.rank + 1) % a.nranks;
  const int from = (a.rank - 1 + a.nranks) % a.nranks;
  weftResult_t result = weftGroupStart();
  if (result != weftSuccess) return result;
  result = post(a, to, from);
  const weftResult_t ended = weftGroupEnd();
  return result != weftSuccess ? result : ended;
}

}  // namespace
}  // namespace weft::perf

int main(int argc, char** argv) {
  using namespace weft::perf;
  // In place, a rank would receive into the buffer it is still sending from: undefined, as in
  // nccl-tests, so that variant is timed but prints N/A.
  const CollTest test{"SendRecv", false, false, false, BwModel::kOne, getCounts, initData, run};
  return runPerfTest(argc, argv, test);
}
