// Devices and contexts: the device list from WEFT_FAKE_VERBS_DEVICES, opening and closing, and
// the device, port and GID queries, with the port described by WEFT_FAKE_VERBS_PORT_STATE and
// WEFT_FAKE_VERBS_GIDS as they were when the context was opened.
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "fake_verbs_internal.h"

namespace weft::fake_verbs {
namespace {

// Locally administered (not any vendor's OUI), so nothing mistakes the fake for real hardware.
constexpr uint64_t kGuidBase = 0x02face0000000000;

std::string_view trimmed(std::string_view text) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  return text;
}

std::vector<std::string> deviceNamesFromEnvironment() {
  const char* value = std::getenv("WEFT_FAKE_VERBS_DEVICES");
  if (!value) return {"fake0"};
  std::vector<std::string> names;
  std::string_view rest(value);
  while (!rest.empty()) {
    size_t end = rest.find(',');
    std::string_view name = trimmed(rest.substr(0, end));
    if (!name.empty()) names.emplace_back(name);
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
  }
  return names;
}

void putBigEndian64(uint8_t* out, uint64_t value) {
  for (int i = 7; i >= 0; --i) {
    out[i] = static_cast<uint8_t>(value);
    value >>= 8;
  }
}

GidSlot linkLocalGid(uint64_t interfaceId, ibv_gid_type type) {
  GidSlot slot;
  slot.gid.raw[0] = 0xfe;
  slot.gid.raw[1] = 0x80;
  putBigEndian64(&slot.gid.raw[8], interfaceId);
  slot.type = type;
  slot.valid = true;
  return slot;
}

GidSlot ipv4MappedLoopbackGid() {
  GidSlot slot;
  slot.gid.raw[10] = 0xff;
  slot.gid.raw[11] = 0xff;
  slot.gid.raw[12] = 127;
  slot.gid.raw[15] = 1;
  slot.type = IBV_GID_TYPE_ROCE_V2;
  slot.valid = true;
  return slot;
}

PortConfig portFromEnvironment(int deviceIndex) {
  PortConfig port;
  if (const char* state = std::getenv("WEFT_FAKE_VERBS_PORT_STATE")) {
    std::string_view value(state);
    if (value == "down") {
      port.state = IBV_PORT_DOWN;
    } else if (value == "init") {
      port.state = IBV_PORT_INIT;
    } else if (!value.empty() && value != "active") {
      complain("ibv_open_device", "WEFT_FAKE_VERBS_PORT_STATE is not active, init or down");
    }
  }
  std::string_view gids = "roce2";
  if (const char* value = std::getenv("WEFT_FAKE_VERBS_GIDS")) gids = value;
  const uint64_t deviceNumber = static_cast<uint64_t>(deviceIndex) + 1;
  if (gids == "ib") {
    port.linkLayer = IBV_LINK_LAYER_INFINIBAND;
    port.lid = static_cast<uint16_t>(deviceNumber);
    port.pkeyTableLength = 128;
    port.gids[0] = linkLocalGid(kGuidBase | deviceNumber, IBV_GID_TYPE_IB);
  } else if (gids != "none") {
    if (gids != "roce2")
      complain("ibv_open_device", "WEFT_FAKE_VERBS_GIDS is not roce2, ib or none");
    // The EUI-64 of a made-up MAC 02:00:00:00:00:NN, as the kernel derives it for a netdev.
    port.gids[0] = linkLocalGid(0x000000fffe000000 | deviceNumber, IBV_GID_TYPE_ROCE_V1);
    port.gids[1] = ipv4MappedLoopbackGid();
  }
  return port;
}

std::optional<Clock::duration> delayFromEnvironment() {
  const char* value = std::getenv("WEFT_FAKE_VERBS_DELAY_US");
  if (!value || !*value) return std::nullopt;
  uint64_t micros = 0;
  auto [end, error] = std::from_chars(value, value + std::strlen(value), micros);
  if (error != std::errc() || *end != '\0') {
    complain("ibv_open_device", "WEFT_FAKE_VERBS_DELAY_US is not a number of microseconds");
    return std::nullopt;
  }
  return std::chrono::microseconds(micros);
}

void releaseDeviceLocked(State& s, Device* device) {
  if (--device->references == 0) s.devices.remove(device);
}

}  // namespace

