// What weft needs from a GPU runtime, as one interface: the CUDA implementation (cuda_api.cc,
// built when the toolkit is found) and a host-memory fake for the tests (tests/cuda/), so that
// everything weft does with device buffers (classifying pointers, staging through pinned host
// memory, stream ordering, the direct algorithms over IPC) runs and is tested on machines
// without a GPU.
//
// Streams and events are opaque handles (cudaStream_t, cudaEvent_t underneath). Every call
// returns a Status naming what failed; none blocks without bound except the explicit
// synchronisations, which the callers bound by querying instead where a deadline applies.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "base/status.h"
#include "weft/weft.h"

namespace weft::device {

using Stream = void*;
using Event = void*;

enum class MemoryKind : uint8_t { kHost, kDevice };

struct PointerInfo {
  MemoryKind kind = MemoryKind::kHost;
  int device = -1;  // kDevice: the ordinal of the GPU holding it
};

// A handle another process can open to reach a device allocation (cudaIpcMemHandle_t is 64
// bytes), and where the pointer it was made from lies in that allocation.
struct IpcHandle {
  std::array<uint8_t, 64> bytes{};
  size_t offset = 0;
};

constexpr int kMaxReduceSources = 8;

class DeviceApi {
 public:
  virtual ~DeviceApi() = default;
  virtual const char* name() const = 0;

  // Where ptr lives. Must not initialise a GPU runtime in a process that has never used one:
  // memory of such a process is host memory.
  virtual Status classify(const void* ptr, PointerInfo* out) = 0;
  // False while no pointer can be device memory (no driver in the process yet), so that a call
  // on host buffers skips classify().
  virtual bool mayHoldDeviceMemory() { return true; }
  virtual Status deviceCount(int* count) = 0;
  // The calling thread's current device, as cudaSetDevice / cudaGetDevice.
  virtual Status setDevice(int device) = 0;
  virtual Status currentDevice(int* device) = 0;
  // The GPU's identity, equal in every process that sees it (whatever its ordinal there).
  virtual Status deviceUuid(int device, std::array<uint8_t, 16>* out) = 0;

  virtual Status streamCreate(Stream* out) = 0;  // a stream that does not sync with stream 0
  virtual void streamDestroy(Stream stream) = 0;
  virtual Status streamSynchronize(Stream stream) = 0;
  virtual Status eventCreate(Event* out) = 0;  // without timing
  virtual void eventDestroy(Event event) = 0;
  virtual Status eventRecord(Event event, Stream stream) = 0;
  // *done: every work queued on the event's stream before the record has finished.
  virtual Status eventQuery(Event event, bool* done) = 0;
  // Work queued on stream after this waits until the event's recorded work has finished.
  virtual Status streamWaitEvent(Stream stream, Event event) = 0;

  // Copies in any direction (unified addressing), ordered on stream.
  virtual Status memcpyAsync(void* dst, const void* src, size_t bytes, Stream stream) = 0;
  // dst = srcs[0] (op) srcs[1] (op) ... over count elements, nsrcs in 1..kMaxReduceSources;
  // with ndsts > 1 the result goes to every dsts[i]. dst may alias a source at the same offset.
  // weftAvg sums, then divides by avgDivisor (the number of ranks) as the host kernels do:
  // integers truncate, floating point multiplies by 1/avgDivisor.
  struct Reduction {
    void* const* dsts;
    int ndsts;
    const void* const* srcs;
    int nsrcs;
    size_t count;
    weftDataType_t type;
    weftRedOp_t op;
    int avgDivisor;  // weftAvg: the number of ranks; otherwise 1
  };
  virtual Status reduceAsync(const Reduction& reduction, Stream stream) = 0;

  // Pinned host memory, also mapped into the device address space.
  virtual Status hostAlloc(size_t bytes, void** out) = 0;
  virtual void hostFree(void* ptr) = 0;
  // The device address of pinned memory (for flags a stream waits on).
  virtual Status hostDevicePointer(void* host, void** device) = 0;
  // Work queued on stream after this waits until the 32-bit word at `flag` (pinned, mapped)
  // is >= value, as seen by the device.
  virtual Status streamWaitFlag(Stream stream, const volatile uint32_t* flag, uint32_t value) = 0;

  virtual Status ipcGetHandle(const void* ptr, IpcHandle* out) = 0;
  // Maps another process's allocation; *base is the allocation's start in this process.
  virtual Status ipcOpen(const IpcHandle& handle, void** base) = 0;
  virtual void ipcClose(void* base) = 0;
};

// The process's GPU runtime: the CUDA one when this weft was built with CUDA, else none
// (nullptr: every buffer is host memory).
DeviceApi* deviceApi();
// Tests only: replaces the runtime (nullptr restores the built-in one).
void setDeviceApiForTesting(DeviceApi* api);

}  // namespace weft::device
