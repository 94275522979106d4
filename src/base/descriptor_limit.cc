#include "base/descriptor_limit.h"

#include <sys/resource.h>

#include <mutex>

#include "base/log.h"

namespace weft {

void raiseDescriptorLimit() {
  static std::once_flag once;
  std::call_once(once, [] {
    rlimit limit{};
    if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur >= limit.rlim_max) return;
    const rlim_t before = limit.rlim_cur;
    limit.rlim_cur = limit.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &limit) == 0) {
      WEFT_INFO("raised the soft limit of open files from %llu to %llu (the hard limit)",
                static_cast<unsigned long long>(before),
                static_cast<unsigned long long>(limit.rlim_max));
    }
  });
}

}  // namespace weft
