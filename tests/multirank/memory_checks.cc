#include "multirank/memory_checks.h"

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>

namespace weft::test {
namespace {

// Buffers start this far into their allocation (off a page boundary), at the same offset on
// every rank, as a symmetric window promises.
constexpr size_t kHeadBytes = 320;
// Sentinels after every output, which no call may touch.
constexpr size_t kGuardElems = 16;
// The largest element of the calls below.
constexpr size_t kElemBytes = 4;

enum class Kind {
  kAllReduce,
  kBroadcast,
  kReduce,
  kAllGather,
  kReduceScatter,
  kAlltoAll,
  kGather,
  kScatter,
  kSendRecv
};

struct Spec {
  Kind kind;
  weftDataType_t type;
  weftRedOp_t op;
  const char* label;
};

// Every collective; several datatypes and ops for the reductions, and a 1-byte type for odd
// byte counts.
constexpr Spec kSpecs[] = {
    {Kind::kAllReduce, weftFloat32, weftSum, "allreduce float32 sum"},
    {Kind::kAllReduce, weftInt32, weftMax, "allreduce int32 max"},
    {Kind::kAllReduce, weftFloat32, weftAvg, "allreduce float32 avg"},
    {Kind::kBroadcast, weftInt32, weftSum, "broadcast int32"},
    {Kind::kBroadcast, weftUint8, weftSum, "broadcast uint8"},
    {Kind::kReduce, weftFloat32, weftSum, "reduce float32 sum"},
    {Kind::kReduce, weftInt32, weftMax, "reduce int32 max"},
    {Kind::kAllGather, weftInt32, weftSum, "allgather int32"},
    {Kind::kAllGather, weftUint8, weftSum, "allgather uint8"},
    {Kind::kReduceScatter, weftFloat32, weftSum, "reducescatter float32 sum"},
    {Kind::kReduceScatter, weftInt32, weftMax, "reducescatter int32 max"},
    {Kind::kAlltoAll, weftInt32, weftSum, "alltoall int32"},
    {Kind::kGather, weftInt32, weftSum, "gather int32"},
    {Kind::kScatter, weftInt32, weftSum, "scatter int32"},
    {Kind::kSendRecv, weftInt32, weftSum, "sendrecv int32"},
};

bool isReduction(Kind kind) {
  return kind == Kind::kAllReduce || kind == Kind::kReduce || kind == Kind::kReduceScatter;
}

uint32_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return static_cast<uint32_t>(x);
}

// Element i of rank r's input: distinct per rank and index, so that an element from the wrong
// rank or the wrong place shows; small integers for sums, so that every order of summation is
// exact.
template <typename T>
T inputOf(const Spec& spec, int r, size_t i) {
  if (isReduction(spec.kind)) {
    if (spec.op == weftMax) {
      return static_cast<T>(static_cast<int32_t>(mix((static_cast<uint64_t>(r) << 40) + i)));
    }
    return static_cast<T>(static_cast<int64_t>((i * 13 + static_cast<size_t>(r) * 7) % 61) - 30);
  }
  if constexpr (sizeof(T) == 1) {
    return static_cast<T>((i * 7 + i / 251 + static_cast<size_t>(r) * 31) % 251);
  } else {
    return static_cast<T>(static_cast<int64_t>(r) * 1000003 + static_cast<int64_t>(i));
  }
}

// Element i of the reduction over n ranks (avg as the library computes it: the sum scaled by
// 1/n in float).
template <typename T>
T reducedOf(const Spec& spec, int n, size_t i) {
  if (spec.op == weftMax) {
    T best = inputOf<T>(spec, 0, i);
    for (int r = 1; r < n; ++r) best = std::max(best, inputOf<T>(spec, r, i));
    return best;
  }
  int64_t sum = 0;
  for (int r = 0; r < n; ++r) sum += static_cast<int64_t>(inputOf<T>(spec, r, i));
  if (spec.op == weftAvg) {
    return static_cast<T>(static_cast<float>(sum) * (1.0f / static_cast<float>(n)));
  }
  return static_cast<T>(sum);
}

template <typename T>
T sentinelOf() {
  if constexpr (sizeof(T) == 1) {
    return static_cast<T>(253);  // inputs of 1-byte types stay below 251
  } else {
    return static_cast<T>(-12345);
  }
}

// This process's shared mappings of weftMemAlloc memory, as /proc/self/maps lines: its own
// allocations and its mappings of peers' (the zero-copy path: mem/peer_mappings.h).
std::set<std::string> weftMemoryMappings() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  std::set<std::string> found;
  while (std::getline(maps, line)) {
    if (line.find(" rw-s ") != std::string::npos &&
        line.find("/memfd:weft-mem-") != std::string::npos) {
      found.insert(line);
    }
  }
  return found;
}

