#include "api/handles.h"

#include <condition_variable>
#include <mutex>
#include <string>
#include <unordered_map>

namespace weft::api {
namespace {

struct Registration {
  int callsInside = 0;
  bool retiring = false;
};

std::mutex gMutex;
std::condition_variable gCallLeft;
std::unordered_map<weftComm*, Registration>& registry() {
  static auto* map = new std::unordered_map<weftComm*, Registration>();
  return *map;
}
thread_local std::string tLastError;

}  // namespace

void registerComm(weftComm* comm) {
  std::lock_guard<std::mutex> lock(gMutex);
  registry()[comm] = Registration{};
}

bool beginRetire(weftComm* comm) {
  std::lock_guard<std::mutex> lock(gMutex);
  auto it = registry().find(comm);
  if (it == registry().end() || it->second.retiring) return false;
  it->second.retiring = true;
  return true;
}

void finishRetire(weftComm* comm) {
  std::unique_lock<std::mutex> lock(gMutex);
  gCallLeft.wait(lock, [&] { return registry()[comm].callsInside == 0; });
  registry().erase(comm);
}

CommGuard::CommGuard(weftComm_t comm) : comm_(nullptr) {
  std::lock_guard<std::mutex> lock(gMutex);
  auto it = registry().find(comm);
  if (it != registry().end() && !it->second.retiring) {
    ++it->second.callsInside;
    comm_ = comm;
  }
}

CommGuard::~CommGuard() {
  if (comm_ == nullptr) return;
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
