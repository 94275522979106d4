#include "launcher/rank_env.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

extern char** environ;

namespace weftrun {
namespace {

constexpr int kSecretBytes = 32;  // 64 hex characters, what the library's init expects

std::string ErrnoText(const char* what) {
  return std::string(what) + ": " + std::strerror(errno);
}

// Returns a port on 127.0.0.1 that was free a moment ago, or -1. Binding port 0 makes the kernel
// pick one; the socket is closed again so that rank 0 can listen there. Another process could
// take the port in between, which is why the library reports a failed bind clearly.
int FindFreeLoopbackPort(std::string* error) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *error = ErrnoText("socket");
    return -1;
  }
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t length = sizeof address;
  int port = -1;
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    *error = ErrnoText("bind 127.0.0.1:0");
  } else if (getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    *error = ErrnoText("getsockname");
  } else {
    port = ntohs(address.sin_port);
  }
  // Never listened on, so closing leaves no TIME_WAIT entry that could block rank 0's bind.
  close(fd);
  return port;
}

// Fills buffer from getrandom(), or from /dev/urandom on kernels without it.
bool ReadRandomBytes(unsigned char* buffer, size_t size, std::string* error) {
  size_t filled = 0;
  while (filled < size) {
    ssize_t n = getrandom(buffer + filled, size - filled, 0);
    if (n > 0) {
      filled += static_cast<size_t>(n);
    } else if (n < 0 && errno == ENOSYS) {
      break;
    } else if (n < 0 && errno != EINTR) {
      *error = ErrnoText("getrandom");
      return false;
    }
  }
  if (filled == size) return true;
  int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *error = ErrnoText("/dev/urandom");
    return false;
  }
  while (filled < size) {
    ssize_t n = read(fd, buffer + filled, size - filled);
    if (n > 0) {
      filled += static_cast<size_t>(n);
    } else if (n == 0 || errno != EINTR) {
      *error = n == 0 ? "/dev/urandom: short read" : ErrnoText("/dev/urandom");
      close(fd);
      return false;
    }
  }
  close(fd);
  return true;
}

bool MakeJobSecret(std::string* secret, std::string* error) {
  unsigned char bytes[kSecretBytes];
  if (!ReadRandomBytes(bytes, sizeof bytes, error)) return false;
  static constexpr char kHex[] = "0123456789abcdef";
  secret->clear();
  for (unsigned char byte : bytes) {
    secret->push_back(kHex[byte >> 4]);
    secret->push_back(kHex[byte & 0xf]);
  }
  return true;
}

// An empty value is treated as unset: an empty secret or interface name is never what was meant.
bool IsSetNonEmpty(const EnvBlock& env, std::string_view name) {
  std::optional<std::string> value = env.Get(name);
  return value && !value->empty();
}

}  // namespace

EnvBlock EnvBlock::FromProcess() {
  EnvBlock block;
  for (char** entry = environ; entry && *entry; ++entry) block.entries_.emplace_back(*entry);
  return block;
}

std::optional<std::string> EnvBlock::Get(std::string_view name) const {
  for (const std::string& entry : entries_) {
    if (entry.size() > name.size() && entry.compare(0, name.size(), name) == 0 &&
        entry[name.size()] == '=') {
      return entry.substr(name.size() + 1);
    }
  }
  return std::nullopt;
}

void EnvBlock::Set(std::string_view name, std::string_view value) {
  std::string entry = std::string(name) + "=" + std::string(value);
  for (std::string& existing : entries_) {
    if (existing.size() > name.size() && existing.compare(0, name.size(), name) == 0 &&
        existing[name.size()] == '=') {
      existing = std::move(entry);
      return;
    }
  }
  entries_.push_back(std::move(entry));
}

std::vector<char*> EnvBlock::Pointers() {
  std::vector<char*> pointers;
  pointers.reserve(entries_.size() + 1);
  for (std::string& entry : entries_) pointers.push_back(entry.data());
  pointers.push_back(nullptr);
  return pointers;
}

bool IsWeftrunOwnedVariable(std::string_view name) {
  return name == "WEFT_RANK" || name == "WEFT_NRANKS" || name == "WEFT_LOCAL_RANK" ||
         name == "WEFT_LOCAL_NRANKS" || name == "WEFT_ROOT_ADDR";
}

bool PrepareJobEnvironment(const LaunchOptions& options, EnvBlock* env, std::string* error) {
  *env = EnvBlock::FromProcess();
  for (const std::string& item : options.exports) {
    size_t equals = item.find('=');
    if (equals != std::string::npos) {
      env->Set(item.substr(0, equals), item.substr(equals + 1));
    } else if (!env->Get(item)) {
      // The ranks inherit weftrun's environment anyway, so "-x NAME" only matters as a check.
      std::fprintf(stderr, "weftrun: warning: -x %s: not set in weftrun's environment\n",
                   item.c_str());
    }
  }
  int port = FindFreeLoopbackPort(error);
  if (port < 0) return false;
  std::string nranks = std::to_string(options.nranks);
  env->Set("WEFT_NRANKS", nranks);
  env->Set("WEFT_LOCAL_NRANKS", nranks);
  env->Set("WEFT_ROOT_ADDR", "127.0.0.1:" + std::to_string(port));
  // An inherited secret is kept so that a job can be joined by ranks started some other way.
  if (!IsSetNonEmpty(*env, "WEFT_SECRET")) {
    std::string secret;
    if (!MakeJobSecret(&secret, error)) return false;
    env->Set("WEFT_SECRET", secret);
  }
  // Every rank runs on this machine, so loopback is the right interface unless told otherwise.
  if (!IsSetNonEmpty(*env, "WEFT_SOCKET_IFNAME")) env->Set("WEFT_SOCKET_IFNAME", "lo");
  return true;
}

EnvBlock RankEnvironment(const EnvBlock& job_env, int rank) {
  EnvBlock env = job_env;
  std::string value = std::to_string(rank);
  env.Set("WEFT_RANK", value);
  // One machine: the local rank is the rank.
  env.Set("WEFT_LOCAL_RANK", value);
  return env;
}

}  // namespace weftrun