template <typename T>
double printable(T value) {
  return static_cast<double>(value);
}

std::string modesOf(const ModePattern& pattern, int nranks) {
  std::string modes;
  for (int r = 0; r < nranks; ++r) {
    if (r > 0) modes += ',';
    modes += bufferModeName(pattern.modeOf(r));
  }
  return modes;
}

// One rank's buffers for one pattern: allocated, registered, and (collectively) windowed as its
// mode says; released in the same way.
class PatternBuffers {
 public:
  PatternBuffers(weftComm_t comm, BufferMode mode, bool anyWindow, size_t bytes)
      : comm_(comm), mode_(mode), anyWindow_(anyWindow), bytes_(bytes) {}

  // "" or what failed. Every rank must call it (the window is collective).
  std::string setUp() {
    if (mode_ == BufferMode::kPlain || mode_ == BufferMode::kRegisteredPlain) {
      plain_.reset(new std::byte[bytes_]);
      region_ = reinterpret_cast<char*>(plain_.get());
    } else if (weftMemAlloc(&allocated_, bytes_) != weftSuccess) {
      return std::string("weftMemAlloc: ") + weftGetLastError(nullptr);
    } else {
      region_ = static_cast<char*>(allocated_);
    }
    if (mode_ == BufferMode::kRegistered || mode_ == BufferMode::kRegisteredPlain) {
      // The whole region, and (overlapping) its second half.
      if (weftCommRegister(comm_, region_, bytes_, &handles_[0]) != weftSuccess ||
          weftCommRegister(comm_, region_ + bytes_ / 2, bytes_ - bytes_ / 2, &handles_[1]) !=
              weftSuccess) {
        return std::string("weftCommRegister: ") + weftGetLastError(comm_);
      }
    }
    if (anyWindow_) {
      // Every rank gives a window of the same size; the ranks whose calls use it put their
      // buffers in it, the others give memory that their calls do not use.
      void* windowMemory = region_;
      if (mode_ != BufferMode::kWindow) {
        if (weftMemAlloc(&windowScratch_, bytes_) != weftSuccess) {
          windowMemory = nullptr;  // fails the registration on every rank
        } else {
          windowMemory = windowScratch_;
        }
      }
      if (weftCommWindowRegister(comm_, windowMemory, bytes_, &window_, WEFT_WIN_COLL_SYMMETRIC) !=
          weftSuccess) {
        window_ = nullptr;
        return std::string("weftCommWindowRegister: ") + weftGetLastError(comm_);
      }
    }
    return "";
  }

  // "" or what failed; collective when there is a window.
  std::string tearDown() {
    std::string failure;
    if (window_ != nullptr && weftCommWindowDeregister(comm_, window_) != weftSuccess) {
      failure += std::string("weftCommWindowDeregister: ") + weftGetLastError(comm_) + "; ";
    }
    window_ = nullptr;
    for (void*& handle : handles_) {
      if (handle != nullptr && weftCommDeregister(comm_, handle) != weftSuccess) {
        failure += std::string("weftCommDeregister: ") + weftGetLastError(comm_) + "; ";
      }
      handle = nullptr;
    }
    for (void** memory : {&allocated_, &windowScratch_}) {
      if (*memory != nullptr && weftMemFree(*memory) != weftSuccess) {
        failure += std::string("weftMemFree: ") + weftGetLastError(nullptr) + "; ";
      }
      *memory = nullptr;
    }
    return failure;
  }

  ~PatternBuffers() {
    for (void* handle : handles_) {
      if (handle != nullptr) weftCommDeregister(comm_, handle);
    }
    if (allocated_ != nullptr) weftMemFree(allocated_);
    if (windowScratch_ != nullptr) weftMemFree(windowScratch_);
  }

  char* region() const { return region_; }

