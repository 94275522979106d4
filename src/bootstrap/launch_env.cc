// Launchers are recognised by their rank variables, in the order the header gives. Whatever the
// launcher, WEFT_ROOT_ADDR wins when set. Without WEFT_SECRET the secret is derived from public
// job facts (launcher, root address text, job id): that keeps two jobs that share a host and port
// from joining each other by accident, but anyone who can read those facts can derive it, so it
// is no protection against an attacker. Set WEFT_SECRET for that.
#include "bootstrap/launch_env.h"

#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <optional>

#include "base/env.h"

namespace weft::bootstrap {
namespace {

struct Names {
  const char* rank;
  const char* nranks;
  const char* localRank;
  const char* localNranks;
};

constexpr Names kWeftrun = {"WEFT_RANK", "WEFT_NRANKS", "WEFT_LOCAL_RANK", "WEFT_LOCAL_NRANKS"};
constexpr Names kTorchrun = {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"};
constexpr Names kOpenMpi = {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                            "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"};
constexpr Names kSlurm = {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_TASKS_PER_NODE"};

// Ports derived for single-host jobs fall in [kDerivedPortBase, kDerivedPortBase + kDerivedPorts),
// clear of the usual ephemeral range (32768..60999 on Linux overlaps only partly, and the job id
// spreads jobs across it).
constexpr uint32_t kDerivedPortBase = 20000;
constexpr uint32_t kDerivedPorts = 40000;

std::optional<int> parseInt(const std::string& text) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  long long value = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || *end != '\0' || value < INT_MIN || value > INT_MAX) return std::nullopt;
  return static_cast<int>(value);
}

Status readInt(const char* name, bool required, int* out) {
  std::optional<std::string> text = env::get(name);
  if (!text) {
    return required ? invalidArgument(std::string(name) + " is not set") : Status::ok();
  }
  std::optional<int> value = parseInt(*text);
  if (!value) return invalidArgument(std::string(name) + "='" + *text + "' is not an integer");
  *out = *value;
  return Status::ok();
}

Status readCounts(const Names& names, LaunchInfo* info) {
  WEFT_TRY(readInt(names.rank, true, &info->rank));
  WEFT_TRY(readInt(names.nranks, true, &info->nranks));
  WEFT_TRY(readInt(names.localRank, false, &info->localRank));
  // Slurm has no local-size variable of that kind; the caller derives it.
  if (&names != &kSlurm) {
    WEFT_TRY(readInt(names.localNranks, false, &info->localNranks));
  }
  return Status::ok();
}

Status validate(const Names& names, const LaunchInfo& info) {
  auto value = [](const char* name) {
    return std::string(name) + "='" + env::getString(name) + "'";
  };
  if (info.nranks < 1) return invalidArgument(value(names.nranks) + " must be at least 1");
  if (info.rank < 0 || info.rank >= info.nranks) {
    return invalidArgument(value(names.rank) + " is outside [0, " + names.nranks + "=" +
                           std::to_string(info.nranks) + ")");
  }
  bool localNranksGiven = &names == &kSlurm ? info.localNranks != 0 : env::isSet(names.localNranks);
  if (localNranksGiven && (info.localNranks < 1 || info.localNranks > info.nranks)) {
    return invalidArgument(value(names.localNranks) + " is outside [1, " + names.nranks + "=" +
                           std::to_string(info.nranks) + "]");
  }
  if (env::isSet(names.localRank)) {
    int limit = info.localNranks > 0 ? info.localNranks : info.nranks;
    if (info.localRank < 0 || info.localRank >= limit) {
      return invalidArgument(value(names.localRank) + " is outside [0, " + std::to_string(limit) +
                             ")");
    }
  }
  return Status::ok();
}

// SLURM_TASKS_PER_NODE is "4" or "4(x2)" when every node runs the same number of tasks; other
// forms ("2(x3),1") leave the local size unknown rather than failing.
int slurmLocalSize(const std::string& text) {
  size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  if (digits == 0) return 0;
  std::string rest = text.substr(digits);
  if (!rest.empty()) {
    if (rest.size() < 4 || rest.rfind("(x", 0) != 0 || rest.back() != ')') return 0;
    std::optional<int> nodes = parseInt(rest.substr(2, rest.size() - 3));
    if (!nodes || *nodes < 1) return 0;
  }
  return parseInt(text.substr(0, digits)).value_or(0);
}

uint16_t derivedPort(const std::string& seed) {
  // FNV-1a: stable across processes and builds, unlike std::hash.
  uint64_t hash = 1469598103934665603ull;
  for (unsigned char c : seed) hash = (hash ^ c) * 1099511628211ull;
  return static_cast<uint16_t>(kDerivedPortBase + hash % kDerivedPorts);
}

// Single-host jobs can agree on a loopback rendezvous derived from the job id; across hosts
// rank 0's address is unknown, so the user must say it.
Status singleHostRoot(const LaunchInfo& info, const Names& names, const char* jobVariable,
                      const std::string& jobSeed, std::string* rootText) {
  if (info.localNranks != info.nranks) {
    std::string local = info.localNranks > 0 ? std::to_string(info.localNranks) : "unknown";
    return invalidArgument("WEFT_ROOT_ADDR is not set, and the job spans several hosts (" +
                           std::string(names.localNranks) + " gives " + local + " local ranks of " +
                           std::to_string(info.nranks) +
                           "): set WEFT_ROOT_ADDR to host:port where rank 0 can listen");
  }
  if (jobSeed.empty()) {
    return invalidArgument(std::string("neither WEFT_ROOT_ADDR nor ") + jobVariable +
                           " is set; cannot choose a rendezvous port");
  }
  *rootText = "127.0.0.1:" + std::to_string(derivedPort(jobSeed));
  return Status::ok();
}

Status torchrunRoot(std::string* rootText) {
  std::optional<std::string> host = env::get("MASTER_ADDR");
  if (!host) return invalidArgument("neither WEFT_ROOT_ADDR nor MASTER_ADDR is set");
  int masterPort = 0;
  WEFT_TRY(
      readInt("MASTER_PORT", true, &masterPort).withContext("torchrun without WEFT_ROOT_ADDR"));
  if (masterPort < 1 || masterPort > 65534) {
    return invalidArgument("MASTER_PORT='" + env::getString("MASTER_PORT") +
                           "' leaves no room for weft's port MASTER_PORT+1");
  }
  bool ipv6 = host->find(':') != std::string::npos && host->front() != '[';
  *rootText = (ipv6 ? "[" + *host + "]" : *host) + ":" + std::to_string(masterPort + 1);
  return Status::ok();
}

}  // namespace

bool launcherDetected() {
  for (const char* key : {"WEFT_RANK", "WEFT_NRANKS", "RANK", "WORLD_SIZE", "OMPI_COMM_WORLD_RANK",
                          "OMPI_COMM_WORLD_SIZE", "SLURM_PROCID"}) {
    if (env::isSet(key)) return true;
  }
  return false;
}

Status readLaunchEnvironment(LaunchInfo* out) {
  LaunchInfo info;
  const Names* names = nullptr;
  std::optional<std::string> rootOverride = env::get("WEFT_ROOT_ADDR");
  std::string rootText;
  const char* rootVariable = "WEFT_ROOT_ADDR";
  std::string jobSeed;

  if (env::isSet("WEFT_RANK") || env::isSet("WEFT_NRANKS")) {
    info.launcher = "weftrun";
    names = &kWeftrun;
    WEFT_TRY(readCounts(*names, &info));
    if (!rootOverride) return invalidArgument("WEFT_ROOT_ADDR is not set (weftrun sets it)");
  } else if (env::isSet("RANK") || env::isSet("WORLD_SIZE")) {
    info.launcher = "torchrun";
    names = &kTorchrun;
    WEFT_TRY(readCounts(*names, &info));
    if (!rootOverride) {
      WEFT_TRY(torchrunRoot(&rootText));
      rootVariable = "MASTER_ADDR:MASTER_PORT+1";
    }
  } else if (env::isSet("OMPI_COMM_WORLD_RANK") || env::isSet("OMPI_COMM_WORLD_SIZE")) {
    info.launcher = "openmpi";
    names = &kOpenMpi;
    WEFT_TRY(readCounts(*names, &info));
    jobSeed = env::getString("OMPI_MCA_ess_base_jobid");
    if (!rootOverride) {
      WEFT_TRY(validate(*names, info));
      WEFT_TRY(singleHostRoot(info, *names, "OMPI_MCA_ess_base_jobid", jobSeed, &rootText));
      rootVariable = "the root derived from OMPI_MCA_ess_base_jobid";
    }
  } else if (env::isSet("SLURM_PROCID")) {
    info.launcher = "slurm";
    names = &kSlurm;
    WEFT_TRY(readCounts(*names, &info));
    info.localNranks = slurmLocalSize(env::getString("SLURM_TASKS_PER_NODE"));
    if (std::optional<std::string> job = env::get("SLURM_JOB_ID")) {
      jobSeed = *job + "." + env::getString("SLURM_STEP_ID");
    }
    if (!rootOverride) {
      WEFT_TRY(validate(*names, info));
      WEFT_TRY(singleHostRoot(info, *names, "SLURM_JOB_ID", jobSeed, &rootText));
      rootVariable = "the root derived from SLURM_JOB_ID";
    }
  } else {
    return invalidArgument(
        "no launcher environment found: set WEFT_RANK, WEFT_NRANKS and WEFT_ROOT_ADDR, or run "
        "under torchrun, Open MPI or Slurm");
  }
  WEFT_TRY(validate(*names, info));

  if (rootOverride) rootText = *rootOverride;
  Status parsed = net::SocketAddress::parse(rootText, &info.root);
  if (!parsed.isOk()) {
    return invalidArgument(std::string(rootVariable) + "='" + rootText + "': " + parsed.message());
  }
  if (info.root.port() == 0) {
    return invalidArgument(std::string(rootVariable) + "='" + rootText + "' has port 0");
  }

  if (std::optional<std::string> passphrase = env::get("WEFT_SECRET")) {
    info.secret = net::secretFromPassphrase(*passphrase);
    info.secretFromEnv = true;
  } else {
    // The root's text, not its resolved address: a host name may resolve differently per host.
    info.secret = net::secretFromPassphrase("weft derived secret\n" + info.launcher + "\n" +
                                            rootText + "\n" + jobSeed);
    info.secretFromEnv = false;
  }
  *out = std::move(info);
  return Status::ok();
}

}  // namespace weft::bootstrap
