// Which memory a call's buffers live in, decided once per call in the API layer, and the
// communicator's GPU state that device buffers and streams need.
#pragma once

#include "base/call.h"
#include "base/status.h"
#include "core/comm.h"
#include "cuda/gpu_state.h"

namespace weft::device {

// Sets args->deviceBuffers and args->device for a checked call (config.buffers decides how, see
// weftConfig_t.buffers) and binds the communicator to that GPU. Both used buffers must be the
// same kind of memory, on the same GPU; errors name the function and the buffer.
Status classifyBuffers(const char* fn, weftComm* comm, CollArgs* args);

// The communicator's GPU state, made on first use; an error naming fn where this weft has no
// GPU runtime.
Status gpuStateFor(weftComm* comm, const char* fn, GpuState** out);

// The GPU state of a communicator that has one (gpuStateFor() made it).
inline GpuState* gpuOf(const weftComm* comm) {
  return static_cast<GpuState*>(comm->gpu.get());
}

}  // namespace weft::device
