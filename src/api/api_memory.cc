// Memory, registration and windows: weftMemAlloc, weftCommRegister, weftCommWindowRegister
// (docs/MEMORY.md).
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "api/handles.h"
#include "api/submit.h"
#include "base/status.h"
#include "core/comm.h"
#include "mem/host_memory.h"

using weft::Status;
using weft::api::CommGuard;
using weft::api::report;

namespace {

Status notLive(const char* fn) {
  return weft::invalidArgument(std::string(fn) +
                               ": comm is not a live communicator (NULL, "
                               "destroyed or aborted)");
}

// What each rank says of its window at weftCommWindowRegister, exchanged before anyone decides,
// so that a problem on one rank is an error on all of them rather than a wait.
struct WindowOffer {
  uint64_t size;
  int32_t flags;
  int32_t problem;  // a WindowProblem
};
enum WindowProblem : int32_t { kFine, kNoBuffer, kNotAllocated, kNoWindow, kBadFlags };

const char* describe(WindowProblem problem) {
  switch (problem) {
    case kNoBuffer:
      return "buff is NULL or size is 0";
    case kNotAllocated:
      return "[buff, buff + size) is not inside memory from weftMemAlloc";
    case kNoWindow:
      return "win is NULL";
    case kBadFlags:
      return "winFlags has bits other than WEFT_WIN_COLL_SYMMETRIC";
    case kFine:
      break;
  }
  return "";
}

WindowProblem windowProblem(void* buff, size_t size, const weftWindow_t* win, int flags) {
  if (buff == nullptr || size == 0) return kNoBuffer;
  if (!weft::mem::find(buff, size)) return kNotAllocated;
  if (win == nullptr) return kNoWindow;
  if ((flags & ~WEFT_WIN_COLL_SYMMETRIC) != 0) return kBadFlags;
  return kFine;
}

// Every rank's verdict from everyone's offers: the first rank with a problem, or with a size or
// flags unlike rank 0's.
Status judgeWindow(const std::vector<WindowOffer>& offers, int me) {
  for (size_t rank = 0; rank < offers.size(); ++rank) {
    const WindowOffer& offer = offers[rank];
    const std::string who =
        static_cast<int>(rank) == me ? "this rank" : "rank " + std::to_string(rank);
    if (offer.problem != kFine) {
      return weft::invalidArgument("weftCommWindowRegister: on " + who + ", " +
                                   describe(static_cast<WindowProblem>(offer.problem)));
    }
    if (offer.size != offers[0].size || offer.flags != offers[0].flags) {
      return weft::invalidArgument(
          "weftCommWindowRegister: every rank must give the same size and winFlags; " + who +
          " gives size " + std::to_string(offer.size) + ", flags " + std::to_string(offer.flags) +
          ", rank 0 size " + std::to_string(offers[0].size) + ", flags " +
          std::to_string(offers[0].flags));
    }
  }
  return Status::ok();
}

}  // namespace