extern "C" {

WEFT_FAKE_VERBS_EXPORT struct ibv_device** ibv_get_device_list(int* num_devices) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  std::vector<std::string> names = deviceNamesFromEnvironment();
  if (num_devices) *num_devices = 0;
  if (names.empty()) {
    // What the real library says on a kernel without RDMA support.
    errno = ENOSYS;
    return nullptr;
  }
  auto* list = new ibv_device*[names.size() + 1];
  std::vector<Device*> devices;
  for (size_t i = 0; i < names.size(); ++i) {
    auto device = std::make_unique<Device>();
    ibv_device& pub = device->pub;
    pub.node_type = IBV_NODE_CA;
    pub.transport_type = IBV_TRANSPORT_IB;  // RoCE devices report IB transport too
    std::snprintf(pub.name, sizeof(pub.name), "%s", names[i].c_str());
    std::snprintf(pub.dev_name, sizeof(pub.dev_name), "uverbs%zu", i);
    std::snprintf(pub.dev_path, sizeof(pub.dev_path), "/sys/class/infiniband_verbs/uverbs%zu", i);
    std::snprintf(pub.ibdev_path, sizeof(pub.ibdev_path), "/sys/class/infiniband/%s",
                  names[i].c_str());
    device->index = static_cast<int>(i);
    device->references = 1;
    list[i] = &pub;
    devices.push_back(s.devices.add(std::move(device)));
  }
  list[names.size()] = nullptr;
  s.deviceLists.emplace(list, std::move(devices));
  if (num_devices) *num_devices = static_cast<int>(names.size());
  return list;
}

WEFT_FAKE_VERBS_EXPORT void ibv_free_device_list(struct ibv_device** list) {
  if (!list) return;
  State& s = state();
  std::lock_guard lock(s.mutex);
  auto it = s.deviceLists.find(list);
  if (it == s.deviceLists.end()) {
    complain("ibv_free_device_list", "not a list from ibv_get_device_list, or freed already");
    return;
  }
  // Devices that an open context uses stay valid after the list goes, as in the real library.
  for (Device* device : it->second) releaseDeviceLocked(s, device);
  s.deviceLists.erase(it);
  delete[] list;
}

WEFT_FAKE_VERBS_EXPORT const char* ibv_get_device_name(struct ibv_device* device) {
  return device ? device->name : nullptr;
}

WEFT_FAKE_VERBS_EXPORT struct ibv_context* ibv_open_device(struct ibv_device* device) {
  if (!device) {
    errno = EINVAL;
    return nullptr;
  }
  touch(device);
  State& s = state();
  std::lock_guard lock(s.mutex);
  Device* fakeDevice = s.devices.find(device);
  if (!fakeDevice) {
    complain("ibv_open_device", "unknown device, or its list was freed");
    errno = ENODEV;
    return nullptr;
  }
  int asyncFd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (asyncFd < 0) return nullptr;
  readEnvironmentFaultsLocked(s);
  s.environmentDelay = delayFromEnvironment();

  auto context = std::make_unique<Context>();
  ibv_context& pub = context->pub;
  pub.device = device;
  pub.ops.post_send = postSend;
  pub.ops.post_recv = postRecv;
  pub.ops.poll_cq = pollCq;
  pub.ops.req_notify_cq = reqNotifyCq;
  pub.cmd_fd = -1;
  pub.async_fd = asyncFd;  // never readable: the fake raises no async events
  pub.num_comp_vectors = kCompVectors;
  pthread_mutex_init(&pub.mutex, nullptr);
  // Anything but __VERBS_ABI_IS_EXTENDED: verbs_get_ctx() then returns NULL and the inline
  // helpers take the plain-context path, never reading before the struct.
  pub.abi_compat = nullptr;
  context->device = fakeDevice;
  ++fakeDevice->references;
  context->port = portFromEnvironment(fakeDevice->index);
  context->openIndex = s.faults.contextsOpened++;
  context->openEpoch = s.resets;
  context->dead = consumeFault(&s.faults.killedContexts, context->openIndex);
  Context* added = s.contexts.add(std::move(context));
  if (s.openContexts++ == 0) startWorkerLocked(s);
  return &added->pub;
}

WEFT_FAKE_VERBS_EXPORT int ibv_close_device(struct ibv_context* context) {
  State& s = state();
  std::thread worker;
  {
    std::lock_guard lock(s.mutex);
    Context* fake = findContext(s, context, "ibv_close_device");
    if (!fake) {
      errno = EINVAL;
      return -1;
    }
    if (fake->children > 0) {
      std::string message = std::to_string(fake->children) +
                            " PDs, CQs or completion channels are still allocated on it";
      complain("ibv_close_device", message.c_str());
      errno = EBUSY;
      return -1;
    }
    close(fake->pub.async_fd);
    pthread_mutex_destroy(&fake->pub.mutex);
    releaseDeviceLocked(s, fake->device);
    s.contexts.remove(fake);
    --s.openContexts;
    worker = stopWorkerIfIdleLocked(s);
  }
  if (worker.joinable()) worker.join();
  return 0;
}

