#include "common.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "args.h"
#include "data.h"
#include "device_memory.h"
#include "iteration_stats.h"
#include "json_report.h"
#include "launch.h"
#include "memory_report.h"
#include "report.h"
#include "watchdog.h"

namespace weft::perf {
namespace {

// ctest's SKIP_RETURN_CODE and automake's convention: -k device where there is no GPU.
constexpr int kExitSkipped = 77;

// -M 1: the process's resident memory before the launcher and the communicators existed, the
// baseline of the report's "Initialization".
int64_t residentAtStart = 0;

// Test buffers: std::aligned_alloc memory, or with -R 1|2 weftMemAlloc memory (the send and
// receive buffers only), each released the way it was allocated.
struct BufferDeleter {
  bool fromWeft = false;
  void operator()(char* p) const {
    if (fromWeft) {
      PERF_CHECK(weftMemFree(p));
    } else {
      std::free(p);
    }
  }
};
using Buffer = std::unique_ptr<char, BufferDeleter>;

// What allocateBuffer(bytes, ...) allocates, all of it usable (and registered with -R 1|2).
size_t allocationBytes(size_t bytes) {
  return (std::max<size_t>(bytes, 1) + 63) / 64 * 64;
}

// 64-byte aligned (page-aligned from weftMemAlloc) and zeroed: touching every page now keeps page
// faults out of the timings.
Buffer allocateBuffer(size_t bytes, bool fromWeft = false) {
  const size_t rounded = allocationBytes(bytes);
  char* memory = nullptr;
  if (fromWeft) {
    void* shared = nullptr;
    PERF_CHECK(weftMemAlloc(&shared, rounded));
    memory = static_cast<char*>(shared);
  } else {
    memory = static_cast<char*>(std::aligned_alloc(64, rounded));
  }
  if (memory == nullptr) {
    std::printf("%s: cannot allocate %zu bytes of test buffers\n", shortHostName().c_str(),
                rounded);
    std::exit(1);
  }
  std::memset(memory, 0, rounded);
  return Buffer(memory, BufferDeleter{fromWeft});
}

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// What one row (or one warm-up) runs: the collective's parameters at one size.
struct Point {
  weftDataType_t type;
  weftRedOp_t op;
  int root;
  size_t eltSize;
  CollCounts counts;
  size_t sendBytes;
  size_t recvBytes;
};

// One rank (one thread) and everything it owns.
struct Rank {
  Rank(const Options& options, const CollTest& collTest) : opts(options), test(collTest) {}

