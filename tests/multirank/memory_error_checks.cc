// The memory API's errors (memory_checks.h): each bad call gets its code and a message naming
// the argument, and the communicator stays usable; and allocation churn past the peer mappings'
// capacity.
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

class ErrorChecks {
 public:
  explicit ErrorChecks(weftComm_t comm) : comm_(comm) {
    weftCommUserRank(comm, &rank_);
    weftCommCount(comm, &nranks_);
  }

  std::vector<std::string> run() {
    allocation();
    freedBuffers();
    registration();
    windows();
    weftResult_t asyncError = weftInternalError;
    if (weftCommGetAsyncError(comm_, &asyncError) != weftSuccess || asyncError != weftSuccess) {
      failed("the argument errors put the communicator in a failed state");
    }
    return failures_;
  }

 private:
  void failed(const std::string& what) {
    failures_.push_back("rank " + std::to_string(rank_) + "/" + std::to_string(nranks_) + ": " +
                        what);
  }

  // `result` is `want` and the last error (of comm, or of the thread without one) names `names`.
  void expect(const std::string& what, weftResult_t result, weftResult_t want, const char* names,
              weftComm_t comm) {
    const std::string message = weftGetLastError(comm);
    if (result != want) {
      failed(what + ": returned " + weftGetErrorString(result) + " (" + message + "), expected " +
             weftGetErrorString(want));
    } else if (names != nullptr && message.find(names) == std::string::npos) {
      failed(what + ": the message '" + message + "' does not mention '" + names + "'");
    }
  }

  // The communicator still works: a one-element all-reduce from the stack, and a 100 KB one from
  // weftMemAlloc memory (the zero-copy path where every rank's buffers are shareable).
  void stillUsable(const std::string& after) {
    int32_t value = rank_ + 1;
    int32_t sum = 0;
    weftResult_t small = weftAllReduce(&value, &sum, 1, weftInt32, weftSum, comm_, nullptr);
    if (small != weftSuccess || sum != nranks_ * (nranks_ + 1) / 2) {
      failed("after " + after + ": a one-element all-reduce " +
             (small != weftSuccess ? std::string("failed: ") + weftGetLastError(comm_)
                                   : "gave " + std::to_string(sum)));
      return;
    }
    constexpr size_t kCount = 25003;
    void* memory = nullptr;
    if (weftMemAlloc(&memory, 2 * kCount * sizeof(float)) != weftSuccess) {
      failed(std::string("weftMemAlloc: ") + weftGetLastError(nullptr));
      return;
    }
    auto* in = static_cast<float*>(memory);
    float* out = in + kCount;
    for (size_t i = 0; i < kCount; ++i) in[i] = static_cast<float>((i + rank_) % 17);
    weftResult_t large = weftAllReduce(in, out, kCount, weftFloat32, weftSum, comm_, nullptr);
    if (large != weftSuccess) {
      failed("after " + after + ": a 100 KB all-reduce failed: " + weftGetLastError(comm_));
    } else {
      for (size_t i = 0; i < kCount; ++i) {
        float want = 0;
        for (int r = 0; r < nranks_; ++r) want += static_cast<float>((i + r) % 17);
        if (out[i] != want) {
          failed("after " + after + ": a 100 KB all-reduce gave " + std::to_string(out[i]) +
                 " at " + std::to_string(i) + ", expected " + std::to_string(want));
          break;
        }
      }
    }
    weftMemFree(memory);
  }

