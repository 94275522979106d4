// Queuing stream-ordered calls (weft*OnStream): the call records on each caller stream the point
// where its inputs are ready, and makes the stream wait, behind that point, for the call's
// release (gpu_state.h: ReleaseFlag, StreamOrder); the executor waits for the first and gives
// the second (device_op.h).
#pragma once

#include <vector>

#include "core/comm.h"
#include "core/executor.h"
#include "cuda/gpu_state.h"

namespace weft::device {

// Records on `stream` the point where a call's inputs are ready. Binds the communicator to the
// caller's current GPU if nothing bound it yet.
Status recordInputs(GpuState* gpu, Stream stream, const char* fn, Event* out);

// Numbers op, makes every stream in `streams` wait for its release, and queues it on the
// communicator's executor, all under the order mutex, so that release numbers follow queue
// order. Owns `inputs` (the events recordInputs made) whatever happens.
Status enqueueOrdered(weftComm* comm, GpuState* gpu, Op op, const std::vector<Stream>& streams,
                      std::vector<Event> inputs);

}  // namespace weft::device
