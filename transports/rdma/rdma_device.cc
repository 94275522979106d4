#include "transports/rdma/rdma_device.h"

#include <cerrno>
#include <cstring>
#include <vector>

#include "transports/rdma/rdma_wire.h"

namespace weft::rdma {
namespace {

const char* mtuName(uint8_t mtu) {
  static const char* const kNames[] = {"?", "256", "512", "1024", "2048", "4096"};
  return mtu <= 5 ? kNames[mtu] : "?";
}

GidKind kindOf(uint32_t gidType) {
  switch (gidType) {
    case IBV_GID_TYPE_IB:
      return GidKind::kInfiniBand;
    case IBV_GID_TYPE_ROCE_V1:
      return GidKind::kRoceV1;
    case IBV_GID_TYPE_ROCE_V2:
      return GidKind::kRoceV2;
    default:
      return GidKind::kUnknown;
  }
}

std::vector<GidCandidate> readGidTable(const IbvLibrary& lib, ibv_context* context, int port,
                                       int length) {
  std::vector<GidCandidate> table;
  for (int index = 0; index < length; ++index) {
    GidCandidate candidate;
    candidate.index = index;
    ibv_gid gid{};
    if (lib.queryGid(context, static_cast<uint8_t>(port), index, &gid) != 0) break;
    std::memcpy(candidate.gid.data(), gid.raw, 16);
    if (lib.queryGidEx != nullptr) {
      ibv_gid_entry entry{};
      if (lib.queryGidEx(context, static_cast<uint32_t>(port), static_cast<uint32_t>(index), &entry,
                         0, sizeof(entry)) == 0) {
        candidate.kind = kindOf(entry.gid_type);
      }
    }
    table.push_back(candidate);
  }
  return table;
}

// Tries one device: an ACTIVE port (the filter's, or the first) with a usable GID.
Status tryDevice(const IbvLibrary& lib, ibv_device* device, int wantedPort,
                 const DeviceOptions& options, std::unique_ptr<RdmaDevice>* out) {
  const std::string name = lib.getDeviceName(device);
  auto opened = std::make_unique<RdmaDevice>();
  opened->lib = &lib;
  opened->name = name;
  opened->context = lib.openDevice(device);
  if (opened->context == nullptr) return systemError(name + ": ibv_open_device", errno);
  if (lib.queryDevice(opened->context, &opened->attr) != 0) {
    return systemError(name + ": ibv_query_device", errno);
  }
  std::string why = name + ": no ACTIVE port";
  for (int port = 1; port <= opened->attr.phys_port_cnt; ++port) {
    if (wantedPort != 0 && port != wantedPort) continue;
    ibv_port_attr attr{};
    if (lib.queryPort(opened->context, static_cast<uint8_t>(port),
                      reinterpret_cast<_compat_ibv_port_attr*>(&attr)) != 0 ||
        attr.state != IBV_PORT_ACTIVE) {
      continue;
    }
    const bool ethernet = attr.link_layer == IBV_LINK_LAYER_ETHERNET;
    GidCandidate gid;
    Status chosen = chooseGid(readGidTable(lib, opened->context, port, attr.gid_tbl_len),
                              options.gidIndex, ethernet, &gid);
    if (!chosen.isOk()) {
      why = name + " port " + std::to_string(port) + ": " + chosen.message();
      continue;
    }
    opened->port = port;
    opened->gid = gid;
    opened->lid = attr.lid;
    opened->activeMtu = static_cast<uint8_t>(attr.active_mtu);
    opened->ethernet = ethernet;
    *out = std::move(opened);
    return Status::ok();
  }
  return invalidUsage(why);
}

}  // namespace

RdmaDevice::~RdmaDevice() {
  if (context != nullptr) lib->closeDevice(context);
}

std::string RdmaDevice::describe() const {
  static const char* const kKinds[] = {"", " (IB)", " (RoCE v1)", " (RoCE v2)"};
  return name + " port " + std::to_string(port) + ", GID " + std::to_string(gid.index) + " " +
         describeGid(gid.gid) + kKinds[static_cast<int>(gid.kind)] + ", MTU " + mtuName(activeMtu);
}

Status openRdmaDevice(const DeviceOptions& options, std::unique_ptr<RdmaDevice>* out) {
  const IbvLibrary* lib = nullptr;
  WEFT_TRY(loadIbvLibrary(&lib));
  int count = 0;
  errno = 0;
  ibv_device** list = lib->getDeviceList(&count);
  if (list == nullptr) return systemError("ibv_get_device_list", errno ? errno : ENODEV);
  std::string reasons;
  std::string seen;
  Status result = invalidUsage("no RDMA device");
  for (int i = 0; i < count; ++i) {
    const std::string name = lib->getDeviceName(list[i]);
    seen += (seen.empty() ? "" : ", ") + name;
    int port = 0;
    if (!hcaAdmits(options.hcaFilter, name, &port)) continue;
    result = tryDevice(*lib, list[i], port, options, out);
    if (result.isOk()) break;
    reasons += (reasons.empty() ? "" : "; ") + result.message();
  }
  lib->freeDeviceList(list);
  if (result.isOk()) return result;
  if (count > 0 && reasons.empty()) {
    return invalidUsage("WEFT_IB_HCA='" + options.hcaFilter + "' admits none of " + seen);
  }
  return reasons.empty() ? result : invalidUsage(reasons);
}

}  // namespace weft::rdma