  void allocation() {
    expect("weftMemAlloc(NULL, 4096)", weftMemAlloc(nullptr, 4096), weftInvalidArgument, "ptr",
           nullptr);
    void* memory = reinterpret_cast<void*>(0x1);
    expect("weftMemAlloc(&ptr, 0)", weftMemAlloc(&memory, 0), weftInvalidArgument, "size", nullptr);
    expect("weftMemFree(NULL)", weftMemFree(nullptr), weftSuccess, nullptr, nullptr);

    const size_t bytes = 10000;
    if (weftMemAlloc(&memory, bytes) != weftSuccess) {
      failed(std::string("weftMemAlloc of 10000 bytes: ") + weftGetLastError(nullptr));
      return;
    }
    auto* bytesAt = static_cast<unsigned char*>(memory);
    if (reinterpret_cast<uintptr_t>(memory) % static_cast<uintptr_t>(sysconf(_SC_PAGESIZE)) != 0) {
      failed("weftMemAlloc's memory is not page-aligned");
    }
    if (bytesAt[0] != 0 || bytesAt[bytes - 1] != 0) failed("weftMemAlloc's memory is not zeroed");
    std::memset(memory, 0x3c, bytes);  // usable as any memory
    expect("weftMemFree of an interior pointer", weftMemFree(bytesAt + 64), weftInvalidArgument,
           "ptr", nullptr);
    int onStack = 0;
    expect("weftMemFree of stack memory", weftMemFree(&onStack), weftInvalidArgument, "ptr",
           nullptr);
    std::unique_ptr<int[]> onHeap(new int[64]);
    expect("weftMemFree of heap memory", weftMemFree(onHeap.get()), weftInvalidArgument, "ptr",
           nullptr);
    // The refused frees left the allocation alone.
    if (bytesAt[bytes - 1] != 0x3c) failed("a refused weftMemFree changed the allocation");
    expect("weftMemFree", weftMemFree(memory), weftSuccess, nullptr, nullptr);
    expect("a second weftMemFree of the same pointer", weftMemFree(memory), weftInvalidArgument,
           "ptr", nullptr);
  }

  static constexpr size_t kCount = 1024;  // elements of the calls on freed memory

  void freedBuffers() {
    void* freed = nullptr;
    void* good = nullptr;
    if (weftMemAlloc(&freed, 2 * kCount * sizeof(int32_t)) != weftSuccess ||
        weftMemAlloc(&good, static_cast<size_t>(nranks_) * 2 * kCount * sizeof(int32_t)) !=
            weftSuccess) {
      failed(std::string("weftMemAlloc: ") + weftGetLastError(nullptr));
      return;
    }
    expect("weftMemFree", weftMemFree(freed), weftSuccess, nullptr, nullptr);
    auto* freedAt = static_cast<int32_t*>(freed);
    auto* in = static_cast<int32_t*>(good);
    int32_t* out = in + nranks_ * kCount;
    // Every rank makes each bad call: refused before any communication, on every rank.
    using Call = weftResult_t (*)(ErrorChecks&, int32_t*, int32_t*, int32_t*);
    struct Bad {
      const char* what;
      const char* names;
      Call call;
    };
    static const Bad kBads[] = {
        {"all-reduce from freed memory", "sendbuff",
         [](ErrorChecks& c, int32_t* freed, int32_t*, int32_t* out) {
           return weftAllReduce(freed, out, kCount, weftInt32, weftSum, c.comm_, nullptr);
         }},
        {"all-reduce into freed memory", "recvbuff",
         [](ErrorChecks& c, int32_t* freed, int32_t* in, int32_t*) {
           return weftAllReduce(in, freed, kCount, weftInt32, weftSum, c.comm_, nullptr);
         }},
        {"all-reduce in place in freed memory", "sendbuff",
         [](ErrorChecks& c, int32_t* freed, int32_t*, int32_t*) {
           return weftAllReduce(freed, freed, kCount, weftInt32, weftSum, c.comm_, nullptr);
         }},
        {"all-reduce into the middle of freed memory", "recvbuff",
         [](ErrorChecks& c, int32_t* freed, int32_t* in, int32_t*) {
           return weftAllReduce(in, freed + 100, 8, weftInt32, weftSum, c.comm_, nullptr);
         }},
        {"broadcast into freed memory", "recvbuff",
         [](ErrorChecks& c, int32_t* freed, int32_t* in, int32_t*) {
           return weftBroadcast(in, freed, kCount, weftInt32, 0, c.comm_, nullptr);
         }},
        {"all-gather from freed memory", "sendbuff",
         [](ErrorChecks& c, int32_t* freed, int32_t*, int32_t* out) {
           return weftAllGather(freed, out, 4, weftInt32, c.comm_, nullptr);
         }},
        {"all-gather into freed memory", "recvbuff",
         [](ErrorChecks& c, int32_t* freed, int32_t* in, int32_t*) {
           return weftAllGather(in, freed, 4, weftInt32, c.comm_, nullptr);
         }},
        {"reduce-scatter from freed memory", "sendbuff",
         [](ErrorChecks& c, int32_t* freed, int32_t*, int32_t* out) {
           return weftReduceScatter(freed, out, 4, weftInt32, weftSum, c.comm_, nullptr);
         }},
        {"all-to-all into freed memory", "recvbuff",
         [](ErrorChecks& c, int32_t* freed, int32_t* in, int32_t*) {
           return weftAlltoAll(in, freed, 4, weftInt32, c.comm_, nullptr);
         }},
        {"send from freed memory", "sendbuff",
         [](ErrorChecks& c, int32_t* freed, int32_t*, int32_t*) {
           return weftSend(freed, kCount, weftInt32, (c.rank_ + 1) % c.nranks_, c.comm_, nullptr);
         }},
        {"receive into freed memory", "recvbuff",
         [](ErrorChecks& c, int32_t* freed, int32_t*, int32_t*) {
           return weftRecv(freed, kCount, weftInt32, (c.rank_ + 1) % c.nranks_, c.comm_, nullptr);
         }},
    };
    for (const Bad& bad : kBads) {
      expect(bad.what, bad.call(*this, freedAt, in, out), weftInvalidArgument, bad.names, comm_);
    }
    stillUsable("calls on freed memory");
    void* handle = nullptr;
    expect("weftCommRegister of freed memory",
           weftCommRegister(comm_, freed, kCount * sizeof(int32_t), &handle), weftInvalidArgument,
           "buff", comm_);
    expect("weftMemFree of freed memory", weftMemFree(freed), weftInvalidArgument, "ptr", nullptr);
    // The same calls on live memory work.
    for (size_t i = 0; i < kCount; ++i) in[i] = rank_;
    if (weftAllReduce(in, out, kCount, weftInt32, weftSum, comm_, nullptr) != weftSuccess ||
        out[kCount - 1] != nranks_ * (nranks_ - 1) / 2) {
      failed(std::string("an all-reduce on live weftMemAlloc memory failed: ") +
             weftGetLastError(comm_));
    }
    weftMemFree(good);
  }

