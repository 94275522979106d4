#include "memory_report.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>

namespace weft::perf {

int64_t residentBytes() {
  std::FILE* statm = std::fopen("/proc/self/statm", "r");
  if (statm == nullptr) return 0;
  long long sizePages = 0;
  long long residentPages = 0;
  const int fields = std::fscanf(statm, "%lld %lld", &sizePages, &residentPages);
  std::fclose(statm);
  return fields == 2 ? residentPages * int64_t(sysconf(_SC_PAGESIZE)) : 0;
}

std::string formatMemory(int64_t bytes) {
  double amount = double(bytes);
  const char* unit = "B";
  constexpr double kKiB = 1024.0;
  if (std::fabs(amount) >= kKiB * kKiB * kKiB) {
    unit = "GB";
    amount /= kKiB * kKiB * kKiB;
  } else if (std::fabs(amount) >= kKiB * kKiB) {
    unit = "MB";
    amount /= kKiB * kKiB;
  } else if (std::fabs(amount) >= kKiB) {
    unit = "KB";
    amount /= kKiB;
  }
  const int decimals = std::fabs(amount) < 10 ? 2 : (std::fabs(amount) < 100 ? 1 : 0);
  char text[64];
  std::snprintf(text, sizeof(text), "%.*f %s", decimals, amount, unit);
  return text;
}

void printMemoryReport(int64_t initialization, int64_t userAllocated, int64_t collective) {
  const int64_t total = initialization + userAllocated + collective;
  std::printf("# %-20s : Initialization %s | User-Allocated %s | Collective %s | Total  %s\n",
              "Host memory usage", formatMemory(initialization).c_str(),
              formatMemory(userAllocated).c_str(), formatMemory(collective).c_str(),
              formatMemory(total).c_str());
  std::fflush(stdout);
}

}  // namespace weft::perf