extern "C" {

weftResult_t weftMemAlloc(void** ptr, size_t size) {
  if (ptr == nullptr) return report(nullptr, weft::invalidArgument("weftMemAlloc: ptr is NULL"));
  if (size == 0) return report(nullptr, weft::invalidArgument("weftMemAlloc: size is 0"));
  Status allocated = weft::mem::allocate(size, ptr);
  if (!allocated.isOk()) return report(nullptr, allocated.withContext("weftMemAlloc"));
  return weftSuccess;
}

weftResult_t weftMemFree(void* ptr) {
  if (ptr == nullptr) return weftSuccess;  // as free(NULL)
  Status released = weft::mem::release(ptr);
  if (!released.isOk()) return report(nullptr, released.withContext("weftMemFree"));
  return weftSuccess;
}

weftResult_t weftCommRegister(const weftComm_t comm, void* buff, size_t size, void** handle) {
  CommGuard guard(comm);
  if (!guard.valid()) return report(nullptr, notLive("weftCommRegister"));
  if (buff == nullptr) {
    return report(comm, weft::invalidArgument("weftCommRegister: buff is NULL"));
  }
  if (size == 0) return report(comm, weft::invalidArgument("weftCommRegister: size is 0"));
  if (handle == nullptr) {
    return report(comm, weft::invalidArgument("weftCommRegister: handle is NULL"));
  }
  if (weft::mem::wasReleased(buff)) {
    return report(comm, weft::invalidArgument(
                            "weftCommRegister: buff points into memory freed by weftMemFree"));
  }
  auto registration = std::make_unique<weft::Registration>(weft::Registration{buff, size});
  std::lock_guard<std::mutex> lock(comm->memoryMutex);
  *handle = registration.get();
  comm->registrationChanges.push_back({buff, size, true});
  comm->registrationChangesPending.store(true, std::memory_order_release);
  comm->registrations.push_back(std::move(registration));
  return weftSuccess;
}

weftResult_t weftCommDeregister(const weftComm_t comm, void* handle) {
  CommGuard guard(comm);
  if (!guard.valid()) return report(nullptr, notLive("weftCommDeregister"));
  std::lock_guard<std::mutex> lock(comm->memoryMutex);
  auto& all = comm->registrations;
  auto it = std::find_if(all.begin(), all.end(), [&](const auto& r) { return r.get() == handle; });
  if (it == all.end()) {
    return report(comm,
                  weft::invalidArgument("weftCommDeregister: handle is not a registration of this "
                                        "communicator (or was deregistered already)"));
  }
  comm->registrationChanges.push_back({(*it)->buff, (*it)->size, false});
  comm->registrationChangesPending.store(true, std::memory_order_release);
  all.erase(it);
  return weftSuccess;
}

weftResult_t weftCommWindowRegister(weftComm_t comm, void* buff, size_t size, weftWindow_t* win,
                                    int winFlags) {
  CommGuard guard(comm);
  if (!guard.valid()) return report(nullptr, notLive("weftCommWindowRegister"));
  if (weft::api::inGroup()) {
    return report(
        comm, weft::invalidUsage("weftCommWindowRegister: collective registration inside a group "
                                 "(between weftGroupStart and weftGroupEnd)"));
  }
  WindowOffer mine{size, winFlags, windowProblem(buff, size, win, winFlags)};
  std::vector<WindowOffer> offers(static_cast<size_t>(comm->nranks));
  weftResult_t exchanged =
      weftAllGather(&mine, offers.data(), sizeof mine, weftUint8, comm, nullptr);
  if (exchanged != weftSuccess) return exchanged;
  Status judged = judgeWindow(offers, comm->rank);
  if (!judged.isOk()) return report(comm, judged);
  auto window = std::make_unique<weftWindow>(weftWindow{buff, size, winFlags});
  std::lock_guard<std::mutex> lock(comm->memoryMutex);
  *win = window.get();
  comm->windows.push_back(std::move(window));
  if (winFlags & WEFT_WIN_COLL_SYMMETRIC) comm->symmetricWindows.fetch_add(1);
  return weftSuccess;
}

weftResult_t weftCommWindowDeregister(weftComm_t comm, weftWindow_t win) {
  CommGuard guard(comm);
  if (!guard.valid()) return report(nullptr, notLive("weftCommWindowDeregister"));
  if (weft::api::inGroup()) {
    return report(comm, weft::invalidUsage(
                            "weftCommWindowDeregister: collective deregistration inside a group "
                            "(between weftGroupStart and weftGroupEnd)"));
  }
  auto& all = comm->windows;
  auto findWindow = [&] {
    return std::find_if(all.begin(), all.end(), [&](const auto& w) { return w.get() == win; });
  };
  int32_t known;
  {
    std::lock_guard<std::mutex> lock(comm->memoryMutex);
    known = findWindow() != all.end();
  }
  // Once every rank has arrived, every rank's calls on the window are done and no peer still
  // reads it; and all drop it, or none does, so that their choices stay alike.
  int32_t everywhere = 0;
  weftResult_t synced = weftAllReduce(&known, &everywhere, 1, weftInt32, weftMin, comm, nullptr);
  if (synced != weftSuccess) return synced;
  if (!everywhere) {
    return report(comm, weft::invalidArgument(
                            std::string("weftCommWindowDeregister: win is not a window of this "
                                        "communicator (or was deregistered already) on ") +
                            (known ? "another rank" : "this rank") + "; no rank dropped it"));
  }
  std::lock_guard<std::mutex> lock(comm->memoryMutex);
  auto it = findWindow();
  if ((*it)->flags & WEFT_WIN_COLL_SYMMETRIC) comm->symmetricWindows.fetch_sub(1);
  all.erase(it);
  return weftSuccess;
}

}  // extern "C"