 private:
  weftComm_t comm_;
  BufferMode mode_;
  bool anyWindow_;
  size_t bytes_;
  std::unique_ptr<std::byte[]> plain_;
  void* allocated_ = nullptr;
  void* windowScratch_ = nullptr;
  void* handles_[2] = {nullptr, nullptr};
  weftWindow_t window_ = nullptr;
  char* region_ = nullptr;
};

class Runner {
 public:
  Runner(weftComm_t comm, const MemoryCheckOptions& options)
      : comm_(comm), options_(options), nonBlocking_(options.nonBlocking) {
    weftCommUserRank(comm, &rank_);
    weftCommCount(comm, &nranks_);
  }

  MemoryCheckResult run() {
    const std::vector<size_t> counts =
        options_.counts.empty() ? memoryCheckCounts() : options_.counts;
    const size_t maxCount = *std::max_element(counts.begin(), counts.end());
    // Send and receive buffers of up to nranks * maxCount elements each, with guards.
    bufferBytes_ = (static_cast<size_t>(nranks_) * maxCount + kGuardElems) * kElemBytes + 64;
    bufferBytes_ = (bufferBytes_ + 63) / 64 * 64;
    const size_t regionBytes = kHeadBytes + 64 * static_cast<size_t>(nranks_) + 2 * bufferBytes_;
    for (const ModePattern& pattern : options_.patterns) {
      pattern_ = &pattern;
      bool anyWindow = false;
      bool allShareable = nranks_ > 1 && options_.expectZeroCopy;
      for (int r = 0; r < nranks_; ++r) {
        const BufferMode mode = pattern.modeOf(r);
        anyWindow |= mode == BufferMode::kWindow;
        allShareable &= mode == BufferMode::kMemAlloc || mode == BufferMode::kRegistered ||
                        mode == BufferMode::kWindow;
      }
      PatternBuffers buffers(comm_, pattern.modeOf(rank_), anyWindow, regionBytes);
      std::string setUp = buffers.setUp();
      if (!setUp.empty()) {
        fail("setting up the buffers: " + setUp);
        return result_;  // a failed collective registration leaves nothing to run
      }
      // After this rank's own allocations: what appears from here on maps peers' memory.
      const std::set<std::string> mappedBefore = weftMemoryMappings();
      send_ = buffers.region() + kHeadBytes + (pattern.skewed ? 64 * rank_ : 0);
      recv_ = send_ + bufferBytes_;
      for (size_t sizeIndex = 0; sizeIndex < counts.size(); ++sizeIndex) {
        for (size_t specIndex = 0; specIndex < std::size(kSpecs); ++specIndex) {
          const Spec& spec = kSpecs[specIndex];
          // Out of place, in place, and in place on odd ranks only (a local choice).
          for (int placement = 0; placement < 3; ++placement) {
            if (placement > 0 && spec.kind == Kind::kSendRecv) continue;
            if (placement == 2 && nranks_ == 1) continue;
            placement_ = placement;
            const bool inPlace = placement == 1 || (placement == 2 && rank_ % 2 == 1);
            const int root = static_cast<int>((sizeIndex + specIndex + placement) % nranks_);
            if (!runCase(spec, counts[sizeIndex], inPlace, root)) return result_;
          }
        }
      }
      // Every rank's buffers came from weftMemAlloc: the direct all-reduce (100 KB and up) read
      // them in place, mapping this pattern's new allocations of the peers.
      const std::set<std::string> mappedAfter = weftMemoryMappings();
      if (allShareable && std::includes(mappedBefore.begin(), mappedBefore.end(),
                                        mappedAfter.begin(), mappedAfter.end())) {
        fail("no peer's weftMemAlloc memory was mapped: the zero-copy path never ran");
      }
      std::string tornDown = buffers.tearDown();
      if (!tornDown.empty()) fail("releasing the buffers: " + tornDown);
    }
    return result_;
  }

