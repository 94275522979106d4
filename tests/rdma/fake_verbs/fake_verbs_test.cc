// The fake libibverbs, loaded by path: exported entry points, devices, ports and GIDs, and the
// object lifecycle rules (what may be freed when, and that everything really is freed).
#include <catch2/catch.hpp>

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "fake_verbs_test_support.h"

namespace weft::fake_verbs::test {
namespace {

using weft::test::ScopedEnv;

bool isZero(const ibv_gid& gid) {
  static const ibv_gid zero{};
  return std::memcmp(gid.raw, zero.raw, sizeof(gid.raw)) == 0;
}

struct OpenedDevice {
  OpenedDevice() {
    ibv_device** list = verbs().getDeviceList(nullptr);
    if (list) {
      context = verbs().openDevice(list[0]);
      verbs().freeDeviceList(list);
    }
  }
  ~OpenedDevice() {
    if (context) verbs().closeDevice(context);
  }
  ibv_context* context = nullptr;
};

}  // namespace

TEST_CASE_METHOD(FakeVerbsTest, "every verbs entry point and control function resolves", "[rdma]") {
  const char* names[] = {
      "ibv_get_device_list", "ibv_free_device_list",    "ibv_get_device_name",
      "ibv_open_device",     "ibv_close_device",        "ibv_query_device",
      "ibv_query_port",      "ibv_query_gid",           "_ibv_query_gid_ex",
      "ibv_alloc_pd",        "ibv_dealloc_pd",          "ibv_reg_mr",
      "ibv_dereg_mr",        "ibv_create_comp_channel", "ibv_destroy_comp_channel",
      "ibv_create_cq",       "ibv_destroy_cq",          "ibv_get_cq_event",
      "ibv_ack_cq_events",   "ibv_create_qp",           "ibv_modify_qp",
      "ibv_query_qp",        "ibv_destroy_qp",          "ibv_wc_status_str",
      "ibv_fork_init",       "weft_fake_verbs_control", "weft_fake_verbs_live_objects"};
  for (const char* name : names) {
    INFO(name);
    CHECK(dlsym(libraryHandle(), name) != nullptr);
  }
  // Internals stay hidden.
  CHECK(dlsym(libraryHandle(), "_ZN4weft10fake_verbs5stateEv") == nullptr);
  CHECK(std::string(verbs().wcStatusStr(IBV_WC_SUCCESS)) == "success");
  CHECK(std::string(verbs().wcStatusStr(IBV_WC_RETRY_EXC_ERR)).find("retry") != std::string::npos);
  CHECK(verbs().forkInit() == 0);
}

TEST_CASE_METHOD(FakeVerbsTest, "the device list comes from WEFT_FAKE_VERBS_DEVICES", "[rdma]") {
  const Verbs& v = verbs();
  SECTION("one fake0 by default") {
    int count = -1;
    ibv_device** list = v.getDeviceList(&count);
    REQUIRE(list != nullptr);
    CHECK(count == 1);
    CHECK(std::string(v.getDeviceName(list[0])) == "fake0");
    CHECK(list[0]->node_type == IBV_NODE_CA);
    CHECK(std::string(list[0]->dev_name) == "uverbs0");
    CHECK(list[1] == nullptr);
    CHECK(v.liveObjects() == 1);
    v.freeDeviceList(list);
  }
  SECTION("named devices") {
    ScopedEnv devices("WEFT_FAKE_VERBS_DEVICES", "mlx5_0, mlx5_1,,roce7");
    int count = 0;
    ibv_device** list = v.getDeviceList(&count);
    REQUIRE(list != nullptr);
    REQUIRE(count == 3);
    CHECK(std::string(v.getDeviceName(list[0])) == "mlx5_0");
    CHECK(std::string(v.getDeviceName(list[1])) == "mlx5_1");
    CHECK(std::string(v.getDeviceName(list[2])) == "roce7");
    CHECK(list[3] == nullptr);
    v.freeDeviceList(list);
  }
  SECTION("an empty list is what a kernel without RDMA says: NULL and ENOSYS") {
    ScopedEnv devices("WEFT_FAKE_VERBS_DEVICES", "");
    int count = -1;
    errno = 0;
    CHECK(v.getDeviceList(&count) == nullptr);
    CHECK(errno == ENOSYS);
    CHECK(count == 0);
  }
  CHECK(v.liveObjects() == 0);
}

TEST_CASE_METHOD(FakeVerbsTest, "an open context keeps its device after the list is freed",
                 "[rdma]") {
  const Verbs& v = verbs();
  ibv_device** list = v.getDeviceList(nullptr);
  REQUIRE(list != nullptr);
  ibv_device* device = list[0];
  ibv_context* context = v.openDevice(device);
  REQUIRE(context != nullptr);
  v.freeDeviceList(list);
  CHECK(context->device == device);
  CHECK(std::string(v.getDeviceName(context->device)) == "fake0");
  CHECK(v.liveObjects() == 1);
  CHECK(v.closeDevice(context) == 0);
  CHECK(v.liveObjects() == 0);
}

TEST_CASE_METHOD(FakeVerbsTest, "the context takes verbs.h's plain-context paths", "[rdma]") {
  OpenedDevice device;
  REQUIRE(device.context != nullptr);
  ibv_context* context = device.context;
  // Not extended: the inline helpers never look before the struct.
  CHECK(context->abi_compat != __VERBS_ABI_IS_EXTENDED);
  CHECK(verbs_get_ctx(context) == nullptr);
  ibv_values_ex values{};
  CHECK(ibv_query_rt_values_ex(context, &values) == EOPNOTSUPP);
  CHECK(context->ops.post_send != nullptr);
  CHECK(context->ops.post_recv != nullptr);
  CHECK(context->ops.poll_cq != nullptr);
  CHECK(context->ops.req_notify_cq != nullptr);
  CHECK(context->num_comp_vectors > 0);
}

TEST_CASE_METHOD(FakeVerbsTest, "device attributes carry the advertised limits", "[rdma]") {
  OpenedDevice device;
  REQUIRE(device.context != nullptr);
  ibv_device_attr attr{};
  REQUIRE(verbs().queryDevice(device.context, &attr) == 0);
  CHECK(attr.max_qp_wr == 4096);
  CHECK(attr.max_cqe == 65535);
  CHECK(attr.max_sge == 4);
  CHECK(attr.max_qp_rd_atom == 16);
  CHECK(attr.max_qp_init_rd_atom == 16);
  CHECK(attr.phys_port_cnt == 1);
  CHECK(attr.node_guid != 0);
}

TEST_CASE_METHOD(FakeVerbsTest, "port 1 is active RoCE at MTU 1024, or down on request", "[rdma]") {
  ibv_port_attr attr{};
  SECTION("active") {
    OpenedDevice device;
    REQUIRE(verbs().queryPort(device.context, 1, &attr) == 0);
    CHECK(attr.state == IBV_PORT_ACTIVE);
    CHECK(attr.link_layer == IBV_LINK_LAYER_ETHERNET);
    CHECK(attr.active_mtu == IBV_MTU_1024);
    CHECK(attr.max_mtu == IBV_MTU_4096);
    CHECK(attr.lid == 0);
    CHECK(attr.gid_tbl_len >= 2);
    CHECK(verbs().queryPort(device.context, 2, &attr) == EINVAL);
  }
  SECTION("down") {
    ScopedEnv down("WEFT_FAKE_VERBS_PORT_STATE", "down");
    OpenedDevice device;
    REQUIRE(verbs().queryPort(device.context, 1, &attr) == 0);
    CHECK(attr.state == IBV_PORT_DOWN);
  }
}

TEST_CASE_METHOD(FakeVerbsTest, "GID tables: roce2, none and ib", "[rdma]") {
  const Verbs& v = verbs();
  ibv_gid gid{};
  ibv_gid_entry entry{};
  SECTION("roce2: a link-local RoCE v1 GID, then an IPv4-mapped RoCE v2 one") {
    OpenedDevice device;
    REQUIRE(v.queryGid(device.context, 1, 0, &gid) == 0);
    CHECK(gid.raw[0] == 0xfe);
    CHECK(gid.raw[1] == 0x80);
    REQUIRE(v.queryGidEx(device.context, 1, 0, &entry, 0, sizeof(entry)) == 0);
    CHECK(entry.gid_type == IBV_GID_TYPE_ROCE_V1);
    REQUIRE(v.queryGidEx(device.context, 1, 1, &entry, 0, sizeof(entry)) == 0);
    CHECK(entry.gid_type == IBV_GID_TYPE_ROCE_V2);
    CHECK(entry.gid_index == 1);
    const uint8_t mapped[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1};
    CHECK(std::memcmp(entry.gid.raw, mapped, 16) == 0);
    // Beyond the populated entries: zeros from the old call, ENODATA from the new one.
    REQUIRE(v.queryGid(device.context, 1, 2, &gid) == 0);
    CHECK(isZero(gid));
    CHECK(v.queryGidEx(device.context, 1, 2, &entry, 0, sizeof(entry)) == ENODATA);
    CHECK(v.queryGid(device.context, 1, 99, &gid) == -1);
    CHECK(v.queryGidEx(device.context, 2, 0, &entry, 0, sizeof(entry)) == EINVAL);
  }
  SECTION("none: every entry empty") {
    ScopedEnv gids("WEFT_FAKE_VERBS_GIDS", "none");
    OpenedDevice device;
    for (int index = 0; index < 2; ++index) {
      REQUIRE(v.queryGid(device.context, 1, index, &gid) == 0);
      CHECK(isZero(gid));
      CHECK(v.queryGidEx(device.context, 1, index, &entry, 0, sizeof(entry)) == ENODATA);
    }
  }
  SECTION("ib: InfiniBand link layer, a LID, an IB GID") {
    ScopedEnv gids("WEFT_FAKE_VERBS_GIDS", "ib");
    OpenedDevice device;
    ibv_port_attr port{};
    REQUIRE(v.queryPort(device.context, 1, &port) == 0);
    CHECK(port.link_layer == IBV_LINK_LAYER_INFINIBAND);
    CHECK(port.lid != 0);
    REQUIRE(v.queryGidEx(device.context, 1, 0, &entry, 0, sizeof(entry)) == 0);
    CHECK(entry.gid_type == IBV_GID_TYPE_IB);
    CHECK(entry.gid.raw[0] == 0xfe);
  }
}

TEST_CASE_METHOD(FakeVerbsTest, "memory registration checks access flags and hands out keys",
                 "[rdma]") {
  const Verbs& v = verbs();
  OpenedDevice device;
  ibv_pd* pd = v.allocPd(device.context);
  REQUIRE(pd != nullptr);
  std::vector<unsigned char> memory(4096);
  errno = 0;
  CHECK(v.regMr(pd, memory.data(), memory.size(), IBV_ACCESS_REMOTE_WRITE) == nullptr);
  CHECK(errno == EINVAL);
  errno = 0;
  CHECK(v.regMr(pd, memory.data(), memory.size(), IBV_ACCESS_REMOTE_ATOMIC) == nullptr);
  CHECK(errno == EINVAL);
  CHECK(v.regMr(pd, memory.data(), 0, IBV_ACCESS_LOCAL_WRITE) == nullptr);

  ibv_mr* first =
      v.regMr(pd, memory.data(), memory.size(), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  ibv_mr* second = v.regMr(pd, memory.data() + 64, 64, IBV_ACCESS_REMOTE_READ);
  REQUIRE(first != nullptr);
  REQUIRE(second != nullptr);
  CHECK(first->addr == memory.data());
  CHECK(first->length == memory.size());
  CHECK(first->pd == pd);
  CHECK(first->context == device.context);
  CHECK(first->lkey != second->lkey);
  CHECK(first->rkey != second->rkey);
  CHECK(first->lkey != first->rkey);  // so that mixing them up fails

  CHECK(v.deallocPd(pd) == EBUSY);  // MRs still registered
  CHECK(v.deregMr(first) == 0);
  CHECK(v.deregMr(second) == 0);
  CHECK(v.deallocPd(pd) == 0);
}

TEST_CASE_METHOD(FakeVerbsTest, "objects cannot be freed while others depend on them", "[rdma]") {
  const Verbs& v = verbs();
  OpenedDevice device;
  ibv_context* context = device.context;
  REQUIRE(context != nullptr);
  ibv_comp_channel* channel = v.createCompChannel(context);
  REQUIRE(channel != nullptr);
  CHECK(channel->context == context);
  CHECK(channel->fd >= 0);
  int marker = 0;
  ibv_cq* cq = v.createCq(context, 8, &marker, channel, 0);
  REQUIRE(cq != nullptr);
  CHECK(cq->context == context);
  CHECK(cq->channel == channel);
  CHECK(cq->cq_context == &marker);
  CHECK(cq->cqe >= 8);
  ibv_pd* pd = v.allocPd(context);
  REQUIRE(pd != nullptr);
  ibv_qp_init_attr init{};
  init.send_cq = cq;
  init.recv_cq = cq;
  init.cap = {8, 8, 1, 1, 0};
  init.qp_type = IBV_QPT_RC;
  ibv_qp* qp = v.createQp(pd, &init);
  REQUIRE(qp != nullptr);
  CHECK(qp->context == context);
  CHECK(qp->pd == pd);
  CHECK(qp->send_cq == cq);
  CHECK(qp->recv_cq == cq);
  CHECK(qp->qp_num != 0);
  CHECK(qp->state == IBV_QPS_RESET);
  CHECK(v.liveObjects() == 5);  // context, channel, CQ, PD, QP

  CHECK(v.destroyCq(cq) == EBUSY);                // a QP uses it
  CHECK(v.deallocPd(pd) == EBUSY);                // a QP lives in it
  CHECK(v.destroyCompChannel(channel) == EBUSY);  // a CQ reports to it
  errno = 0;
  CHECK(v.closeDevice(context) == -1);  // its children are still there
  CHECK(errno == EBUSY);
  CHECK(v.destroyQp(qp) == 0);
  CHECK(v.deallocPd(pd) == 0);
  CHECK(v.destroyCq(cq) == 0);
  CHECK(v.destroyCompChannel(channel) == 0);
  CHECK(v.liveObjects() == 1);
}

TEST_CASE_METHOD(FakeVerbsTest, "QP and CQ creation respect the device limits", "[rdma]") {
  const Verbs& v = verbs();
  OpenedDevice device;
  ibv_context* context = device.context;
  REQUIRE(context != nullptr);
  CHECK(v.createCq(context, 0, nullptr, nullptr, 0) == nullptr);
  CHECK(v.createCq(context, 65536, nullptr, nullptr, 0) == nullptr);
  CHECK(v.createCq(context, 4, nullptr, nullptr, context->num_comp_vectors) == nullptr);
  ibv_cq* cq = v.createCq(context, 16, nullptr, nullptr, 0);
  ibv_pd* pd = v.allocPd(context);
  REQUIRE(cq != nullptr);
  REQUIRE(pd != nullptr);
  ibv_qp_init_attr init{};
  init.send_cq = cq;
  init.recv_cq = cq;
  init.cap = {16, 16, 1, 1, 0};
  init.qp_type = IBV_QPT_UD;
  errno = 0;
  CHECK(v.createQp(pd, &init) == nullptr);
  CHECK(errno == EOPNOTSUPP);
  init.qp_type = IBV_QPT_RC;
  init.cap.max_send_wr = 4097;
  CHECK(v.createQp(pd, &init) == nullptr);
  init.cap.max_send_wr = 16;
  init.cap.max_send_sge = 5;
  CHECK(v.createQp(pd, &init) == nullptr);
  init.cap.max_send_sge = 1;
  init.send_cq = nullptr;
  CHECK(v.createQp(pd, &init) == nullptr);
  CHECK(v.liveObjects() == 3);
  CHECK(v.deallocPd(pd) == 0);
  CHECK(v.destroyCq(cq) == 0);
}

TEST_CASE_METHOD(FakeVerbsTest, "objects the fake never handed out are refused", "[rdma]") {
  const Verbs& v = verbs();
  ibv_pd strayPd{};
  ibv_mr strayMr{};
  ibv_cq strayCq{};
  CHECK(v.deallocPd(&strayPd) == EINVAL);
  CHECK(v.deregMr(&strayMr) == EINVAL);
  CHECK(v.destroyCq(&strayCq) == EINVAL);
  ibv_device* strayList[] = {nullptr};
  v.freeDeviceList(strayList);  // complains, frees nothing
  CHECK(v.liveObjects() == 0);
}

#if defined(__SANITIZE_ADDRESS__)
// Freed means freed: a use after ibv_free_device_list or ibv_dereg_mr is a heap use-after-free
// that ASan reports. Each use runs in a child, which ASan must kill.
TEST_CASE_METHOD(FakeVerbsTest, "ASan sees uses of a freed device list and a freed MR", "[rdma]") {
  auto diesInChild = [](auto use) {
    const pid_t child = fork();
    if (child == 0) {
      const int devNull = open("/dev/null", O_WRONLY);
      dup2(devNull, STDERR_FILENO);
      use();
      _exit(0);
    }
    int status = 0;
    waitpid(child, &status, 0);
    return !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  };
  CHECK(diesInChild([] {
    ibv_device** list = verbs().getDeviceList(nullptr);
    verbs().freeDeviceList(list);
    ibv_device* volatile first = list[0];  // the array itself, not the device it names
    (void)first;
  }));
  CHECK(diesInChild([] {
    OpenedDevice device;
    ibv_pd* pd = verbs().allocPd(device.context);
    static unsigned char memory[64];
    ibv_mr* mr = verbs().regMr(pd, memory, sizeof(memory), IBV_ACCESS_LOCAL_WRITE);
    verbs().deregMr(mr);
    volatile uint32_t lkey = mr->lkey;
    (void)lkey;
  }));
}
#endif

}  // namespace weft::fake_verbs::test
