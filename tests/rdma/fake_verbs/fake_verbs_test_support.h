// Test support: loads libweft_fake_verbs.so by path and drives it as a transport would, through
// dlsym'ed entry points and the inline data-path calls of verbs.h (ibv_post_send, ibv_poll_cq,
// ...). Nothing here links the real libibverbs, so a test cannot reach it by accident.
//
// Catch2's assertions are not thread-safe: the helpers that rank threads call report through
// return values, and only the test's main thread asserts.
#pragma once

#include <infiniband/verbs.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <vector>

#include "fake_verbs_control.h"
#include "scoped_env.h"

namespace weft::fake_verbs::test {

struct Verbs {
  decltype(&::ibv_get_device_list) getDeviceList;
  decltype(&::ibv_free_device_list) freeDeviceList;
  decltype(&::ibv_get_device_name) getDeviceName;
  decltype(&::ibv_open_device) openDevice;
  decltype(&::ibv_close_device) closeDevice;
  decltype(&::ibv_query_device) queryDevice;
  decltype(&::ibv_query_port) queryPortCompat;  // takes the compat struct; see queryPort()
  decltype(&::ibv_query_gid) queryGid;
  decltype(&::_ibv_query_gid_ex) queryGidEx;
  decltype(&::ibv_alloc_pd) allocPd;
  decltype(&::ibv_dealloc_pd) deallocPd;
  decltype(&::ibv_reg_mr) regMr;
  decltype(&::ibv_dereg_mr) deregMr;
  decltype(&::ibv_create_comp_channel) createCompChannel;
  decltype(&::ibv_destroy_comp_channel) destroyCompChannel;
  decltype(&::ibv_create_cq) createCq;
  decltype(&::ibv_destroy_cq) destroyCq;
  decltype(&::ibv_get_cq_event) getCqEvent;
  decltype(&::ibv_ack_cq_events) ackCqEvents;
  decltype(&::ibv_create_qp) createQp;
  decltype(&::ibv_modify_qp) modifyQp;
  decltype(&::ibv_query_qp) queryQp;
  decltype(&::ibv_destroy_qp) destroyQp;
  decltype(&::ibv_wc_status_str) wcStatusStr;
  decltype(&::ibv_fork_init) forkInit;
  weft_fake_verbs_control_fn control;
  weft_fake_verbs_live_objects_fn liveObjects;

  // As verbs.h's inline ___ibv_query_port calls the exported function: a full ibv_port_attr,
  // zeroed, cast to the compat type.
  int queryPort(ibv_context* context, uint8_t port, ibv_port_attr* attr) const;
};

// The library, dlopen'ed once from WEFT_FAKE_VERBS_PATH; every entry point resolved.
const Verbs& verbs();
void* libraryHandle();

// Per test: no WEFT_FAKE_VERBS_* variables from outside (restored afterwards), no faults armed.
class FakeVerbsTest {
 public:
  FakeVerbsTest();
  ~FakeVerbsTest();

 private:
  weft::test::ScopedEnv clean_;
};

struct EndpointOptions {
  int deviceIndex = 0;
  int cqe = 256;
  uint32_t maxSendWr = 32;
  uint32_t maxRecvWr = 32;
  uint32_t maxSge = 2;
  uint32_t maxInline = 64;
  bool sqSigAll = false;
  bool withChannel = false;
  size_t bufferBytes = 256 * 1024;
  int bufferAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
};

// One rank's verbs objects: a context on a device of the list, a PD, one CQ for both queues
// (optionally with a completion channel), an RC QP in RESET and a registered buffer. The
// constructor records failures in `error` instead of asserting, so rank threads can build one.
class Endpoint {
 public:
  explicit Endpoint(const EndpointOptions& options = {});
  ~Endpoint();
  Endpoint(const Endpoint&) = delete;
  Endpoint& operator=(const Endpoint&) = delete;

  bool ok() const { return error == nullptr; }
  uint64_t address(size_t offset = 0) {
    return reinterpret_cast<uintptr_t>(buffer.data() + offset);
  }

  const char* error = nullptr;  // the step that failed
  ibv_context* context = nullptr;
  ibv_pd* pd = nullptr;
  ibv_comp_channel* channel = nullptr;
  ibv_cq* cq = nullptr;
  ibv_qp* qp = nullptr;
  ibv_mr* mr = nullptr;
  std::vector<unsigned char> buffer;
};

struct PathOptions {
  ibv_mtu mtu = IBV_MTU_1024;
  uint8_t gidIndex = 1;
  uint8_t timeout = 14;  // 67 ms per attempt
  uint8_t retryCnt = 7;
  uint8_t rnrRetry = 7;     // forever
  uint8_t minRnrTimer = 1;  // 10 us
  uint32_t sqPsn = 4000;    // this side's send PSN; the peer's rq_psn must match it
  uint32_t rqPsn = 4000;
  unsigned access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
};

// The three transitions with exactly their mandatory attributes; each returns modify's result.
int moveToInit(Endpoint& endpoint, const PathOptions& path = {});
int moveToRtr(Endpoint& endpoint, uint32_t remoteQpn, const ibv_gid& remoteGid,
              const PathOptions& path = {});
int moveToRts(Endpoint& endpoint, const PathOptions& path = {});
ibv_gid gidOf(Endpoint& endpoint, int index);
// Both QPs to RTS, connected to each other; 0 or the first failing modify's error.
int connectPair(Endpoint& a, Endpoint& b, const PathOptions& pathA = {},
                const PathOptions& pathB = {});

// An RDMA write (with immediate when `imm` is set) of [offset, offset + length) of `from`'s
// buffer to `remoteAddr`/`rkey`; length 0 posts no SGE.
int postWrite(Endpoint& from, uint64_t wrId, size_t offset, size_t length, uint64_t remoteAddr,
              uint32_t rkey, std::optional<uint32_t> imm = std::nullopt,
              unsigned flags = IBV_SEND_SIGNALED);
// A receive without SGEs, as a write-with-immediate consumes one.
int postEmptyRecv(Endpoint& endpoint, uint64_t wrId);

// Polls until `count` completions arrived, the CQ failed, or `timeout` passed.
std::vector<ibv_wc> pollFor(ibv_cq* cq, size_t count,
                            std::chrono::milliseconds timeout = std::chrono::seconds(5));
// Polls for `window` and returns how many completions arrived (to show that none do).
size_t countArrivals(ibv_cq* cq, std::chrono::milliseconds window);

ibv_qp_state queryState(ibv_qp* qp);

}  // namespace weft::fake_verbs::test
