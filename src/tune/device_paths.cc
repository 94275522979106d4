#include "tune/device_paths.h"

#include <algorithm>
#include <cmath>

#include "tune/cost_model.h"

namespace weft::tune {
namespace {

bool elementWise(CollType coll) {
  return coll == CollType::kAllReduce || coll == CollType::kBroadcast || coll == CollType::kReduce;
}

// The host algorithm on `bytes`. Algorithms and collectives the model does not price (the
// one-host shared-window algorithms, the rooted and personalised collectives) are charged a ring
// all-reduce of the same bytes, which none of them exceeds.
double hostMicros(const Layout& layout, CollType coll, const Plan& plan, size_t bytes) {
  if (layout.nranks <= 1) return 0;
  const double predicted = predictMicros(layout.params, layout.cost, coll, plan.algo, plan.inner,
                                         bytes, plan.sliceBytes);
  if (predicted >= 0) return predicted;
  return predictMicros(layout.params, layout.cost, CollType::kAllReduce, AlgoId::kRing,
                       AlgoId::kRing, bytes, plan.sliceBytes);
}

// Bytes that all the ranks sharing the GPU read and write together in the direct kernels, per
// byte of the call's block (n ranks): an all-reduce rank reads its share from n sources and
// writes it to n destinations (2 per byte, n ranks); a broadcast rank reads its share once and
// writes it n times; a reduce rank reads n and writes one; an all-gather rank reads its block
// and writes it n times; a reduce-scatter rank reads n blocks and writes one.
double directTraffic(CollType coll, double block, int n) {
  switch (coll) {
    case CollType::kAllReduce:
      return 2.0 * n * block;
    case CollType::kBroadcast:
    case CollType::kReduce:
      return (n + 1.0) * block;
    case CollType::kAllGather:
    case CollType::kReduceScatter:
      return (n + 1.0) * n * block;
    default:
      return 0;
  }
}

double directMicros(const Layout& layout, const CollArgs& call) {
  const int n = layout.nranks;
  const CallSizes sizes = callSizes(call, n);
  // The buffer records' all-gather before the kernels and the barrier after them, both
  // latency-bound among the host's ranks.
  const double exchanges =
      2.0 * std::ceil(std::log2(std::max(2, n))) * layout.params.shm.alphaMicros;
  return exchanges + layout.params.gpu.time(directTraffic(call.coll, sizes.block, n));
}

double stagedMicros(const Layout& layout, const CollArgs& call, const Plan& host) {
  const CallExtents extents = callExtents(call, layout.nranks, 0);
  const LinkCost& copy = layout.params.copy;
  return copy.time(extents.sendBytes) +
         hostMicros(layout, call.coll, host, callSizes(call, layout.nranks).message) +
         copy.time(extents.recvBytes);
}

// Chunk i's host algorithm overlaps chunk i+1's copy in and chunk i-1's copy out, so the
// pipeline runs at the pace of the slower of the two, plus filling and draining it.
double chunkedMicros(const Layout& layout, const CollArgs& call, const Plan& host) {
  const size_t bytes = callSizes(call, layout.nranks).block;
  const double chunks = std::ceil(static_cast<double>(bytes) / kStagingChunkBytes);
  const LinkCost& copy = layout.params.copy;
  const double copies = 2 * copy.time(kStagingChunkBytes);
  const double perChunk = hostMicros(layout, call.coll, host, kStagingChunkBytes);
  return copies + chunks * std::max(perChunk, copies);
}

}  // namespace

const char* devicePathName(DevicePath path) {
  switch (path) {
    case DevicePath::kDirect:
      return "direct";
    case DevicePath::kStagedChunked:
      return "staged_chunked";
    case DevicePath::kStaged:
      return "staged";
  }
  return "unknown";
}

std::vector<DeviceCandidate> rankDevicePaths(const DeviceCall& device, const Layout& layout,
                                             const Plan& host) {
  const CollArgs& call = device.call;
  std::vector<DeviceCandidate> ranked;
  ranked.push_back({DevicePath::kStaged, stagedMicros(layout, call, host)});
  if (device.grouped || call.count == 0) return ranked;
  const int n = layout.nranks;
  if (device.directForm && device.directAllowed && layout.nodes.nodes() == 1 && n >= 2 &&
      n <= kMaxDirectRanks) {
    ranked.push_back({DevicePath::kDirect, directMicros(layout, call)});
  }
  if (elementWise(call.coll) && callSizes(call, n).block >= 2 * kStagingChunkBytes) {
    ranked.push_back({DevicePath::kStagedChunked, chunkedMicros(layout, call, host)});
  }
  // Ties go to the earlier path in enum order (direct, chunked, staged), on every rank alike.
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const DeviceCandidate& a, const DeviceCandidate& b) {
                     return a.micros < b.micros || (a.micros == b.micros && a.path < b.path);
                   });
  return ranked;
}

}  // namespace weft::tune
