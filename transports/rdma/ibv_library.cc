#include "transports/rdma/ibv_library.h"

#include <dlfcn.h>

#include <map>
#include <memory>
#include <mutex>

#include "base/env.h"

namespace weft::rdma {
namespace {

template <typename Fn>
bool bind(void* handle, const char* symbol, Fn* out, std::string* missing) {
  *out = reinterpret_cast<Fn>(dlsym(handle, symbol));
  if (*out == nullptr && missing->empty()) *missing = symbol;
  return *out != nullptr;
}

Status open(const std::string& path, std::unique_ptr<IbvLibrary>* out) {
  // RTLD_LOCAL: the verbs symbols stay out of the global namespace, so a program that links
  // libibverbs itself is not affected by a second copy loaded here.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return invalidUsage("cannot load " + path + ": " + (why ? why : "unknown error"));
  }
  auto lib = std::make_unique<IbvLibrary>();
  lib->path = path;
  std::string missing;
  bind(handle, "ibv_get_device_list", &lib->getDeviceList, &missing);
  bind(handle, "ibv_free_device_list", &lib->freeDeviceList, &missing);
  bind(handle, "ibv_get_device_name", &lib->getDeviceName, &missing);
  bind(handle, "ibv_open_device", &lib->openDevice, &missing);
  bind(handle, "ibv_close_device", &lib->closeDevice, &missing);
  bind(handle, "ibv_query_device", &lib->queryDevice, &missing);
  bind(handle, "ibv_query_port", &lib->queryPort, &missing);
  bind(handle, "ibv_query_gid", &lib->queryGid, &missing);
  bind(handle, "ibv_alloc_pd", &lib->allocPd, &missing);
  bind(handle, "ibv_dealloc_pd", &lib->deallocPd, &missing);
  bind(handle, "ibv_reg_mr", &lib->regMr, &missing);
  bind(handle, "ibv_dereg_mr", &lib->deregMr, &missing);
  bind(handle, "ibv_create_comp_channel", &lib->createCompChannel, &missing);
  bind(handle, "ibv_destroy_comp_channel", &lib->destroyCompChannel, &missing);
  bind(handle, "ibv_create_cq", &lib->createCq, &missing);
  bind(handle, "ibv_destroy_cq", &lib->destroyCq, &missing);
  bind(handle, "ibv_get_cq_event", &lib->getCqEvent, &missing);
  bind(handle, "ibv_ack_cq_events", &lib->ackCqEvents, &missing);
  bind(handle, "ibv_create_qp", &lib->createQp, &missing);
  bind(handle, "ibv_modify_qp", &lib->modifyQp, &missing);
  bind(handle, "ibv_destroy_qp", &lib->destroyQp, &missing);
  bind(handle, "ibv_wc_status_str", &lib->wcStatusStr, &missing);
  if (!missing.empty()) {
    dlclose(handle);
    return invalidUsage(path + " lacks " + missing + " (not a libibverbs?)");
  }
  std::string optional;
  bind(handle, "_ibv_query_gid_ex", &lib->queryGidEx, &optional);
  *out = std::move(lib);
  return Status::ok();
}

}  // namespace

Status loadIbvLibrary(const IbvLibrary** out) {
  // One load per path for the life of the process; a failed load is retried next time (the
  // environment may have changed, as it does between tests).
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<IbvLibrary>> loaded;
  const std::string path = env::getString("WEFT_IBVERBS_LIB");
  std::lock_guard<std::mutex> lock(mutex);
  auto found = loaded.find(path);
  if (found == loaded.end()) {
    std::unique_ptr<IbvLibrary> lib;
    WEFT_TRY(open(path, &lib));
    found = loaded.emplace(path, std::move(lib)).first;
  }
  *out = found->second.get();
  return Status::ok();
}

}  // namespace weft::rdma
