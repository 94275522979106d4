// RDMA transport over libibverbs (InfiniBand, RoCE): one reliable-connected queue pair per
// peer, RDMA writes with immediate into the peer's registered staging slots under a credit
// scheme, zero-copy writes straight into the receiver's buffer for large messages, and
// completion-channel sleeps. libibverbs is loaded at run time (transports/rdma/ibv_library.h);
// a side TCP connection per pair carries the set-up and tells a dead peer at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "transports/rdma/rdma_device.h"
#include "transports/transport.h"

namespace weft::rdma {

struct RdmaOptions {
  DeviceOptions device;
  uint32_t slots = 16;                      // WEFT_RDMA_SLOTS: staging slots per peer
  uint32_t slotBytes = 64 << 10;            // WEFT_RDMA_SLOT_BYTES
  size_t zeroCopyMinBytes = 64 << 10;       // WEFT_RDMA_ZCOPY_BYTES; 0: always staged
  size_t registrationCacheBytes = 1 << 30;  // WEFT_RDMA_REG_CACHE_BYTES: idle user registrations
};

// listen() fails, saying why, when this rank has no usable RDMA port; the caller then uses tcp.
std::unique_ptr<Transport> createRdmaTransport(const RdmaOptions& options);

}  // namespace weft::rdma
