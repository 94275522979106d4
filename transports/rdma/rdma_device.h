// Finding and opening the RDMA device a rank uses: the first device WEFT_IB_HCA admits with an
// ACTIVE port and a usable GID (transports/rdma/port_choice.h decides which).
#pragma once

#include <infiniband/verbs.h>

#include <memory>
#include <string>

#include "base/status.h"
#include "transports/rdma/ibv_library.h"
#include "transports/rdma/port_choice.h"

namespace weft::rdma {

struct DeviceOptions {
  std::string hcaFilter;  // WEFT_IB_HCA
  int gidIndex = -1;      // WEFT_IB_GID_INDEX; -1 chooses
};

struct RdmaDevice {
  RdmaDevice() = default;
  ~RdmaDevice();
  RdmaDevice(const RdmaDevice&) = delete;
  RdmaDevice& operator=(const RdmaDevice&) = delete;

  const IbvLibrary* lib = nullptr;
  ibv_context* context = nullptr;
  std::string name;
  int port = 0;
  GidCandidate gid;
  uint16_t lid = 0;
  uint8_t activeMtu = IBV_MTU_1024;
  bool ethernet = true;
  ibv_device_attr attr{};

  std::string describe() const;  // "rxe0 port 1, GID 3 ::ffff:10.0.0.1 (RoCE v2), MTU 1024"
};

// The error says why no device is usable, worded for the one log line that reports it
// ("ibv_get_device_list: Function not implemented", "no RDMA device", "mlx5_0: no ACTIVE
// port", ...).
Status openRdmaDevice(const DeviceOptions& options, std::unique_ptr<RdmaDevice>* out);

}  // namespace weft::rdma
