#include "transports/shm/shm_endpoints.h"

#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <utility>

#include "base/log.h"
#include "topo/process_state.h"

namespace weft::shm {
namespace {

using ProcessKey = std::pair<pid_t, uint64_t>;

// One lock for the three tables: they are consulted at set-up only.
struct Directory {
  std::mutex mutex;
  std::map<std::string, std::weak_ptr<Endpoint>> endpoints;
  std::map<ProcessKey, std::weak_ptr<ProcessWatch>> watches;
  std::map<ProcessKey, bool> readable;
  bool reportedNoPidfd = false;
};

Directory& directory() {
  static Directory* instance = new Directory();  // never destroyed: ranks may outlive statics
  return *instance;
}

template <typename Table>
void dropExpired(Table& table) {
  for (auto entry = table.begin(); entry != table.end();) {
    entry = entry->second.expired() ? table.erase(entry) : std::next(entry);
  }
}

int openPidfd(pid_t pid) {
#ifdef SYS_pidfd_open
  return static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
#else
  (void)pid;
  errno = ENOSYS;
  return -1;
#endif
}

}  // namespace

Endpoint::~Endpoint() {
  if (wakeFd >= 0) close(wakeFd);
}

void Endpoint::closeSegmentDescriptor() {
  std::lock_guard<std::mutex> lock(mutex_);
  segment.closeDescriptor();
}

int Endpoint::segmentDescriptor() {
  std::lock_guard<std::mutex> lock(mutex_);
  return segment.fd();
}

ProcessWatch::~ProcessWatch() {
  if (fd >= 0) close(fd);
}

void publishEndpoint(const std::string& name, const std::shared_ptr<Endpoint>& endpoint) {
  Directory& dir = directory();
  std::lock_guard<std::mutex> lock(dir.mutex);
  dropExpired(dir.endpoints);
  dir.endpoints[name] = endpoint;
}

std::shared_ptr<Endpoint> findEndpoint(const std::string& name) {
  Directory& dir = directory();
  std::lock_guard<std::mutex> lock(dir.mutex);
  auto entry = dir.endpoints.find(name);
  return entry == dir.endpoints.end() ? nullptr : entry->second.lock();
}

Status importEndpoint(const std::string& name, int segmentFd, int wakeFd, pid_t pid,
                      uint64_t startTicks, std::shared_ptr<Endpoint>* out) {
  Directory& dir = directory();
  {
    std::lock_guard<std::mutex> lock(dir.mutex);
    auto entry = dir.endpoints.find(name);
    if (entry != dir.endpoints.end()) {
      if (std::shared_ptr<Endpoint> held = entry->second.lock()) {
        close(segmentFd);
        close(wakeFd);
        *out = std::move(held);
        return Status::ok();
      }
    }
  }
  // Mapped outside the lock; another rank of this process may map the same one meanwhile, and
  // the first to file it wins.
  auto endpoint = std::make_shared<Endpoint>();
  endpoint->wakeFd = wakeFd;
  endpoint->pid = pid;
  endpoint->startTicks = startTicks;
  WEFT_TRY(Segment::attach(segmentFd, &endpoint->segment));
  std::lock_guard<std::mutex> lock(dir.mutex);
  std::weak_ptr<Endpoint>& slot = dir.endpoints[name];
  if (std::shared_ptr<Endpoint> winner = slot.lock()) {
    *out = std::move(winner);
    return Status::ok();
  }
  slot = endpoint;
  *out = std::move(endpoint);
  return Status::ok();
}

std::shared_ptr<ProcessWatch> watchProcess(pid_t pid, uint64_t startTicks, bool* gone) {
  *gone = false;
  Directory& dir = directory();
  std::lock_guard<std::mutex> lock(dir.mutex);
  std::weak_ptr<ProcessWatch>& slot = dir.watches[{pid, startTicks}];
  if (std::shared_ptr<ProcessWatch> held = slot.lock()) return held;
  const int fd = openPidfd(pid);
  if (fd < 0) {
    if (errno == ESRCH) {
      *gone = true;
    } else if (!dir.reportedNoPidfd) {
      dir.reportedNoPidfd = true;
      WEFT_INFO(
          "shm: pidfd_open failed (%s): a local peer process that dies is noticed at the "
          "wait's deadline only",
          std::strerror(errno));
    }
    return nullptr;
  }
  // The pid may have been reused between the peer's report and the pidfd: its start time says.
  topo::ProcessStat stat;
  if (!topo::readProcessStat(pid, &stat) || (startTicks != 0 && stat.startTicks != startTicks)) {
    close(fd);
    *gone = true;
    return nullptr;
  }
  auto watch = std::make_shared<ProcessWatch>();
  watch->fd = fd;
  watch->pid = pid;
  slot = watch;
  dropExpired(dir.watches);
  return watch;
}

bool canReadProcess(pid_t pid, uint64_t startTicks, uint64_t address, uint64_t expected) {
  Directory& dir = directory();
  {
    std::lock_guard<std::mutex> lock(dir.mutex);
    auto known = dir.readable.find({pid, startTicks});
    if (known != dir.readable.end()) return known->second;
  }
  uint64_t value = 0;
  iovec local{&value, sizeof(value)};
  iovec remote{reinterpret_cast<void*>(address), sizeof(value)};
  ssize_t got = process_vm_readv(pid, &local, 1, &remote, 1, 0);
  const bool readable = got == static_cast<ssize_t>(sizeof(value)) && value == expected;
  if (!readable) {
    WEFT_INFO(
        "shm: process_vm_readv from process %d refused (%s); large messages from its ranks are "
        "copied through shared memory instead",
        static_cast<int>(pid), got < 0 ? std::strerror(errno) : "wrong data");
  }
  std::lock_guard<std::mutex> lock(dir.mutex);
  dir.readable[{pid, startTicks}] = readable;
  return readable;
}

}  // namespace weft::shm
