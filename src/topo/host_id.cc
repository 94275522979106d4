#include "topo/host_id.h"

#include <unistd.h>

#include <fstream>

namespace weft::topo {
namespace {

// FNV-1a: stable across processes and builds, unlike std::hash.
uint64_t fnv1a(const std::string& text) {
  uint64_t hash = 14695981039346656037ull;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return hash;
}

std::string bootId() {
  std::ifstream file("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(file, id);
  return id;
}

}  // namespace

std::string hostName() {
  char name[256] = {};
  gethostname(name, sizeof(name) - 1);
  return name;
}

uint64_t hostIdentity(const std::string& override) {
  if (!override.empty()) return fnv1a("override:" + override);
  return fnv1a(hostName() + "/" + bootId());
}

uint64_t machineIdentity() {
  return fnv1a("boot:" + bootId());
}

}  // namespace weft::topo
