// The libibverbs entry points the rdma transport uses, loaded with dlopen at run time: weft has
// no link-time dependency on libibverbs, so one build runs on machines with and without RDMA.
// WEFT_IBVERBS_LIB names another library to load instead (the project's fake, in tests).
//
// The data-path calls (ibv_post_send, ibv_post_recv, ibv_poll_cq, ibv_req_notify_cq) are inline
// functions of verbs.h that call through the context's ops table, so they need no symbol here.
#pragma once

#include <infiniband/verbs.h>

#include <string>

#include "base/status.h"

namespace weft::rdma {

struct IbvLibrary {
  std::string path;  // what was loaded

  ibv_device** (*getDeviceList)(int* count);
  void (*freeDeviceList)(ibv_device** list);
  const char* (*getDeviceName)(ibv_device* device);
  ibv_context* (*openDevice)(ibv_device* device);
  int (*closeDevice)(ibv_context* context);
  int (*queryDevice)(ibv_context* context, ibv_device_attr* attr);
  // The exported form takes the older, shorter attribute struct; callers pass a zeroed
  // ibv_port_attr, whose leading fields have the same layout.
  int (*queryPort)(ibv_context* context, uint8_t port, _compat_ibv_port_attr* attr);
  int (*queryGid)(ibv_context* context, uint8_t port, int index, ibv_gid* gid);
  // Optional (rdma-core 32 and later): the GID's type (RoCE v1 or v2); nullptr when absent.
  int (*queryGidEx)(ibv_context* context, uint32_t port, uint32_t index, ibv_gid_entry* entry,
                    uint32_t flags, size_t entrySize);
  ibv_pd* (*allocPd)(ibv_context* context);
  int (*deallocPd)(ibv_pd* pd);
  ibv_mr* (*regMr)(ibv_pd* pd, void* addr, size_t length, int access);
  int (*deregMr)(ibv_mr* mr);
  ibv_comp_channel* (*createCompChannel)(ibv_context* context);
  int (*destroyCompChannel)(ibv_comp_channel* channel);
  ibv_cq* (*createCq)(ibv_context* context, int cqe, void* cqContext, ibv_comp_channel* channel,
                      int vector);
  int (*destroyCq)(ibv_cq* cq);
  int (*getCqEvent)(ibv_comp_channel* channel, ibv_cq** cq, void** cqContext);
  void (*ackCqEvents)(ibv_cq* cq, unsigned int count);
  ibv_qp* (*createQp)(ibv_pd* pd, ibv_qp_init_attr* attr);
  int (*modifyQp)(ibv_qp* qp, ibv_qp_attr* attr, int mask);
  int (*destroyQp)(ibv_qp* qp);
  const char* (*wcStatusStr)(ibv_wc_status status);
};

// The library named by WEFT_IBVERBS_LIB (default libibverbs.so.1), loaded once per process and
// never unloaded (providers do not survive unloading). Fails, saying why, when the library or
// one of its mandatory symbols is missing.
Status loadIbvLibrary(const IbvLibrary** out);

}  // namespace weft::rdma
