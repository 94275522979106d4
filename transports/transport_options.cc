#include "transports/transport_options.h"

#include "base/env.h"

namespace weft {
namespace {

Status applyRdmaEnvironment(TransportOptions* out) {
  out->ibHca = env::getString("WEFT_IB_HCA");
  int64_t value = 0;
  WEFT_TRY(env::getBounded("WEFT_IB_GID_INDEX", -1, 255, &value));
  out->ibGidIndex = static_cast<int>(value);
  WEFT_TRY(env::getBounded("WEFT_RDMA_SLOTS", 2, 1024, &value));
  out->rdmaSlots = static_cast<uint32_t>(value);
  WEFT_TRY(env::getBounded("WEFT_RDMA_SLOT_BYTES", 4096, 16 << 20, &value));
  if (value % 64 != 0) return invalidArgument("WEFT_RDMA_SLOT_BYTES must be a multiple of 64");
  out->rdmaSlotBytes = static_cast<uint32_t>(value);
  WEFT_TRY(env::getBounded("WEFT_RDMA_ZCOPY_BYTES", 0, int64_t{1} << 40, &value));
  out->rdmaZeroCopyMinBytes = static_cast<size_t>(value);
  WEFT_TRY(env::getBounded("WEFT_RDMA_REG_CACHE_BYTES", 0, int64_t{1} << 48, &value));
  out->rdmaRegistrationCacheBytes = static_cast<size_t>(value);
  return Status::ok();
}

Status applyShmEnvironment(TransportOptions* out) {
  int64_t windowBytes = 0;
  WEFT_TRY(env::getBounded("WEFT_SHM_WINDOW_BYTES", 64 << 10, int64_t{1} << 32, &windowBytes));
  out->shmWindowBytes = static_cast<size_t>(windowBytes) & ~size_t{4095};
  int64_t crossMemory = env::getInt("WEFT_SHM_CMA_MIN_BYTES");
  if (crossMemory < 0) return invalidArgument("WEFT_SHM_CMA_MIN_BYTES must be >= 0");
  out->shmCrossMemoryMinBytes = static_cast<size_t>(crossMemory);
  return Status::ok();
}

}  // namespace

Status checkTransportName(const std::string& name, const char* what) {
  if (!name.empty() && name != "tcp" && name != "shm" && name != "rdma") {
    return invalidArgument(std::string(what) + ": transport '" + name +
                           "' is not available (known: tcp, shm, rdma)");
  }
#ifndef WEFT_HAVE_RDMA
  if (name == "rdma") {
    return invalidArgument(std::string(what) +
                           ": transport 'rdma' is not available: this weft was built without "
                           "the libibverbs headers");
  }
#endif
  return Status::ok();
}

Status applyTransportEnvironment(TransportOptions* out) {
  if (env::isSet("WEFT_NSOCKS")) {
    int64_t sockets = 0;
    WEFT_TRY(env::getBounded("WEFT_NSOCKS", 1, 16, &sockets));
    out->socketsPerPeer = static_cast<int>(sockets);
  }
  if (env::isSet("WEFT_RUNTIME_CONNECT")) {
    int64_t runtime = 1;
    WEFT_TRY(env::getBounded("WEFT_RUNTIME_CONNECT", 0, 1, &runtime));
    out->connectAtInit = runtime == 0;
  }
  const char* source = "config.transport";
  if (auto transport = env::get("WEFT_TRANSPORT")) {
    out->forced = *transport;
    source = "WEFT_TRANSPORT";
  }
  WEFT_TRY(checkTransportName(out->forced, source));
  WEFT_TRY(applyShmEnvironment(out));
  return applyRdmaEnvironment(out);
}

}  // namespace weft