  void registration() {
    constexpr size_t kBytes = 8192;
    void* memory = nullptr;
    if (weftMemAlloc(&memory, kBytes) != weftSuccess) {
      failed(std::string("weftMemAlloc: ") + weftGetLastError(nullptr));
      return;
    }
    void* handle = nullptr;
    expect("weftCommRegister(NULL buff)", weftCommRegister(comm_, nullptr, kBytes, &handle),
           weftInvalidArgument, "buff", comm_);
    expect("weftCommRegister(size 0)", weftCommRegister(comm_, memory, 0, &handle),
           weftInvalidArgument, "size", comm_);
    expect("weftCommRegister(NULL handle)", weftCommRegister(comm_, memory, kBytes, nullptr),
           weftInvalidArgument, "handle", comm_);
    expect("weftCommRegister", weftCommRegister(comm_, memory, kBytes, &handle), weftSuccess,
           nullptr, comm_);
    void* overlapping = nullptr;
    expect("an overlapping weftCommRegister",
           weftCommRegister(comm_, static_cast<char*>(memory) + 100, 200, &overlapping),
           weftSuccess, nullptr, comm_);
    std::unique_ptr<char[]> heap(new char[kBytes]);
    void* heapHandle = nullptr;
    expect("weftCommRegister of heap memory",
           weftCommRegister(comm_, heap.get(), kBytes, &heapHandle), weftSuccess, nullptr, comm_);
    expect("weftCommDeregister", weftCommDeregister(comm_, handle), weftSuccess, nullptr, comm_);
    expect("weftCommDeregister of a deregistered handle", weftCommDeregister(comm_, handle),
           weftInvalidArgument, "handle", comm_);
    int unknown = 0;
    expect("weftCommDeregister of an unknown handle", weftCommDeregister(comm_, &unknown),
           weftInvalidArgument, "handle", comm_);
    expect("weftCommDeregister(NULL)", weftCommDeregister(comm_, nullptr), weftInvalidArgument,
           "handle", comm_);
    expect("weftCommDeregister of the overlapping handle", weftCommDeregister(comm_, overlapping),
           weftSuccess, nullptr, comm_);
    expect("weftCommDeregister of the heap handle", weftCommDeregister(comm_, heapHandle),
           weftSuccess, nullptr, comm_);
    stillUsable("registration errors");
    weftMemFree(memory);
  }