  // Calls on buffers in a symmetric window, verified, for as long as the job lets them run.
  MemoryCheckResult runWindowLoop(int iterations) {
    static const ModePattern kAllWindow{"all-window", [](int) { return BufferMode::kWindow; }};
    pattern_ = &kAllWindow;
    const size_t count = 64 * 1024 + 3;
    bufferBytes_ = (static_cast<size_t>(nranks_) * count + kGuardElems) * kElemBytes + 64;
    bufferBytes_ = (bufferBytes_ + 63) / 64 * 64;
    PatternBuffers buffers(comm_, BufferMode::kWindow, true, kHeadBytes + 2 * bufferBytes_);
    std::string setUp = buffers.setUp();
    if (!setUp.empty()) {
      fail("setting up the buffers: " + setUp);
      return result_;
    }
    send_ = buffers.region() + kHeadBytes;
    recv_ = send_ + bufferBytes_;
    for (int i = 0; i < iterations; ++i) {
      const Spec& spec = kSpecs[static_cast<size_t>(i) % std::size(kSpecs)];
      nonBlocking_ = i % 4 >= 2;
      placement_ = i % 2;
      if (!runCase(spec, i % 3 == 0 ? 7 : count, i % 2 == 1, i % nranks_)) return result_;
    }
    std::string tornDown = buffers.tearDown();
    if (!tornDown.empty()) fail("releasing the buffers: " + tornDown);
    return result_;
  }

 private:
  bool runCase(const Spec& spec, size_t count, bool inPlace, int root) {
    switch (spec.type) {
      case weftInt32:
        return runTyped<int32_t>(spec, count, inPlace, root);
      case weftFloat32:
        return runTyped<float>(spec, count, inPlace, root);
      case weftUint8:
        return runTyped<uint8_t>(spec, count, inPlace, root);
      default:
        fail("no such type in the checks");
        return false;
    }
  }

