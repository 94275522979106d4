#include "launcher/job_layout.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

#include "launcher/remote_protocol.h"

namespace weftrun {
namespace {

constexpr int kSecretBytes = 32;  // 64 hex characters, what the library's init expects
// When rank 0 runs on another host its port cannot be probed from here; one is drawn from this
// range, below Linux's ephemeral ports (32768-60999) so that no outgoing connection holds it.
constexpr int kRemotePortFirst = 20000;
constexpr int kRemotePortCount = 12000;

std::string ErrnoText(const char* what) {
  return std::string(what) + ": " + std::strerror(errno);
}

// Returns a port that was free on the given IPv4 address a moment ago, or -1. Binding port 0
// makes the kernel pick one; the socket is closed again so that rank 0 can listen there. Another
// process could take the port in between, which is why the library reports a failed bind clearly.
int FindFreePort(in_addr_t address_host_order, std::string* error) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *error = ErrnoText("socket");
    return -1;
  }
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(address_host_order);
  address.sin_port = 0;
  socklen_t length = sizeof address;
  int port = -1;
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    *error = ErrnoText("bind port 0");
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

// The secret the job keeps: "-x WEFT_SECRET=..." first, then an inherited one (so that a job can
// be joined by ranks started some other way). Empty when none is set.
std::string ChosenSecret(const LaunchOptions& options, const EnvBlock& env) {
  std::string chosen;
  for (const std::string& item : options.exports) {
    if (item.starts_with("WEFT_SECRET=")) chosen = item.substr(12);
  }
  if (chosen.empty()) chosen = env.Get("WEFT_SECRET").value_or("");
  return chosen;
}

// Fills layout->parts from the hosts' slots, in order, and the local ranks.
bool PlaceRanks(const LaunchOptions& options, JobLayout* layout, std::string* error) {
  int slots = 0;
  for (const HostSlots& host : options.hosts) slots += host.slots;
  layout->nranks = options.nranks > 0 ? options.nranks : slots;
  if (layout->nranks > slots) {
    *error = "-n " + std::to_string(layout->nranks) + " exceeds the " + std::to_string(slots) +
             " slot" + (slots == 1 ? "" : "s") + " of the hosts given";
    return false;
  }
  int next = 0;
  for (const HostSlots& host : options.hosts) {
    if (next == layout->nranks) break;
    int count = std::min(host.slots, layout->nranks - next);
    layout->parts.push_back(HostPart{host.name, IsThisHost(host.name), next, count});
    next += count;
  }
  return true;
}

// "host:port" for rank 0. A local rank 0 probes a free port; a remote one gets a drawn port.
bool ChooseRootAddress(JobLayout* layout, std::string* error) {
  const HostPart& first = layout->parts.front();
  if (!layout->several_hosts) {
    int port = FindFreePort(INADDR_LOOPBACK, error);
    if (port < 0) return false;
    layout->root_addr = "127.0.0.1:" + std::to_string(port);
    return true;
  }
  std::string host = first.host;
  int port = -1;
  if (first.local) {
    port = FindFreePort(INADDR_ANY, error);
    if (port < 0) return false;
    // The other hosts must reach rank 0, which "localhost" would not name for them.
    if (host == "localhost" || host == "127.0.0.1" || host == "::1") {
      char own[HOST_NAME_MAX + 1] = {};
      gethostname(own, sizeof own - 1);
      host = own;
    }
  } else {
    unsigned int draw = 0;
    if (getrandom(&draw, sizeof draw, 0) != sizeof draw) draw = static_cast<unsigned>(getpid());
    port = kRemotePortFirst + static_cast<int>(draw % kRemotePortCount);
  }
  // An IPv6 address needs brackets to carry a port.
  if (host.find(':') != std::string::npos) host = "[" + host + "]";
  layout->root_addr = host + ":" + std::to_string(port);
  return true;
}

}  // namespace

bool PlanJob(const LaunchOptions& options, const EnvBlock& env, JobLayout* layout,
             std::string* error) {
  *layout = JobLayout{};
  if (options.hosts.empty()) {
    layout->nranks = options.nranks;
    layout->parts.push_back(HostPart{"localhost", true, 0, options.nranks});
  } else if (!PlaceRanks(options, layout, error)) {
    return false;
  }
  for (const HostPart& part : layout->parts) {
    if (!part.local) layout->several_hosts = true;
    if (!part.local) continue;
    for (int r = part.first_rank; r < part.first_rank + part.count; ++r) {
      layout->local_ranks.push_back(r);
      layout->local_hosts.push_back(part.host);
    }
  }
  if (!ChooseRootAddress(layout, error)) return false;
  layout->secret = ChosenSecret(options, env);
  return !layout->secret.empty() || MakeJobSecret(&layout->secret, error);
}

bool ReceiveJob(const LaunchOptions& options, int timeout_ms, JobLayout* layout,
                std::string* error) {
  const RemotePart& remote = *options.remote;
  *layout = JobLayout{};
  layout->nranks = options.nranks;
  layout->parts.push_back(HostPart{remote.host, true, remote.first_rank, remote.count});
  for (int r = remote.first_rank; r < remote.first_rank + remote.count; ++r) {
    layout->local_ranks.push_back(r);
    layout->local_hosts.push_back(remote.host);
  }
  layout->several_hosts = true;
  layout->root_addr = remote.root_addr;
  return ControlReader::ReadSecret(STDIN_FILENO, timeout_ms, &layout->secret, error);
}

}  // namespace weftrun
