#include "fake_verbs_test_support.h"

#include <arpa/inet.h>
#include <dlfcn.h>

#include <stdexcept>
#include <string>
#include <thread>

namespace weft::fake_verbs::test {
namespace {

template <typename Function>
void resolve(void* handle, const char* name, Function* out) {
  void* symbol = dlsym(handle, name);
  if (!symbol) throw std::runtime_error(std::string("dlsym ") + name + ": " + dlerror());
  *out = reinterpret_cast<Function>(symbol);
}

Verbs load(void* handle) {
  Verbs v{};
  resolve(handle, "ibv_get_device_list", &v.getDeviceList);
  resolve(handle, "ibv_free_device_list", &v.freeDeviceList);
  resolve(handle, "ibv_get_device_name", &v.getDeviceName);
  resolve(handle, "ibv_open_device", &v.openDevice);
  resolve(handle, "ibv_close_device", &v.closeDevice);
  resolve(handle, "ibv_query_device", &v.queryDevice);
  resolve(handle, "ibv_query_port", &v.queryPortCompat);
  resolve(handle, "ibv_query_gid", &v.queryGid);
  resolve(handle, "_ibv_query_gid_ex", &v.queryGidEx);
  resolve(handle, "ibv_alloc_pd", &v.allocPd);
  resolve(handle, "ibv_dealloc_pd", &v.deallocPd);
  resolve(handle, "ibv_reg_mr", &v.regMr);
  resolve(handle, "ibv_dereg_mr", &v.deregMr);
  resolve(handle, "ibv_create_comp_channel", &v.createCompChannel);
  resolve(handle, "ibv_destroy_comp_channel", &v.destroyCompChannel);
  resolve(handle, "ibv_create_cq", &v.createCq);
  resolve(handle, "ibv_destroy_cq", &v.destroyCq);
  resolve(handle, "ibv_get_cq_event", &v.getCqEvent);
  resolve(handle, "ibv_ack_cq_events", &v.ackCqEvents);
  resolve(handle, "ibv_create_qp", &v.createQp);
  resolve(handle, "ibv_modify_qp", &v.modifyQp);
  resolve(handle, "ibv_query_qp", &v.queryQp);
  resolve(handle, "ibv_destroy_qp", &v.destroyQp);
  resolve(handle, "ibv_wc_status_str", &v.wcStatusStr);
  resolve(handle, "ibv_fork_init", &v.forkInit);
  resolve(handle, "weft_fake_verbs_control", &v.control);
  resolve(handle, "weft_fake_verbs_live_objects", &v.liveObjects);
  return v;
}

}  // namespace

void* libraryHandle() {
  static void* const handle = [] {
    void* opened = dlopen(WEFT_FAKE_VERBS_PATH, RTLD_NOW | RTLD_LOCAL);
    if (!opened) throw std::runtime_error(std::string("dlopen: ") + dlerror());
    return opened;
  }();
  return handle;
}

const Verbs& verbs() {
  static const Verbs loaded = load(libraryHandle());
  return loaded;
}

int Verbs::queryPort(ibv_context* context, uint8_t port, ibv_port_attr* attr) const {
  *attr = ibv_port_attr{};
  return queryPortCompat(context, port, reinterpret_cast<_compat_ibv_port_attr*>(attr));
}

FakeVerbsTest::FakeVerbsTest()
    : clean_({{"WEFT_FAKE_VERBS_DEVICES", nullptr},
              {"WEFT_FAKE_VERBS_PORT_STATE", nullptr},
              {"WEFT_FAKE_VERBS_GIDS", nullptr},
              {"WEFT_FAKE_VERBS_DELAY_US", nullptr},
              {"WEFT_FAKE_VERBS_FAULTS", nullptr}}) {
  verbs().control("reset");
}

FakeVerbsTest::~FakeVerbsTest() {
  verbs().control("reset");
}

Endpoint::Endpoint(const EndpointOptions& options) {
  const Verbs& v = verbs();
  int count = 0;
  ibv_device** list = v.getDeviceList(&count);
  if (!list || count <= options.deviceIndex) {
    if (list) v.freeDeviceList(list);
    error = "ibv_get_device_list";
    return;
  }
  context = v.openDevice(list[options.deviceIndex]);
  v.freeDeviceList(list);  // open contexts outlive the list
  if (!context) {
    error = "ibv_open_device";
    return;
  }
  if (options.withChannel && !(channel = v.createCompChannel(context))) {
    error = "ibv_create_comp_channel";
    return;
  }
  if (!(cq = v.createCq(context, options.cqe, this, channel, 0))) {
    error = "ibv_create_cq";
    return;
  }
  if (!(pd = v.allocPd(context))) {
    error = "ibv_alloc_pd";
    return;
  }
  ibv_qp_init_attr init{};
  init.send_cq = cq;
  init.recv_cq = cq;
  init.cap = {options.maxSendWr, options.maxRecvWr, options.maxSge, options.maxSge,
              options.maxInline};
  init.qp_type = IBV_QPT_RC;
  init.sq_sig_all = options.sqSigAll;
  if (!(qp = v.createQp(pd, &init))) {
    error = "ibv_create_qp";
    return;
  }
  buffer.resize(options.bufferBytes);
  if (!(mr = v.regMr(pd, buffer.data(), buffer.size(), options.bufferAccess))) {
    error = "ibv_reg_mr";
  }
}

Endpoint::~Endpoint() {
  const Verbs& v = verbs();
  if (qp) v.destroyQp(qp);
  if (mr) v.deregMr(mr);
  if (pd) v.deallocPd(pd);
  if (cq) v.destroyCq(cq);
  if (channel) v.destroyCompChannel(channel);
  if (context) v.closeDevice(context);
}

int moveToInit(Endpoint& endpoint, const PathOptions& path) {
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_INIT;
  attr.pkey_index = 0;
  attr.port_num = 1;
  attr.qp_access_flags = path.access;
  return verbs().modifyQp(endpoint.qp, &attr,
                          IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}

int moveToRtr(Endpoint& endpoint, uint32_t remoteQpn, const ibv_gid& remoteGid,
              const PathOptions& path) {
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_RTR;
  attr.path_mtu = path.mtu;
  attr.dest_qp_num = remoteQpn;
  attr.rq_psn = path.rqPsn;
  attr.max_dest_rd_atomic = 1;
  attr.min_rnr_timer = path.minRnrTimer;
  attr.ah_attr.is_global = 1;
  attr.ah_attr.grh.dgid = remoteGid;
  attr.ah_attr.grh.sgid_index = path.gidIndex;
  attr.ah_attr.grh.hop_limit = 1;
  attr.ah_attr.port_num = 1;
  return verbs().modifyQp(endpoint.qp, &attr,
                          IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                              IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
}

int moveToRts(Endpoint& endpoint, const PathOptions& path) {
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_RTS;
  attr.sq_psn = path.sqPsn;
  attr.timeout = path.timeout;
  attr.retry_cnt = path.retryCnt;
  attr.rnr_retry = path.rnrRetry;
  attr.max_rd_atomic = 1;
  return verbs().modifyQp(endpoint.qp, &attr,
                          IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                              IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
}

ibv_gid gidOf(Endpoint& endpoint, int index) {
  ibv_gid gid{};
  verbs().queryGid(endpoint.context, 1, index, &gid);
  return gid;
}

int connectPair(Endpoint& a, Endpoint& b, const PathOptions& pathA, const PathOptions& pathB) {
  for (auto [endpoint, path] : {std::pair{&a, &pathA}, std::pair{&b, &pathB}}) {
    if (int error = moveToInit(*endpoint, *path)) return error;
  }
  if (int error = moveToRtr(a, b.qp->qp_num, gidOf(b, pathA.gidIndex), pathA)) return error;
  if (int error = moveToRtr(b, a.qp->qp_num, gidOf(a, pathB.gidIndex), pathB)) return error;
  if (int error = moveToRts(a, pathA)) return error;
  return moveToRts(b, pathB);
}

int postWrite(Endpoint& from, uint64_t wrId, size_t offset, size_t length, uint64_t remoteAddr,
              uint32_t rkey, std::optional<uint32_t> imm, unsigned flags) {
  ibv_sge sge{from.address(offset), static_cast<uint32_t>(length), from.mr->lkey};
  ibv_send_wr wr{};
  wr.wr_id = wrId;
  wr.sg_list = length > 0 ? &sge : nullptr;
  wr.num_sge = length > 0 ? 1 : 0;
  wr.opcode = imm ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE;
  wr.send_flags = flags;
  if (imm) wr.imm_data = htonl(*imm);
  wr.wr.rdma.remote_addr = remoteAddr;
  wr.wr.rdma.rkey = rkey;
  ibv_send_wr* bad = nullptr;
  return ibv_post_send(from.qp, &wr, &bad);
}

int postEmptyRecv(Endpoint& endpoint, uint64_t wrId) {
  ibv_recv_wr wr{};
  wr.wr_id = wrId;
  ibv_recv_wr* bad = nullptr;
  return ibv_post_recv(endpoint.qp, &wr, &bad);
}

std::vector<ibv_wc> pollFor(ibv_cq* cq, size_t count, std::chrono::milliseconds timeout) {
  std::vector<ibv_wc> arrived;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (arrived.size() < count) {
    ibv_wc batch[16];
    const int polled = ibv_poll_cq(cq, 16, batch);
    if (polled < 0) break;
    arrived.insert(arrived.end(), batch, batch + polled);
    if (polled == 0) {
      if (std::chrono::steady_clock::now() > deadline) break;
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
  return arrived;
}

size_t countArrivals(ibv_cq* cq, std::chrono::milliseconds window) {
  size_t arrived = 0;
  const auto deadline = std::chrono::steady_clock::now() + window;
  while (std::chrono::steady_clock::now() < deadline) {
    ibv_wc batch[16];
    const int polled = ibv_poll_cq(cq, 16, batch);
    if (polled < 0) return arrived;
    arrived += static_cast<size_t>(polled);
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return arrived;
}

ibv_qp_state queryState(ibv_qp* qp) {
  ibv_qp_attr attr{};
  ibv_qp_init_attr init{};
  if (verbs().queryQp(qp, &attr, IBV_QP_STATE, &init) != 0) return IBV_QPS_UNKNOWN;
  return attr.qp_state;
}

}  // namespace weft::fake_verbs::test
