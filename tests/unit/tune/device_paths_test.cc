// The tuner's choice of a path for calls on device buffers: which paths it offers for a call
// and layout, and that the cost model, not a rule, orders them.
#include <catch2/catch.hpp>

#include <algorithm>

#include "tune/device_paths.h"

namespace weft::tune {
namespace {

Layout layoutOf(int nodes, int perNode) {
  Layout layout;
  layout.nodes = topo::describedNodeLayout(nodes, perNode, false);
  layout.nranks = layout.nodes.nranks();
  layout.cost = buildCostLayout(layout.nodes, true);
  layout.oneHostShm = nodes == 1;
  layout.windowAreaBytes = 4 << 20;
  return layout;
}

DeviceCall deviceCall(CollType coll, size_t bytes, bool directForm = true) {
  DeviceCall device;
  device.call.coll = coll;
  device.call.type = weftFloat32;
  device.call.count = bytes / 4;
  device.call.deviceBuffers = true;
  device.directForm = directForm;
  return device;
}

std::vector<DevicePath> pathsOf(const DeviceCall& device, const Layout& layout) {
  const Plan host = choosePlan(device.call, layout, AlgoOverrides{}, 512 << 10);
  std::vector<DevicePath> paths;
  for (const DeviceCandidate& candidate : rankDevicePaths(device, layout, host)) {
    CHECK(candidate.micros > 0);
    paths.push_back(candidate.path);
  }
  return paths;
}

bool offers(const std::vector<DevicePath>& paths, DevicePath path) {
  return std::find(paths.begin(), paths.end(), path) != paths.end();
}

}  // namespace

TEST_CASE("ranks sharing a host run the direct kernels when a collective has them",
          "[tune][device]") {
  const Layout host = layoutOf(1, 4);
  for (CollType coll : {CollType::kAllReduce, CollType::kBroadcast, CollType::kReduce,
                        CollType::kAllGather, CollType::kReduceScatter}) {
    CAPTURE(collName(coll));
    for (size_t bytes : {size_t{4}, size_t{1} << 20, size_t{64} << 20}) {
      CHECK(pathsOf(deviceCall(coll, bytes), host).front() == DevicePath::kDirect);
    }
  }
}

TEST_CASE("no direct path across hosts, past the kernel's sources, for groups or without a form",
          "[tune][device]") {
  CHECK_FALSE(
      offers(pathsOf(deviceCall(CollType::kAllReduce, 4096), layoutOf(2, 2)), DevicePath::kDirect));
  CHECK_FALSE(
      offers(pathsOf(deviceCall(CollType::kAllReduce, 4096), layoutOf(1, 9)), DevicePath::kDirect));
  CHECK_FALSE(offers(pathsOf(deviceCall(CollType::kAlltoAll, 4096, false), layoutOf(1, 2)),
                     DevicePath::kDirect));
  DeviceCall grouped = deviceCall(CollType::kAllReduce, 4096);
  grouped.grouped = true;
  CHECK(pathsOf(grouped, layoutOf(1, 2)) == std::vector<DevicePath>{DevicePath::kStaged});
  DeviceCall ruledOut = deviceCall(CollType::kAllReduce, 4096);
  ruledOut.directAllowed = false;
  CHECK_FALSE(offers(pathsOf(ruledOut, layoutOf(1, 2)), DevicePath::kDirect));
}

TEST_CASE("chunked staging is offered from two chunks of an element-wise call and wins there",
          "[tune][device]") {
  const Layout hosts = layoutOf(2, 1);
  const size_t chunk = kStagingChunkBytes;
  CHECK_FALSE(offers(pathsOf(deviceCall(CollType::kAllReduce, 2 * chunk - 4), hosts),
                     DevicePath::kStagedChunked));
  CHECK(pathsOf(deviceCall(CollType::kAllReduce, 2 * chunk), hosts).front() ==
        DevicePath::kStagedChunked);
  CHECK(pathsOf(deviceCall(CollType::kBroadcast, 64 * chunk), hosts).front() ==
        DevicePath::kStagedChunked);
  CHECK_FALSE(offers(pathsOf(deviceCall(CollType::kAllGather, 64 * chunk, false), hosts),
                     DevicePath::kStagedChunked));
  CHECK(pathsOf(deviceCall(CollType::kAllReduce, 4096), hosts).front() == DevicePath::kStaged);
}

TEST_CASE("the GPU link's costs, not a rule, put direct ahead of staging", "[tune][device]") {
  Layout host = layoutOf(1, 2);
  const DeviceCall call = deviceCall(CollType::kAllReduce, 64 << 20);
  CHECK(pathsOf(call, host).front() == DevicePath::kDirect);
  // A GPU whose memory were slower than the copies and the host algorithm together.
  REQUIRE(parseLink("1MB/s,15us", &host.params.gpu).isOk());
  CHECK(pathsOf(call, host).front() != DevicePath::kDirect);
  CHECK(offers(pathsOf(call, host), DevicePath::kDirect));
}

}  // namespace weft::tune