WEFT_FAKE_VERBS_EXPORT int ibv_query_device(struct ibv_context* context,
                                            struct ibv_device_attr* device_attr) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  Context* fake = findContext(s, context, "ibv_query_device");
  if (!fake || !device_attr) return EINVAL;
  ibv_device_attr attr{};
  std::snprintf(attr.fw_ver, sizeof(attr.fw_ver), "1.0.0 (weft fake verbs)");
  putBigEndian64(reinterpret_cast<uint8_t*>(&attr.node_guid),
                 kGuidBase | static_cast<uint64_t>(fake->device->index + 1));
  attr.sys_image_guid = attr.node_guid;
  attr.max_mr_size = uint64_t{1} << 40;
  attr.page_size_cap = 0xfffff000;
  attr.hw_ver = 1;
  attr.max_qp = 1 << 17;
  attr.max_qp_wr = static_cast<int>(kMaxQpWr);
  attr.device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN | IBV_DEVICE_PORT_ACTIVE_EVENT |
                          IBV_DEVICE_SYS_IMAGE_GUID | IBV_DEVICE_CHANGE_PHY_PORT;
  attr.max_sge = static_cast<int>(kMaxSge);
  attr.max_sge_rd = static_cast<int>(kMaxSge);
  attr.max_cq = 1 << 16;
  attr.max_cqe = kMaxCqe;
  attr.max_mr = 1 << 20;
  attr.max_pd = 1 << 16;
  attr.max_qp_rd_atom = kMaxRdAtomic;
  attr.max_res_rd_atom = kMaxRdAtomic * (1 << 17);
  attr.max_qp_init_rd_atom = kMaxRdAtomic;
  attr.atomic_cap = IBV_ATOMIC_NONE;  // no atomics in the fake
  attr.max_pkeys = fake->port.pkeyTableLength;
  attr.local_ca_ack_delay = 16;
  attr.phys_port_cnt = 1;
  *device_attr = attr;
  return 0;
}

// verbs.h turns ibv_query_port into a macro for callers; the exported symbol takes the compat
// struct, through which callers pass a full struct ibv_port_attr.
WEFT_FAKE_VERBS_EXPORT int(ibv_query_port)(struct ibv_context* context, uint8_t port_num,
                                           struct _compat_ibv_port_attr* port_attr) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  Context* fake = findContext(s, context, "ibv_query_port");
  if (!fake || !port_attr || port_num != kPortNumber) return EINVAL;
  const PortConfig& port = fake->port;
  ibv_port_attr attr{};
  attr.state = port.state;
  attr.max_mtu = IBV_MTU_4096;
  attr.active_mtu = IBV_MTU_1024;
  attr.gid_tbl_len = kGidTableLength;
  attr.max_msg_sz = 1u << 31;
  attr.pkey_tbl_len = port.pkeyTableLength;
  attr.lid = port.lid;
  attr.active_width = 2;                                  // 4x
  attr.active_speed = 32;                                 // EDR
  attr.phys_state = port.state == IBV_PORT_DOWN ? 3 : 5;  // disabled : link up
  attr.link_layer = port.linkLayer;
  if (port.linkLayer == IBV_LINK_LAYER_INFINIBAND) {
    attr.sm_lid = 1;
    attr.max_vl_num = 4;
    attr.subnet_timeout = 18;
  } else {
    attr.port_cap_flags = IBV_PORT_IP_BASED_GIDS | IBV_PORT_CM_SUP;
    attr.max_vl_num = 1;
  }
  *reinterpret_cast<ibv_port_attr*>(port_attr) = attr;
  return 0;
}

WEFT_FAKE_VERBS_EXPORT int ibv_query_gid(struct ibv_context* context, uint8_t port_num, int index,
                                         union ibv_gid* gid) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  Context* fake = findContext(s, context, "ibv_query_gid");
  if (!fake || !gid || port_num != kPortNumber || index < 0 || index >= kGidTableLength) {
    errno = EINVAL;
    return -1;
  }
  *gid = fake->port.gids[index].gid;  // an empty entry reads as all zeros
  return 0;
}

WEFT_FAKE_VERBS_EXPORT int _ibv_query_gid_ex(struct ibv_context* context, uint32_t port_num,
                                             uint32_t gid_index, struct ibv_gid_entry* entry,
                                             uint32_t flags, size_t entry_size) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  Context* fake = findContext(s, context, "ibv_query_gid_ex");
  if (!fake || !entry || flags != 0 || entry_size < sizeof(ibv_gid_entry) ||
      port_num != kPortNumber || gid_index >= static_cast<uint32_t>(kGidTableLength)) {
    return EINVAL;
  }
  const GidSlot& slot = fake->port.gids[gid_index];
  if (!slot.valid) return ENODATA;
  ibv_gid_entry result{};
  result.gid = slot.gid;
  result.gid_index = gid_index;
  result.port_num = port_num;
  result.gid_type = slot.type;
  result.ndev_ifindex = fake->port.linkLayer == IBV_LINK_LAYER_ETHERNET ? 1 : 0;  // lo
  *entry = result;
  return 0;
}

}  // extern "C"

}  // namespace weft::fake_verbs