  // A collective window call made with one rank's arguments spoiled: every rank fails with
  // weftInvalidArgument, the message naming the spoiling rank (or "this rank" on it) and
  // `names`, and none is left with a window.
  void spoiledWindow(const std::string& what, int bad, void* good, size_t bytes, void* badBuff,
                     size_t badBytes, bool badNullWindow, int badFlags, const char* names) {
    const bool spoiler = rank_ == bad;
    weftWindow_t window = nullptr;
    weftResult_t result = weftCommWindowRegister(
        comm_, spoiler ? badBuff : good, spoiler ? badBytes : bytes,
        spoiler && badNullWindow ? nullptr : &window, spoiler ? badFlags : WEFT_WIN_COLL_SYMMETRIC);
    const std::string message = weftGetLastError(comm_);
    const std::string who = spoiler ? "this rank" : "rank " + std::to_string(bad);
    if (result != weftInvalidArgument) {
      failed("window " + what + ": returned " + weftGetErrorString(result) + " (" + message +
             "), expected weftInvalidArgument");
      if (result == weftSuccess && window != nullptr) weftCommWindowDeregister(comm_, window);
    } else if (message.find(who) == std::string::npos || message.find(names) == std::string::npos) {
      failed("window " + what + ": the message '" + message + "' does not mention '" + who +
             "' and '" + names + "'");
    }
    stillUsable("window " + what);
  }