  // Returns false when the call failed (the communicator may be unusable: nothing more runs).
  template <typename T>
  bool runTyped(const Spec& spec, size_t count, bool inPlace, int root) {
    const int n = nranks_;
    const int me = rank_;
    const size_t all = count * static_cast<size_t>(n);
    T* send = reinterpret_cast<T*>(send_);
    T* recv = reinterpret_cast<T*>(recv_);
    const T sentinel = sentinelOf<T>();
    auto own = [&](size_t i) { return inputOf<T>(spec, me, i); };
    auto fillInput = [&](T* at, size_t elems, int owner) {
      for (size_t i = 0; i < elems; ++i) at[i] = inputOf<T>(spec, owner, i);
    };
    auto fillSentinel = [&](T* at, size_t elems) { std::fill(at, at + elems, sentinel); };

    T* sendArg = send;
    T* recvArg = recv;
    size_t sendKept = 0;  // inputs at the start of send that an out-of-place call must keep
    switch (spec.kind) {
      case Kind::kAllReduce:
      case Kind::kReduce:
      case Kind::kAlltoAll: {
        const size_t elems = spec.kind == Kind::kAlltoAll ? all : count;
        if (inPlace) {
          fillInput(recv, elems, me);
          fillSentinel(recv + elems, kGuardElems);
          sendArg = recv;
        } else {
          fillInput(send, elems, me);
          fillSentinel(recv, elems + kGuardElems);
          sendKept = elems;
        }
        break;
      }
      case Kind::kBroadcast:
        if (inPlace) {
          if (me == root) {
            fillInput(recv, count, me);
          } else {
            fillSentinel(recv, count);
          }
          fillSentinel(recv + count, kGuardElems);
          sendArg = recv;
        } else {
          if (me == root) {
            fillInput(send, count, me);
            sendKept = count;
          }
          fillSentinel(recv, count + kGuardElems);
        }
        break;
      case Kind::kAllGather:
      case Kind::kGather:
        fillSentinel(recv, all + kGuardElems);
        if (inPlace && (spec.kind == Kind::kAllGather || me == root)) {
          fillInput(recv + me * count, count, me);
          sendArg = recv + me * count;
        } else {
          fillInput(send, count, me);
          sendKept = count;
        }
        break;
      case Kind::kReduceScatter:
        fillInput(send, all, me);
        if (inPlace) {
          recvArg = send + me * count;
        } else {
          fillSentinel(recv, count + kGuardElems);
          sendKept = all;
        }
        break;
      case Kind::kScatter:
        if (me == root) fillInput(send, all, me);
        if (inPlace && me == root) {
          recvArg = send + me * count;
        } else {
          fillSentinel(recv, count + kGuardElems);
          if (me == root) sendKept = all;
        }
        break;
      case Kind::kSendRecv:
        fillInput(send, count, me);
        fillSentinel(recv, count + kGuardElems);
        sendKept = count;
        break;
    }

    const int next = (me + 1) % n;
    const int prev = (me + n - 1) % n;
    weftResult_t status = weftSuccess;
    weftRequest_t request = nullptr;
    weftRequest_t* req = nonBlocking_ ? &request : nullptr;
    switch (spec.kind) {
      case Kind::kAllReduce:
        status = weftAllReduce(sendArg, recvArg, count, spec.type, spec.op, comm_, req);
        break;
      case Kind::kBroadcast:
        status = weftBroadcast(sendArg, recvArg, count, spec.type, root, comm_, req);
        break;
      case Kind::kReduce:
        status = weftReduce(sendArg, recvArg, count, spec.type, spec.op, root, comm_, req);
        break;
      case Kind::kAllGather:
        status = weftAllGather(sendArg, recvArg, count, spec.type, comm_, req);
        break;
      case Kind::kReduceScatter:
        status = weftReduceScatter(sendArg, recvArg, count, spec.type, spec.op, comm_, req);
        break;
      case Kind::kAlltoAll:
        status = weftAlltoAll(sendArg, recvArg, count, spec.type, comm_, req);
        break;
      case Kind::kGather:
        status = weftGather(sendArg, recvArg, count, spec.type, root, comm_, req);
        break;
      case Kind::kScatter:
        status = weftScatter(sendArg, recvArg, count, spec.type, root, comm_, req);
        break;
      case Kind::kSendRecv: {
        weftGroupStart();
        weftResult_t sent = weftSend(sendArg, count, spec.type, next, comm_, nullptr);
        weftResult_t received = weftRecv(recvArg, count, spec.type, prev, comm_, req);
        weftResult_t ended = weftGroupEnd();
        status = sent != weftSuccess ? sent : received != weftSuccess ? received : ended;
        break;
      }
    }
    if (status == weftSuccess && request != nullptr) status = weftWait(&request, -1);
    ++result_.calls;
    auto describe = [&](const std::string& what) {
      std::ostringstream text;
      constexpr const char* kPlacements[] = {" out-of-place", " in-place",
                                             " in-place on odd ranks"};
      text << spec.label << " count " << count << kPlacements[placement_];
      if (spec.kind == Kind::kBroadcast || spec.kind == Kind::kReduce ||
          spec.kind == Kind::kGather || spec.kind == Kind::kScatter) {
        text << " root " << root;
      }
      text << ": " << what;
      return text.str();
    };
    if (status != weftSuccess) {
      fail(describe(std::string("returned ") + weftGetErrorString(status) + ": " +
                    weftGetLastError(comm_)));
      return false;
    }

    // Compares `elems` elements at `at` with expected(i); reports the first difference.
    bool ok = true;
    auto verify = [&](const char* where, const T* at, size_t elems, auto&& expected) {
      if (!ok) return;
      for (size_t i = 0; i < elems; ++i) {
        const T want = expected(i);
        if (at[i] != want) {
          std::ostringstream what;
          what << where << " element " << i << " of " << elems << " is " << printable(at[i])
               << ", expected " << printable(want);
          fail(describe(what.str()));
          ok = false;
          return;
        }
      }
    };
    auto unchanged = [&](size_t) { return sentinel; };
    auto reducedAt = [&](size_t offset) {
      return [&spec, n, offset](size_t i) { return reducedOf<T>(spec, n, offset + i); };
    };
    switch (spec.kind) {
      case Kind::kAllReduce:
        verify("recvbuff", recvArg, count, reducedAt(0));
        verify("guard after recvbuff", recvArg + count, kGuardElems, unchanged);
        break;
      case Kind::kReduce:
        if (me == root) {
          verify("recvbuff", recvArg, count, reducedAt(0));
          verify("guard after recvbuff", recvArg + count, kGuardElems, unchanged);
        } else if (!inPlace) {
          verify("non-root recvbuff", recvArg, count + kGuardElems, unchanged);
        }
        break;
      case Kind::kBroadcast:
        verify("recvbuff", recvArg, count, [&](size_t i) { return inputOf<T>(spec, root, i); });
        verify("guard after recvbuff", recvArg + count, kGuardElems, unchanged);
        break;
      case Kind::kAllGather:
      case Kind::kGather:
        if (spec.kind == Kind::kAllGather || me == root) {
          verify("recvbuff", recv, all, [&](size_t i) {
            return inputOf<T>(spec, static_cast<int>(i / count), i % count);
          });
          verify("guard after recvbuff", recv + all, kGuardElems, unchanged);
        } else {
          verify("non-root recvbuff", recv, all + kGuardElems, unchanged);
        }
        break;
      case Kind::kReduceScatter:
        verify("recvbuff", recvArg, count, reducedAt(me * count));
        if (!inPlace) verify("guard after recvbuff", recvArg + count, kGuardElems, unchanged);
        break;
      case Kind::kScatter:
        verify("recvbuff", recvArg, count,
               [&](size_t i) { return inputOf<T>(spec, root, me * count + i); });
        if (!(inPlace && me == root)) {
          verify("guard after recvbuff", recvArg + count, kGuardElems, unchanged);
        }
        break;
      case Kind::kAlltoAll:
        verify("recvbuff", recvArg, all, [&](size_t i) {
          return inputOf<T>(spec, static_cast<int>(i / count), me * count + i % count);
        });
        verify("guard after recvbuff", recvArg + all, kGuardElems, unchanged);
        break;
      case Kind::kSendRecv:
        verify("recvbuff", recvArg, count, [&](size_t i) { return inputOf<T>(spec, prev, i); });
        verify("guard after recvbuff", recvArg + count, kGuardElems, unchanged);
        break;
    }
    verify("sendbuff (an input)", send, sendKept, own);
    return true;
  }

