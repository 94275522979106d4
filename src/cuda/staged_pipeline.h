// Large element-wise calls on device buffers (all-reduce, broadcast, reduce) staged in chunks,
// so that the copies between the GPU and pinned memory overlap the host algorithm's transfers:
// while chunk k is reduced across the ranks, chunk k+1 comes from the GPU and chunk k-1 goes
// back. Every rank chunks alike (from the count and datatype alone), so each chunk is one
// collective on every rank.
#pragma once

#include "cuda/device_direct.h"
#include "cuda/device_scope.h"
#include "cuda/staging_plan.h"
#include "tune/device_paths.h"

namespace weft::device {

// Chunks of tune::kStagingChunkBytes; the tuner (tune/device_paths.h) decides which calls are
// pipelined. Buffers that partly overlap (neither in place nor apart) are undefined here as
// everywhere.
// Runs op, whose staging `plan` describes, chunk by chunk.
Status runPipelined(weftComm* comm, DeviceScope& scope, const Op& op, const StagingPlan& plan,
                    const HostRunner& runHost);

}  // namespace weft::device