  void windows() {
    constexpr size_t kCount = 25003;
    const size_t bytes = 2 * kCount * sizeof(float) + 4096;
    void* memory = nullptr;
    if (weftMemAlloc(&memory, bytes) != weftSuccess) {
      failed(std::string("weftMemAlloc: ") + weftGetLastError(nullptr));
      return;
    }
    const int bad = nranks_ - 1;
    std::unique_ptr<char[]> heap(new char[bytes]);
    spoiledWindow("with heap memory on one rank", bad, memory, bytes, heap.get(), bytes, false,
                  WEFT_WIN_COLL_SYMMETRIC, "weftMemAlloc");
    spoiledWindow("past the end of its allocation on one rank", bad, memory, bytes,
                  static_cast<char*>(memory) + 4096, bytes, false, WEFT_WIN_COLL_SYMMETRIC,
                  "weftMemAlloc");
    if (nranks_ > 1) {  // a rank differs from rank 0's size or flags
      spoiledWindow("of a different size on one rank", bad, memory, bytes, memory, bytes - 4096,
                    false, WEFT_WIN_COLL_SYMMETRIC, "size");
      spoiledWindow("with different flags on one rank", bad, memory, bytes, memory, bytes, false,
                    WEFT_WIN_DEFAULT, "winFlags");
    }
    spoiledWindow("with unknown flags on one rank", bad, memory, bytes, memory, bytes, false, 0x10,
                  "winFlags");
    spoiledWindow("with a NULL win on one rank", 0, memory, bytes, memory, bytes, true,
                  WEFT_WIN_COLL_SYMMETRIC, "win");
    spoiledWindow("with NULL buff on one rank", 0, memory, bytes, nullptr, bytes, false,
                  WEFT_WIN_COLL_SYMMETRIC, "buff");

    weftWindow_t window = nullptr;
    weftGroupStart();
    weftResult_t inGroup =
        weftCommWindowRegister(comm_, memory, bytes, &window, WEFT_WIN_COLL_SYMMETRIC);
    weftGroupEnd();
    expect("weftCommWindowRegister inside a group", inGroup, weftInvalidUsage, "group", comm_);
    stillUsable("a window registered inside a group");

    // A good window, used (every rank's buffers in it: the zero-copy path), then dropped twice.
    window = nullptr;
    expect("weftCommWindowRegister",
           weftCommWindowRegister(comm_, memory, bytes, &window, WEFT_WIN_COLL_SYMMETRIC),
           weftSuccess, nullptr, comm_);
    if (window == nullptr) {
      weftMemFree(memory);
      return;
    }
    windowAllReduce(memory, kCount, "in a symmetric window");
    expect("weftCommWindowDeregister", weftCommWindowDeregister(comm_, window), weftSuccess,
           nullptr, comm_);
    expect("a second weftCommWindowDeregister", weftCommWindowDeregister(comm_, window),
           weftInvalidArgument, "no rank dropped it", comm_);
    stillUsable("a second weftCommWindowDeregister");

    // One rank names a window that is not one: nobody drops the good one, which then goes.
    expect("weftCommWindowRegister again",
           weftCommWindowRegister(comm_, memory, bytes, &window, WEFT_WIN_COLL_SYMMETRIC),
           weftSuccess, nullptr, comm_);
    int notAWindow = 0;
    weftWindow_t named = rank_ == 0 ? reinterpret_cast<weftWindow_t>(&notAWindow) : window;
    expect("weftCommWindowDeregister of an unknown window on rank 0",
           weftCommWindowDeregister(comm_, named), weftInvalidArgument, "no rank dropped it",
           comm_);
    windowAllReduce(memory, kCount, "after a refused weftCommWindowDeregister");
    expect("weftCommWindowDeregister after the refused one",
           weftCommWindowDeregister(comm_, window), weftSuccess, nullptr, comm_);
    // A window without the symmetric promise.
    expect("weftCommWindowRegister (WEFT_WIN_DEFAULT)",
           weftCommWindowRegister(comm_, memory, bytes, &window, WEFT_WIN_DEFAULT), weftSuccess,
           nullptr, comm_);
    windowAllReduce(memory, kCount, "in a default window");
    expect("weftCommWindowDeregister (WEFT_WIN_DEFAULT)", weftCommWindowDeregister(comm_, window),
           weftSuccess, nullptr, comm_);
    stillUsable("the windows");
    weftMemFree(memory);
  }

  void windowAllReduce(void* memory, size_t count, const std::string& where) {
    auto* in = static_cast<float*>(memory);
    float* out = in + count;
    for (size_t i = 0; i < count; ++i) in[i] = static_cast<float>((i * 3 + rank_) % 29);
    if (weftAllReduce(in, out, count, weftFloat32, weftSum, comm_, nullptr) != weftSuccess) {
      failed("an all-reduce " + where + " failed: " + weftGetLastError(comm_));
      return;
    }
    for (size_t i = 0; i < count; ++i) {
      float want = 0;
      for (int r = 0; r < nranks_; ++r) want += static_cast<float>((i * 3 + r) % 29);
      if (out[i] != want) {
        failed("an all-reduce " + where + " gave " + std::to_string(out[i]) + " at " +
               std::to_string(i) + ", expected " + std::to_string(want));
        return;
      }
    }
  }

  weftComm_t comm_;
  int rank_ = 0;
  int nranks_ = 1;
  std::vector<std::string> failures_;
};

}  // namespace

std::vector<std::string> runMemoryErrorChecks(weftComm_t comm) {
  return ErrorChecks(comm).run();
}

