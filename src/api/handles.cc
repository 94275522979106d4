#include "api/handles.h"

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string>
#include <unordered_map>

namespace weft::api {
namespace {

// Every call pins its communicator, so pinning is on the path of the smallest collective. The
// first kSlots live communicators each get a slot of their own that a call pins with atomics
// alone; the rest (a job with more communicators alive at once) live in a map under gMutex.
//
// Pinning a slot: find the handle, count the call in, then check again that the slot still
// holds it and is not retiring (the slot may have been retired and reused in between). Retiring
// sets `retiring` and then waits for the count to reach zero; a call leaving a retiring slot
// wakes it. Both sides use sequentially consistent operations, so either the leaving call sees
// `retiring` or the retiring thread sees the count at zero.
struct Slot {
  std::atomic<weftComm*> comm{nullptr};
  std::atomic<int> callsInside{0};
  std::atomic<bool> retiring{false};
};
constexpr int kSlots = 64;
Slot gSlots[kSlots];
std::atomic<int> gSlotsUsed{0};  // slots below this may hold a handle

struct Registration {
  int callsInside = 0;
  bool retiring = false;
};

std::mutex gMutex;  // guards the map and slot assignment; gCallLeft waits on it
std::condition_variable gCallLeft;
std::unordered_map<weftComm*, Registration>& registry() {
  static auto* map = new std::unordered_map<weftComm*, Registration>();
  return *map;
}
thread_local std::string tLastError;

int slotOf(weftComm* comm) {
  // A free slot holds nullptr: a NULL handle must not pin one (its count would never drop, and
  // the communicator that takes the slot next could never be destroyed).
  if (comm == nullptr) return -1;
  int used = gSlotsUsed.load(std::memory_order_acquire);
  for (int i = 0; i < used; ++i) {
    if (gSlots[i].comm.load(std::memory_order_acquire) == comm) return i;
  }
  return -1;
}

// Counts a call out of a slot, waking a thread that retires it once the last call has left.
void leaveSlot(Slot& slot) {
  if (slot.callsInside.fetch_sub(1) == 1 && slot.retiring.load()) {
    std::lock_guard<std::mutex> lock(gMutex);
    gCallLeft.notify_all();
  }
}

bool pinSlot(int i, weftComm* comm) {
  Slot& slot = gSlots[i];
  slot.callsInside.fetch_add(1);
  if (slot.comm.load() == comm && !slot.retiring.load()) return true;
  leaveSlot(slot);
  return false;
}

}  // namespace

void registerComm(weftComm* comm) {
  std::lock_guard<std::mutex> lock(gMutex);
  for (int i = 0; i < kSlots; ++i) {
    if (gSlots[i].retiring.load() || gSlots[i].comm.load() != nullptr) continue;
    gSlots[i].comm.store(comm);
    if (i >= gSlotsUsed.load()) gSlotsUsed.store(i + 1, std::memory_order_release);
    return;
  }
  registry()[comm] = Registration{};
}

bool beginRetire(weftComm* comm) {
  std::lock_guard<std::mutex> lock(gMutex);
  int i = slotOf(comm);
  if (i >= 0) {
    if (gSlots[i].retiring.load()) return false;
    gSlots[i].retiring.store(true);
    return true;
  }
  auto it = registry().find(comm);
  if (it == registry().end() || it->second.retiring) return false;
  it->second.retiring = true;
  return true;
}

void finishRetire(weftComm* comm) {
  std::unique_lock<std::mutex> lock(gMutex);
  int i = slotOf(comm);
  if (i >= 0) {
    Slot& slot = gSlots[i];
    gCallLeft.wait(lock, [&] { return slot.callsInside.load() == 0; });
    slot.comm.store(nullptr);
    slot.retiring.store(false);
    return;
  }
  gCallLeft.wait(lock, [&] { return registry()[comm].callsInside == 0; });
  registry().erase(comm);
}

CommGuard::CommGuard(weftComm_t comm) : comm_(nullptr), slot_(-1) {
  int i = slotOf(comm);
  if (i >= 0) {
    if (pinSlot(i, comm)) {
      comm_ = comm;
      slot_ = i;
    }
    return;
  }
  std::lock_guard<std::mutex> lock(gMutex);
  auto it = registry().find(comm);
  if (it != registry().end() && !it->second.retiring) {
    ++it->second.callsInside;
    comm_ = comm;
  }
}

CommGuard::~CommGuard() {
  if (comm_ == nullptr) return;
  if (slot_ >= 0) {
    leaveSlot(gSlots[slot_]);
    return;
  }
  std::lock_guard<std::mutex> lock(gMutex);
  if (--registry()[comm_].callsInside == 0) gCallLeft.notify_all();
}

weftResult_t report(weftComm* comm, const Status& status) {
  if (status.isOk()) return weftSuccess;
  tLastError = status.message();
  if (comm != nullptr) {
    std::lock_guard<std::mutex> lock(comm->failureMutex);
    comm->lastError = status.message();
  }
  return status.code();
}

const char* lastError(weftComm* comm) {
  if (comm != nullptr) {
    CommGuard guard(comm);
    if (guard.valid()) {
      std::lock_guard<std::mutex> lock(comm->failureMutex);
      if (!comm->lastError.empty()) return comm->lastError.c_str();
    }
  }
  return tLastError.c_str();
}

}  // namespace weft::api