  const Options& opts;
  const CollTest& test;
  int rank = 0;
  int nranks = 1;
  weftComm_t comm = nullptr;
  bool printer = false;         // global rank 0 prints the report
  Buffer send, recv, expected;  // -k device: the host copies that data is made and checked in
  // -R 1: the weftCommRegister handles of send and recv; -R 2: their windows.
  void* sendHandle = nullptr;
  void* recvHandle = nullptr;
  weftWindow_t sendWindow = nullptr;
  weftWindow_t recvWindow = nullptr;
  DeviceBuffer deviceSend, deviceRecv;  // -k device: what the calls read and write
  void* stream = nullptr;               // -s 1
  std::vector<weftRequest_t> requests;  // room for every call of one timed batch
  uint64_t checks = 0;                  // checked calls so far: seeds the data
  int failedChecks = 0;
  double busBwSum = 0;
  int variants = 0;
  JsonReport* json = nullptr;  // -J, on the printer only
};

Point makePoint(const Rank& r, size_t bytes, weftDataType_t type, weftRedOp_t op, int root) {
  Point p{type, op, root, typeSize(type), {}, 0, 0};
  p.counts = r.test.getCounts(bytes / p.eltSize, p.eltSize, r.nranks);
  p.sendBytes = p.counts.send * p.eltSize;
  p.recvBytes = p.counts.recv * p.eltSize;
  return p;
}

// A send and a receive allocation: the host buffers, or with -k device the device ones, which
// the host ones mirror offset for offset.
struct Memory {
  char* send;
  char* recv;
};

Memory hostMemory(const Rank& r) {
  return {r.send.get(), r.recv.get()};
}

Memory callMemory(const Rank& r) {
  return r.opts.deviceMemory ? Memory{r.deviceSend.get(), r.deviceRecv.get()} : hostMemory(r);
}

// -u: how far past its (64-byte aligned) start each buffer is used, as nccl-tests shifts its
// buffers by -u elements of the type under test.
size_t misalignBytes(const Rank& r, const Point& p) {
  return size_t(r.opts.unalign) * p.eltSize;
}

// The padding each buffer gets for -u: 8 bytes (the largest type) per element, as nccl-tests.
size_t unalignPadding(const Options& opts) {
  return 8 * size_t(opts.unalign);
}

// The buffers of call number `call`. Successive calls walk through the whole allocation, as in
// nccl-tests, so that a small size is not timed from a cache that one buffer would keep warm.
void callBuffers(const Rank& r, const Memory& memory, const Point& p, bool inPlace, int call,
                 void** send, void** recv) {
  const size_t span = std::max(p.sendBytes, p.recvBytes);
  const size_t steps = span ? std::max<size_t>(r.opts.maxBytes / span, 1) : 1;
  const size_t shift = span * (size_t(call) % steps) + misalignBytes(r, p);
  char* recvBase = memory.recv + shift;
  if (inPlace) {
    *send = recvBase + p.counts.sendInplaceOffset * size_t(r.rank) * p.eltSize;
    *recv = recvBase + p.counts.recvInplaceOffset * size_t(r.rank) * p.eltSize;
  } else {
    *send = memory.send + shift;
    *recv = recvBase;
  }
}

void issueCall(const Rank& r, const Point& p, bool inPlace, int call, weftRequest_t* requests) {
  void* send = nullptr;
  void* recv = nullptr;
  callBuffers(r, callMemory(r), p, inPlace, call, &send, &recv);
  const RunArgs args{send,    recv,   p.counts.param, p.type, p.op,
                     p.root,  r.rank, r.nranks,       r.comm, r.stream ? nullptr : requests,
                     r.stream};
  PERF_CHECK(r.test.run(args));
}

void barrier(const Rank& r) {
  watchdog::Scope waiting;
  PERF_CHECK(weftBarrier(r.comm, nullptr));
}

struct Timing {
  double seconds;     // per call, until completion
  double cpuSeconds;  // per call, until issued (-C)
};

// Runs iters x agg calls in the -z mode and times them; -I 1 passes `perIter` to get the time of
// each iteration too (per call).
Timing runCalls(Rank& r, const Point& p, bool inPlace, int iters, int agg,
                std::vector<double>* perIter = nullptr) {
  const int mode = r.opts.blocking;
  const bool async = mode == 0;
  const size_t slots = size_t(iters) * size_t(agg) * kMaxRequestsPerCall;
  if (async) std::fill(r.requests.begin(), r.requests.begin() + long(slots), nullptr);
  watchdog::Scope batch(async);  // async: all calls complete in one wait, as in nccl-tests
  const auto start = std::chrono::steady_clock::now();
  std::unique_ptr<IterationClock> clock;
  if (perIter) clock = std::make_unique<IterationClock>(iters, start);
  double outsideBarriers = 0;  // -z 3 times the calls only
  for (int i = 0; i < iters; ++i) {
    // Without -I only -z 3 needs per-iteration times; the clock is not free next to a
    // sub-microsecond call.
    const auto iterStart = mode == 3 ? std::chrono::steady_clock::now() : start;
    if (clock && mode == 3) clock->markBegin(i);
    if (async && agg > 1) PERF_CHECK(weftGroupStart());
    for (int a = 0; a < agg; ++a) {
      const int call = i * agg + a;
      if (async) {
        issueCall(r, p, inPlace, call, &r.requests[size_t(call) * kMaxRequestsPerCall]);
      } else {
        watchdog::Scope waiting;
        issueCall(r, p, inPlace, call, nullptr);
        // A blocking mode waits for each call: on a stream, that is the stream's turn to finish.
        if (r.stream) synchronizeStream(r.stream);
        if (mode == 1) PERF_CHECK(weftBarrier(r.comm, nullptr));
      }
    }
    if (async && agg > 1) PERF_CHECK(weftGroupEnd());
    if (clock && async) clock->poll(r.requests.data(), size_t(agg) * kMaxRequestsPerCall, i + 1);
    if (clock && !async) clock->markEnd(i);
    if (mode == 3) {
      outsideBarriers += secondsSince(iterStart);
      barrier(r);
    }
  }
  const double issued = secondsSince(start);
  if (clock && async) clock->waitAll(r.requests.data(), size_t(agg) * kMaxRequestsPerCall, iters);
  for (size_t i = 0; async && i < slots; ++i) {
    if (r.requests[i] != nullptr) PERF_CHECK(weftWait(&r.requests[i], -1));
  }
  if (async && r.stream) synchronizeStream(r.stream);
  const double calls = double(iters) * agg;
  const double completed = mode == 3 ? outsideBarriers : secondsSince(start);
  if (clock) *perIter = clock->secondsPerCall(agg);
  return {completed / calls, (mode == 3 ? outsideBarriers : issued) / calls};
}

// -a: which time the ranks report (all ranks end up with the same value).
double combineTime(const Rank& r, double seconds) {
  watchdog::Scope waiting;
  switch (r.opts.average) {
    case 0:
      PERF_CHECK(weftBroadcast(&seconds, &seconds, 1, weftFloat64, 0, r.comm, nullptr));
      return seconds;
    case 2:
      PERF_CHECK(weftAllReduce(&seconds, &seconds, 1, weftFloat64, weftMin, r.comm, nullptr));
      return seconds;
    case 3:
      PERF_CHECK(weftAllReduce(&seconds, &seconds, 1, weftFloat64, weftMax, r.comm, nullptr));
      return seconds;
    default:
      PERF_CHECK(weftAllReduce(&seconds, &seconds, 1, weftFloat64, weftSum, r.comm, nullptr));
      return seconds / r.nranks;
  }
}

// Mismatching elements over all ranks, or -1 when this variant is not checked (prints N/A).
int64_t checkVariant(Rank& r, const Point& p, bool inPlace) {
  if (r.opts.check == 0 || (inPlace && !r.test.checksInPlace)) return -1;
  int64_t wrong = 0;
  for (int c = 0; c < r.opts.check && wrong == 0; ++c) {
    ++r.checks;  // the same count on every rank, hence the same seed
    void* send = nullptr;
    void* recv = nullptr;
    callBuffers(r, hostMemory(r), p, inPlace, 0, &send, &recv);
    // Poison what the call may write, with a byte that changes from check to check, so that
    // results left over from an earlier call cannot pass.
    const size_t span = std::max(p.sendBytes, p.recvBytes) + misalignBytes(r, p);
    std::memset(r.recv.get(), int(0xa5 + 0x3d * r.checks) & 0xff, span);
    const InitArgs init{send, r.expected.get(), recv,   p.counts, p.type,
                        p.op, p.root,           r.rank, r.nranks, mixSeed(r.checks, 0x77656674)};
    r.test.initData(init);
    if (r.opts.deviceMemory) {
      copyToDevice(r.deviceSend.get(), r.send.get(), p.sendBytes + misalignBytes(r, p));
      copyToDevice(r.deviceRecv.get(), r.recv.get(), span);
    }
    runCalls(r, p, inPlace, 1, 1);
    if (r.opts.deviceMemory) copyToHost(r.recv.get(), r.deviceRecv.get(), span);
    wrong = countMismatches(recv, r.expected.get(), p.counts.recv, p.eltSize);
    watchdog::Scope waiting;
    PERF_CHECK(weftAllReduce(&wrong, &wrong, 1, weftInt64, weftSum, r.comm, nullptr));
  }
  return wrong;
}

// One half of a row: time, then check (nccl-tests' order), then print.
void benchVariant(Rank& r, const Point& p, bool inPlace) {
  // One untimed call and a barrier line the ranks up before the clock starts.
  runCalls(r, p, inPlace, 1, 1);
  barrier(r);
  std::vector<double> perIter;
  const Timing timing = runCalls(r, p, inPlace, r.opts.iters, r.opts.aggIters,
                                 r.opts.perIterTiming ? &perIter : nullptr);
  const double seconds = combineTime(r, timing.seconds);
  double algBw = 0;
  double busBw = 0;
  computeBandwidth(r.test.bw, p.counts.param, p.eltSize, seconds, r.nranks, &algBw, &busBw);
  const int64_t wrong = checkVariant(r, p, inPlace);
  IterTimes iterTimes;
  if (r.opts.perIterTiming)
    iterTimes = combineIterTimes(r.comm, r.nranks, r.opts.nThreads, perIter);
  if (wrong > 0) ++r.failedChecks;
  r.busBwSum += busBw;
  ++r.variants;
  if (r.printer) {
    const double reported = r.opts.reportCpuTime ? timing.cpuSeconds : seconds;
    printRowVariant(reported * 1e6, algBw, busBw, wrong);
    if (r.json)
      r.json->writeVariant(!inPlace, r.opts.reportCpuTime, reported * 1e6, algBw, busBw, wrong);
    if (r.opts.perIterTiming) {
      const int skip = r.opts.perIterSkip;
      const IterStats stats = computeIterStats({iterTimes.max.begin() + skip, iterTimes.max.end()});
      printIterStats(stats);
      if (r.json)
        r.json->writeIterStats(!inPlace, skip, stats, iterTimes.max, iterTimes.perProcess);
    }
  }
}

// nccl-tests' TimeTest: warm up every size, then sweep (-N times) printing one row per size.
void timeTest(Rank& r, weftDataType_t type, weftRedOp_t op, int root) {
  barrier(r);
  if (r.opts.warmupIters > 0) {
    for (size_t bytes : warmupSizes(r.opts)) {
      runCalls(r, makePoint(r, bytes, type, op, root), false, r.opts.warmupIters, 1);
    }
  }
  const std::vector<size_t> sizes = sweepSizes(r.opts);
  for (int cycle = 0; r.opts.runCycles == 0 || cycle < r.opts.runCycles; ++cycle) {
    for (size_t bytes : sizes) {
      const Point p = makePoint(r, bytes, type, op, root);
      const size_t rowBytes = std::max(p.sendBytes, p.recvBytes);
      const char* opName = r.test.usesOp ? opDisplayName(op) : "none";
      if (r.printer) {
        printRowPrefix(rowBytes, p.counts.param, typeDisplayName(type), opName, root);
        if (r.json) r.json->beginRow(rowBytes, p.counts.param, typeDisplayName(type), opName, root);
      }
      benchVariant(r, p, false);
      benchVariant(r, p, true);
      if (r.printer) {
        if (r.opts.reportTimestamps) printTimestamp();
        printRowEnd();
        if (r.json) r.json->endRow(r.opts.iters);
      }
    }
  }
}

double minBusBwFromEnv() {
  for (const char* name : {"WEFT_TESTS_MIN_BW", "NCCL_TESTS_MIN_BW"}) {
    if (const char* value = std::getenv(name)) return std::atof(value);
  }
  return -1;
}

struct RankOutcome {
  bool failed = false;
};

// -M 1: the largest of every rank's value (each a process's resident-memory difference), as
// nccl-tests takes the largest over its GPUs and processes.
int64_t maxOverRanks(const Rank& r, int64_t value) {
  watchdog::Scope waiting;
  PERF_CHECK(weftAllReduce(&value, &value, 1, weftInt64, weftMax, r.comm, nullptr));
  return value;
}

// -M 1: the process's resident memory once every rank of it has reached this point. The
// barrier before keeps slower ranks' earlier work in, the one after keeps faster ranks' next
// work out.
int64_t residentAtBarrier(const Rank& r) {
  barrier(r);
  const int64_t resident = residentBytes();
  barrier(r);
  return resident;
}

// -R 1|2, once the communicator exists: registers the whole send and receive allocations (every
// call's buffers lie inside them), as nccl-tests registers its buffers once after init.
void registerBuffers(Rank& r, size_t bufferBytes) {
  const size_t bytes = allocationBytes(bufferBytes);
  if (r.opts.localRegister == 1) {
    PERF_CHECK(weftCommRegister(r.comm, r.send.get(), bytes, &r.sendHandle));
    PERF_CHECK(weftCommRegister(r.comm, r.recv.get(), bytes, &r.recvHandle));
  } else if (r.opts.localRegister == 2) {
    watchdog::Scope waiting;  // collective
    PERF_CHECK(weftCommWindowRegister(r.comm, r.send.get(), bytes, &r.sendWindow,
                                      WEFT_WIN_COLL_SYMMETRIC));
    PERF_CHECK(weftCommWindowRegister(r.comm, r.recv.get(), bytes, &r.recvWindow,
                                      WEFT_WIN_COLL_SYMMETRIC));
  }
}

// Before the communicator goes: the registrations, then the weftMemAlloc memory.
void deregisterBuffers(Rank& r) {
  if (r.sendHandle) PERF_CHECK(weftCommDeregister(r.comm, r.sendHandle));
  if (r.recvHandle) PERF_CHECK(weftCommDeregister(r.comm, r.recvHandle));
  if (r.sendWindow || r.recvWindow) {
    watchdog::Scope waiting;  // collective
    if (r.sendWindow) PERF_CHECK(weftCommWindowDeregister(r.comm, r.sendWindow));
    if (r.recvWindow) PERF_CHECK(weftCommWindowDeregister(r.comm, r.recvWindow));
  }
  r.sendHandle = r.recvHandle = nullptr;
  r.sendWindow = r.recvWindow = nullptr;
  r.send.reset();
  r.recv.reset();
}

void rankMain(const Options& opts, const CollTest& test, const char* programName,
              const ProcessSetup& setup, int thread, RankOutcome* outcome) {
  Rank r(opts, test);
  watchdog::bindThread(thread, setup.proc * opts.nThreads + thread);
  r.comm = createRankComm(setup, opts.nThreads, thread, programName);
  PERF_CHECK(weftCommUserRank(r.comm, &r.rank));
  PERF_CHECK(weftCommCount(r.comm, &r.nranks));
  r.printer = r.rank == 0;
  if (test.usesRoot && opts.root >= r.nranks) {
    if (r.printer) std::printf("invalid root %d: there are %d ranks\n", opts.root, r.nranks);
    outcome->failed = true;
  } else {
    const int64_t afterInit = opts.memoryReport ? residentAtBarrier(r) : 0;
    const size_t bufferBytes = opts.maxBytes + unalignPadding(opts);
    const bool registered = opts.localRegister != 0;
    r.send = allocateBuffer(bufferBytes, registered);
    r.recv = allocateBuffer(bufferBytes, registered);
    if (registered) registerBuffers(r, bufferBytes);
    if (opts.check > 0) r.expected = allocateBuffer(bufferBytes);
    std::string device;
    if (opts.deviceMemory) {
      selectRankDevice(r.rank);
      device = currentDeviceDescription();
      r.deviceSend = allocateDeviceBuffer(bufferBytes);
      r.deviceRecv = allocateDeviceBuffer(bufferBytes);
      if (opts.onStream) r.stream = createStream();
    }
    const int batch = std::max(opts.iters * opts.aggIters, opts.warmupIters);
    r.requests.assign(size_t(batch) * kMaxRequestsPerCall, nullptr);
    const int64_t afterBuffers = opts.memoryReport ? residentAtBarrier(r) : 0;

    const std::vector<RankInfo> infos = gatherRankInfo(r.comm, r.rank, r.nranks);
    int version = 0;
    PERF_CHECK(weftGetVersion(&version));
    std::unique_ptr<JsonReport> json;
    if (r.printer && !opts.jsonPath.empty()) {
      json = std::make_unique<JsonReport>();
      if (json->open(opts.jsonPath)) {
        r.json = json.get();
        r.json->writeStart(opts.commandLine, version);
      }
    }
    if (r.printer) printPreamble(programName, version, opts, infos, device);
    if (r.json) r.json->writeConfig(opts, infos);

    const std::vector<weftRedOp_t> ops = test.usesOp ? opts.ops : std::vector{weftSum};
    std::vector<int> roots{-1};
    if (test.usesRoot && opts.root >= 0) roots = {opts.root};
    if (test.usesRoot && opts.root < 0) {
      roots.clear();
      for (int root = 0; root < r.nranks; ++root) roots.push_back(root);
    }
    for (weftDataType_t type : opts.types) {
      for (weftRedOp_t op : ops) {
        for (int root : roots) timeTest(r, type, op, root);
      }
    }

    const double avgBusBw = r.variants ? r.busBwSum / r.variants : 0;
    const double minBw = minBusBwFromEnv();
    const int64_t afterTests = opts.memoryReport ? residentAtBarrier(r) : 0;
    if (r.printer) printSummary(programName, r.failedChecks, avgBusBw, minBw);
    if (opts.memoryReport) {
      const int64_t initialization = maxOverRanks(r, afterInit - residentAtStart);
      const int64_t userAllocated = maxOverRanks(r, afterBuffers - afterInit);
      const int64_t collective = maxOverRanks(r, afterTests - afterBuffers);
      if (r.printer) printMemoryReport(initialization, userAllocated, collective);
    }
    if (r.json) r.json->finish(r.failedChecks, avgBusBw, minBw);
    // Every rank saw the same (all-reduced) counts, so every process exits with the same status.
    outcome->failed = r.failedChecks > 0 || (minBw >= 0 && avgBusBw < 0.9 * minBw);
    deregisterBuffers(r);
  }
  if (r.stream) destroyStream(r.stream);
  if (!setup.reuseLauncherComm) {
    watchdog::removeComm(r.comm);
    PERF_CHECK(weftCommDestroy(r.comm));
  }
}

}  // namespace

size_t perRankCount(size_t count, size_t eltSize, int nranks) {
  const size_t alignElements = std::max<size_t>(16 / eltSize, 1);
  return (count / size_t(nranks)) / alignElements * alignElements;
}

void computeBandwidth(BwModel model, size_t paramCount, size_t eltSize, double seconds, int nranks,
                      double* algBw, double* busBw) {
  const double n = nranks;
  double bytes = double(paramCount) * double(eltSize);
  double factor = 1;
  if (model == BwModel::kAllReduce) factor = 2 * (n - 1) / n;
  if (model == BwModel::kPerRank) {
    bytes *= n;
    factor = (n - 1) / n;
  }
  *algBw = bytes / 1.0e9 / seconds;
  *busBw = *algBw * factor;
}

int runPerfTest(int argc, char** argv, const CollTest& test) {
  const char* slash = std::strrchr(argv[0], '/');
  const char* programName = slash ? slash + 1 : argv[0];
  Options opts;
  switch (parseOptions(argc, argv, programName, &opts)) {
    case ParseResult::kExitSuccess:
      return 0;
    case ParseResult::kExitFailure:
      return 1;
    case ParseResult::kRun:
      break;
  }

  // Before any rendezvous, so that every process of a job on a machine without a GPU leaves alike.
  if (std::string reason; opts.deviceMemory && !probeDevice(&reason)) {
    std::printf("SKIP: no CUDA device (%s)\n", reason.c_str());
    return kExitSkipped;
  }

  residentAtStart = residentBytes();
  // Slots 0..nThreads-1 are the rank threads; the last one is this thread's, for the setup.
  watchdog::start(opts.timeoutSec, opts.nThreads + 1);
  watchdog::bindThread(opts.nThreads, -1);
  ProcessSetup setup;
  setupProcess(opts, programName, &setup);

  std::vector<RankOutcome> outcomes(size_t(opts.nThreads));
  std::vector<std::thread> threads;
  for (int t = 0; t < opts.nThreads; ++t) {
    threads.emplace_back(rankMain, std::cref(opts), std::cref(test), programName, std::cref(setup),
                         t, &outcomes[size_t(t)]);
  }
  for (std::thread& thread : threads) thread.join();
  finishProcess(&setup);
  watchdog::stop();

  const bool failed =
      std::any_of(outcomes.begin(), outcomes.end(), [](const RankOutcome& o) { return o.failed; });
  return failed ? 1 : 0;
}

}  // namespace weft::perf
