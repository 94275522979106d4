// How a call on device buffers runs, chosen by the same cost model as the host algorithms.
// The GPU layer (src/cuda) asks here, as core asks choosePlan() for host buffers. The paths:
//  - direct: the ranks share one GPU; each runs one kernel over every rank's buffers (a
//    collective with a device-direct form, one host, 2..kMaxDirectRanks ranks, not a group);
//    priced on the GPU link: all ranks' reads and writes share the GPU's memory;
//  - staged in chunks: element-wise collectives of two chunks or more, whose copies to and from
//    pinned host memory overlap the host algorithm chunk by chunk;
//  - staged: the inputs copied to pinned memory, the host Plan, the results copied back.
// Every rank derives the same choice from the same call, layout and parameters. A direct path
// that the ranks' buffer records rule out (different GPUs, no IPC handle) is asked again with
// direct excluded, and every rank then sees the same records.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "algos/plan.h"
#include "base/call.h"
#include "tune/select.h"

namespace weft::tune {

// The direct kernels combine at most this many ranks' buffers (cuda/device_kernels.h checks
// that its kMaxReduceSources agrees).
constexpr int kMaxDirectRanks = 8;
// The unit of chunked staging.
constexpr size_t kStagingChunkBytes = size_t{4} << 20;

enum class DevicePath : uint8_t { kDirect, kStagedChunked, kStaged };
const char* devicePathName(DevicePath path);  // "direct", "staged_chunked", "staged"

struct DeviceCall {
  CollArgs call;              // the call (for a group, its first call)
  bool grouped = false;       // part of a group: staged as a whole
  bool directForm = false;    // the GPU layer has a direct kernel for this collective
  bool directAllowed = true;  // false once the ranks' buffer records ruled direct out
};

struct DeviceCandidate {
  DevicePath path;
  double micros;
};

// The paths that can serve this call on this layout, cheapest first (never empty: staged
// serves everything). `host` is the Plan the staged paths run.
std::vector<DeviceCandidate> rankDevicePaths(const DeviceCall& device, const Layout& layout,
                                             const Plan& host);

}  // namespace weft::tune
