// What this process holds of a host's shm ranks: each rank's mapped segment and wake-up eventfd
// (an Endpoint), and a descriptor per peer process that becomes readable when it exits (a
// ProcessWatch). Both are shared by every rank of this process, so that a process running many
// ranks as threads maps each segment once and holds one descriptor per peer rank and process,
// not one per pair of ranks: 1024 thread-ranks would otherwise need a million mappings (four
// times the kernel's default limit) and two million descriptors.
//
// Endpoints are keyed by the owner's listen name, which is random per transport, so two
// communicators never share one by accident. An entry lives while some rank of this process
// uses it.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "base/status.h"
#include "transports/shm/shm_segment.h"

namespace weft::shm {

struct Endpoint {
  Endpoint() = default;
  Endpoint(const Endpoint&) = delete;
  Endpoint& operator=(const Endpoint&) = delete;
  ~Endpoint();

  // Once the host's table is out, a segment's descriptor is needed no more: the mapping holds
  // the memory. Ranks of one process may call this at once.
  void closeSegmentDescriptor();
  int segmentDescriptor();  // -1 once closed

  Segment segment;
  int wakeFd = -1;  // the owner's eventfd
  pid_t pid = 0;
  uint64_t startTicks = 0;

 private:
  std::mutex mutex_;
};

// A rank of this process offers its own endpoint to the others (before any of them can ask).
void publishEndpoint(const std::string& name, const std::shared_ptr<Endpoint>& endpoint);
// The endpoint a rank of this process published or imported under `name`, or nullptr.
std::shared_ptr<Endpoint> findEndpoint(const std::string& name);
// The endpoint under `name` from descriptors received for it: the one this process has already
// (the descriptors are then closed) or one mapped from them. Takes both descriptors.
Status importEndpoint(const std::string& name, int segmentFd, int wakeFd, pid_t pid,
                      uint64_t startTicks, std::shared_ptr<Endpoint>* out);

// A pidfd (Linux 5.3): readable once the process exits.
struct ProcessWatch {
  ProcessWatch() = default;
  ProcessWatch(const ProcessWatch&) = delete;
  ProcessWatch& operator=(const ProcessWatch&) = delete;
  ~ProcessWatch();

  int fd = -1;
  pid_t pid = 0;
};

// The watch of process (pid, startTicks). *gone is set when it has already exited (or the pid
// now names another process). nullptr without *gone: the kernel offers no pidfd here; the death
// of that process is then noticed only by a wait's deadline (logged once at INFO).
std::shared_ptr<ProcessWatch> watchProcess(pid_t pid, uint64_t startTicks, bool* gone);

// Whether this process can read process pid's memory with process_vm_readv, tried once per
// process: reading `expected` at `address` there. The answer is remembered per (pid, start).
bool canReadProcess(pid_t pid, uint64_t startTicks, uint64_t address, uint64_t expected);

}  // namespace weft::shm
