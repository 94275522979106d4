// Handle validation and error reporting for the C API. Communicators are registered while they
// live, so a call on a destroyed or bogus handle is an error instead of a crash, and each call
// pins its communicator so that destroy and abort wait for calls in flight on other threads.
#pragma once

#include "base/status.h"
#include "core/comm.h"
#include "weft/weft.h"

namespace weft::api {

void registerComm(weftComm* comm);
// Stops new calls on comm, runs `beforeWait` (abort uses it to release calls in flight), waits
// until no other call is inside, and forgets the handle. False if comm is not registered.
template <typename Fn>
bool retireComm(weftComm* comm, Fn beforeWait);

// Pins a communicator for the duration of one API call.
class CommGuard {
 public:
  explicit CommGuard(weftComm_t comm);
  ~CommGuard();
  CommGuard(const CommGuard&) = delete;
  CommGuard& operator=(const CommGuard&) = delete;
  bool valid() const { return comm_ != nullptr; }

 private:
  weftComm* comm_;
  int slot_;  // its slot in the fast table, or -1 when it is pinned through the map
};

// Records a failure as the thread's (and comm's, when given) last error and returns its code.
weftResult_t report(weftComm* comm, const Status& status);
const char* lastError(weftComm* comm);

// Implementation detail of retireComm.
bool beginRetire(weftComm* comm);
void finishRetire(weftComm* comm);

template <typename Fn>
bool retireComm(weftComm* comm, Fn beforeWait) {
  if (!beginRetire(comm)) return false;
  beforeWait();
  finishRetire(comm);
  return true;
}

}  // namespace weft::api