  void fail(const std::string& what) {
    ++result_.failures;
    if (result_.messages.size() >= kMaxMessages) return;
    std::ostringstream message;
    message << "rank " << rank_ << "/" << nranks_;
    if (pattern_ != nullptr) {
      message << ", pattern " << pattern_->name << " (modes " << modesOf(*pattern_, nranks_) << ")";
    }
    message << ": " << what;
    result_.messages.push_back(message.str());
  }

  weftComm_t comm_;
  const MemoryCheckOptions& options_;
  bool nonBlocking_;
  int rank_ = 0;
  int nranks_ = 1;
  const ModePattern* pattern_ = nullptr;
  int placement_ = 0;  // 0 out of place, 1 in place, 2 in place on odd ranks
  size_t bufferBytes_ = 0;
  char* send_ = nullptr;
  char* recv_ = nullptr;
  MemoryCheckResult result_;
};

}  // namespace

const char* bufferModeName(BufferMode mode) {
  switch (mode) {
    case BufferMode::kPlain:
      return "plain";
    case BufferMode::kMemAlloc:
      return "memalloc";
    case BufferMode::kRegistered:
      return "registered";
    case BufferMode::kWindow:
      return "window";
    case BufferMode::kRegisteredPlain:
      return "registered-plain";
  }
  return "?";
}

std::vector<ModePattern> allModePatterns() {
  return {
      {"all-plain", [](int) { return BufferMode::kPlain; }},
      {"all-memalloc", [](int) { return BufferMode::kMemAlloc; }},
      {"all-registered", [](int) { return BufferMode::kRegistered; }},
      {"all-window", [](int) { return BufferMode::kWindow; }},
      {"all-registered-plain", [](int) { return BufferMode::kRegisteredPlain; }},
      // plain, memalloc, registered, window, ...
      {"mixed", [](int r) { return static_cast<BufferMode>(r % 4); }},
      // window, plain, memalloc, registered, ...
      {"mixed-rotated", [](int r) { return static_cast<BufferMode>((r + 3) % 4); }},
      // window, registered, memalloc, window, ...: every buffer shareable
      {"mixed-shareable", [](int r) { return static_cast<BufferMode>(3 - r % 3); }},
      {"all-window-skewed", [](int) { return BufferMode::kWindow; }, true},
  };
}

size_t sharedWindowAreaBytes() {
  size_t window = size_t{8} << 20;
  if (const char* text = std::getenv("WEFT_SHM_WINDOW_BYTES"); text != nullptr && *text) {
    window = std::strtoull(text, nullptr, 10);
  }
  return window / 2;
}

std::vector<size_t> memoryCheckCounts() {
  const size_t large = (sharedWindowAreaBytes() * 5 / 2 / kElemBytes) | 1;
  return {1, 7, 25003, large};
}

MemoryCheckResult runMemoryChecks(weftComm_t comm, const MemoryCheckOptions& options) {
  return Runner(comm, options).run();
}

MemoryCheckResult runWindowLoop(weftComm_t comm, int iterations) {
  MemoryCheckOptions options;
  return Runner(comm, options).runWindowLoop(iterations);
}

}  // namespace weft::test
