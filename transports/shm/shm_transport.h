// Shared-memory transport for the ranks of one host: lock-free single-producer rings in memfd
// segments, a single-copy path (process_vm_readv) for large messages where the kernel allows
// it, and shared windows for the direct algorithms. Waiting spins briefly, then sleeps on an
// eventfd that peers write only when the shared "sleeping" word says so.
#pragma once

#include <cstddef>
#include <memory>

#include "transports/transport.h"

namespace weft::shm {

struct ShmOptions {
  size_t windowBytes = 8 << 20;           // WEFT_SHM_WINDOW_BYTES: per rank, for direct algorithms
  size_t crossMemoryMinBytes = 64 << 10;  // WEFT_SHM_CMA_MIN_BYTES; 0 turns single-copy off
};

std::unique_ptr<Transport> createShmTransport(const ShmOptions& options);

}  // namespace weft::shm