std::vector<std::string> runAllocationChurn(weftComm_t comm, int allocations) {
  int rank = 0;
  int nranks = 1;
  weftCommUserRank(comm, &rank);
  weftCommCount(comm, &nranks);
  std::vector<std::string> failures;
  auto failed = [&](const std::string& what) {
    if (failures.size() < kMaxMessages) {
      failures.push_back("rank " + std::to_string(rank) + "/" + std::to_string(nranks) + ": " +
                         what);
    }
  };
  constexpr size_t kCount = 25003;  // float32: 100 KB, past the flat all-reduce
  auto inputOfRank = [](int r, int round, size_t i) {
    return static_cast<float>(
        static_cast<int>((i * 5 + static_cast<size_t>(r) * 3 + static_cast<size_t>(round) * 7) %
                         23) -
        11);
  };
  auto sumOf = [&](int round, size_t i) {
    float sum = 0;
    for (int r = 0; r < nranks; ++r) sum += inputOfRank(r, round, i);
    return sum;
  };
  auto check = [&](const float* out, int round, const std::string& what) {
    for (size_t i = 0; i < kCount; ++i) {
      if (out[i] != sumOf(round, i)) {
        failed(what + ": element " + std::to_string(i) + " is " + std::to_string(out[i]) +
               ", expected " + std::to_string(sumOf(round, i)));
        return false;
      }
    }
    return true;
  };

  for (int pass = 0; pass < 2 && failures.empty(); ++pass) {
    // All held at once; the peers' mappings of the first ones are dropped on the way.
    std::vector<float*> buffers;
    for (int round = 0; round < allocations; ++round) {
      void* memory = nullptr;
      if (weftMemAlloc(&memory, 2 * kCount * sizeof(float)) != weftSuccess) {
        failed(std::string("weftMemAlloc: ") + weftGetLastError(nullptr));
        break;
      }
      auto* in = static_cast<float*>(memory);
      buffers.push_back(in);
      for (size_t i = 0; i < kCount; ++i) in[i] = inputOfRank(rank, round, i);
      // Every third in place.
      float* out = round % 3 == 0 ? in : in + kCount;
      if (weftAllReduce(in, out, kCount, weftFloat32, weftSum, comm, nullptr) != weftSuccess) {
        failed("all-reduce " + std::to_string(round) + " of pass " + std::to_string(pass) +
               " failed: " + weftGetLastError(comm));
        break;
      }
      if (!check(out, round,
                 "all-reduce " + std::to_string(round) + " of pass " + std::to_string(pass))) {
        break;
      }
    }
    // The first buffers again, after their mappings went: mapped anew.
    for (int round = 0; round < 4 && round < static_cast<int>(buffers.size()) && failures.empty();
         ++round) {
      float* in = buffers[round];
      for (size_t i = 0; i < kCount; ++i) in[i] = inputOfRank(rank, round, i);
      if (weftAllReduce(in, in + kCount, kCount, weftFloat32, weftSum, comm, nullptr) !=
          weftSuccess) {
        failed("the all-reduce on early buffer " + std::to_string(round) +
               " failed: " + weftGetLastError(comm));
        break;
      }
      check(in + kCount, round, "the all-reduce on early buffer " + std::to_string(round));
    }
    // Grouped collectives on four of them, issued together.
    if (failures.empty() && buffers.size() >= 4) {
      weftGroupStart();
      for (int round = 0; round < 4; ++round) {
        float* in = buffers[round];
        for (size_t i = 0; i < kCount; ++i) in[i] = inputOfRank(rank, round + 100, i);
        weftAllReduce(in, in + kCount, kCount, weftFloat32, weftSum, comm, nullptr);
      }
      if (weftGroupEnd() != weftSuccess) {
        failed(std::string("a group of all-reduces failed: ") + weftGetLastError(comm));
      } else {
        for (int round = 0; round < 4; ++round) {
          if (!check(buffers[round] + kCount, round + 100,
                     "grouped all-reduce " + std::to_string(round))) {
            break;
          }
        }
      }
    }
    for (float* buffer : buffers) {
      if (weftMemFree(buffer) != weftSuccess) {
        failed(std::string("weftMemFree: ") + weftGetLastError(nullptr));
      }
    }
    // Every rank goes on to the next pass only with every rank's verdict (a rank that stopped
    // early made fewer calls).
    int32_t mine = failures.empty() ? 0 : 1;
    int32_t any = 0;
    if (weftAllReduce(&mine, &any, 1, weftInt32, weftMax, comm, nullptr) != weftSuccess || any) {
      if (failures.empty()) failed("another rank failed");
      break;
    }
  }
  return failures;
}

}  // namespace weft::test
