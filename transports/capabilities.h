// What only some transports do, apart from the interface every transport implements
// (transport.h). The fabric asks a transport for these once, when it attaches it.
#pragma once

#include <cstddef>

namespace weft {

class SharedWindows;  // transports/shared_windows.h

class TransportCapabilities {
 public:
  virtual ~TransportCapabilities() = default;

  // The caller is about to sleep on the transport's waitFd(). A transport whose peers write to
  // memory rather than to a socket (shm), or whose completions must be armed first (rdma),
  // announces the sleep, and returns false when work has arrived meanwhile (the caller then
  // polls again instead of sleeping).
  virtual bool prepareToSleep() { return true; }
  // The caller stopped sleeping (woken or not); undo prepareToSleep().
  virtual void finishSleep() {}

  // The communicator finished an operation (one call or a group): from now on the user may
  // free the buffers it was given, so a transport that registered them with hardware (rdma's
  // zero-copy path) lets those registrations go.
  virtual void operationDone() {}
  // Memory the library itself passed in transfers is about to be freed (a staging buffer that
  // grows), even in the middle of an operation.
  virtual void memoryFreed(const void* /*buf*/, size_t /*bytes*/) {}

  // The user registered [buf, buf + bytes) (weftCommRegister) and keeps it alive until it is
  // deregistered: a transport that registers memory with hardware (rdma) keeps a registration of
  // it across operations instead of making one per operation. Called between operations.
  virtual void userMemoryRegistered(const void* /*buf*/, size_t /*bytes*/) {}
  virtual void userMemoryDeregistered(const void* /*buf*/, size_t /*bytes*/) {}

  // Memory all ranks of this host can read and write, for the direct algorithms; nullptr when
  // the transport has none.
  virtual SharedWindows* windows() { return nullptr; }
};

}  // namespace weft
