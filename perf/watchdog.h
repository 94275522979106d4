// -T: a monitor thread that ends a run stuck in a weft call. Each rank thread arms its slot while
// it waits on weft; when a slot stays armed longer than the timeout, the monitor prints
// "Test timeout", aborts every registered communicator (weftCommAbort may be called while another
// thread is blocked on the communicator) and exits the process with status 1.
#pragma once

#include "weft/weft.h"

namespace weft::perf::watchdog {

// Starts the monitor with `slots` slots; does nothing when timeoutSec is 0.
void start(int timeoutSec, int slots);
// Stops the monitor (before the process exits normally).
void stop();

// Binds the calling thread to a slot; `rank` is only for the message (-1: process setup).
void bindThread(int slot, int rank);

// Communicators to abort on expiry. Remove one before destroying it.
void addComm(weftComm_t comm);
void removeComm(weftComm_t comm);

// True once the monitor has fired: errors that follow are the abort's, not news.
bool fired();

// Arms the calling thread's slot for its lifetime (nested scopes keep the outermost start).
class Scope {
 public:
  explicit Scope(bool arm = true);
  ~Scope();
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  bool armed_;
};

}  // namespace weft::perf::watchdog
