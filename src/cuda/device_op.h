// Running an operation that touches a GPU: calls on device buffers, and stream-ordered calls.
//
// Device buffers go through pinned host staging: the inputs of every device call are copied to
// the host on the communicator's own stream, the host algorithms run on the staged copies, and
// the results are copied back before the operation ends. That serves every layout (ranks on one
// host or many, any transport) with the same algorithms and tuner choices as host buffers.
// A stream-ordered operation first waits until the work its callers' streams had queued before
// the call has finished, and releases those streams once its results are in place.
#pragma once

#include <functional>

#include "base/status.h"
#include "core/comm.h"
#include "core/executor.h"

namespace weft::device {

// Runs op through runHost() as described above. Every wait is bounded by the communicator's
// timeout and ends early when the communicator fails or is aborted.
Status runDeviceOp(weftComm* comm, const Op& op, const std::function<Status(const Op&)>& runHost);

}  // namespace weft::device
