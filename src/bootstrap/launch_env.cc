// Launchers are recognised by their rank variables, in the order the header gives. Whatever the
// launcher, WEFT_ROOT_ADDR wins when set. Without WEFT_SECRET the secret is derived from public
// job facts (launcher, root address text, job id): that keeps two jobs that share a host and port
// from joining each other by accident, but anyone who can read those facts can derive it, so it
// is no protection against an attacker. Set WEFT_SECRET for that.
#include "bootstrap/launch_env.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <optional>
#include <vector>

#include <unistd.h>

#include "base/env.h"
#include "bootstrap/pmi1_client.h"
#include "bootstrap/pmix_client.h"
#include "bootstrap/slurm_hostlist.h"

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
constexpr Names kMvapich = {"MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_SIZE",
                            "MV2_COMM_WORLD_LOCAL_RANK", "MV2_COMM_WORLD_LOCAL_SIZE"};
// MPICH's Hydra, Intel MPI: PMI-1 names only the rank and the size.
constexpr Names kPmi = {"PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"};

// A launcher family and how deep it sits: a launcher may start another (srun or mpirun
// starting torchrun agents, an sbatch script calling mpirun), and the process belongs to the
// innermost one, whose variables were set last. Families of the same depth that disagree are
// a conflict.
struct Family {
  const char* launcher;
  const Names* names;
  int depth;              // 0: innermost
  const char* startedBy;  // for messages
};

constexpr Family kFamilies[] = {
    {"weftrun", &kWeftrun, 0, "weftrun"},
    {"torchrun", &kTorchrun, 1, "torchrun"},
    {"openmpi", &kOpenMpi, 2, "Open MPI's mpirun"},
    {"mvapich", &kMvapich, 2, "MVAPICH's mpirun_rsh or mpiexec"},
    {"pmi", &kPmi, 2, "a PMI-1 launcher (MPICH's or Intel MPI's mpiexec)"},
    {"slurm", &kSlurm, 3, "Slurm"},
};

// Slurm's PMI-2 (srun --mpi=pmi2) sets PMI variables of its own protocol: Slurm's variables
// stand then.
bool slurmPmi2() {
  return env::getString("SLURM_MPI_TYPE").rfind("pmi2", 0) == 0;
}

// The rank variable makes a family present; a size alone (WORLD_SIZE exported into a job's
// environment by hand, say) does not, but is still a claim of several ranks that must not be
// ignored when nothing else explains it. A PMI-1 server's socket makes the PMI family present
// even without PMI_RANK: under Hydra's -pmi-port only the socket says the rank.
bool present(const Family& family) {
  if (family.names == &kPmi) return !slurmPmi2() && (env::isSet("PMI_RANK") || pmi1Detected());
  return env::isSet(family.names->rank);
}

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

// The number of this rank's node-mates: the step's task counts per node (srun sets
// SLURM_STEP_TASKS_PER_NODE; SLURM_TASKS_PER_NODE is the allocation's in an sbatch script and the
// step's within srun). Uneven counts ("2(x3),1") are resolved by SLURM_NODEID, this node's index
// in the step's node list; without it they leave the local size unknown (0).
Status slurmLocalNranks(int* out) {
  const char* variable = env::isSet("SLURM_STEP_TASKS_PER_NODE") ? "SLURM_STEP_TASKS_PER_NODE"
                                                                 : "SLURM_TASKS_PER_NODE";
  *out = 0;
  std::optional<std::string> text = env::get(variable);
  if (!text) return Status::ok();
  std::vector<int> counts;
  WEFT_TRY(expandSlurmTaskCounts(*text, variable, &counts));
  if (std::all_of(counts.begin(), counts.end(), [&](int n) { return n == counts[0]; })) {
    *out = counts[0];
    return Status::ok();
  }
  std::optional<int> node = parseInt(env::getString("SLURM_NODEID"));
  if (node && *node >= 0 && static_cast<size_t>(*node) < counts.size()) *out = counts[*node];
  return Status::ok();
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
  if (info.nranks > 1 && info.localNranks != info.nranks) {  // one rank is on one host
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

// Slurm without PMIx, across hosts: every rank names rank 0's host from the step's node list, and
// the port is derived from the job and step ids, the same rule on every rank. What this relies on
// was checked with slurmctld/slurmd 22.05 (tests/cluster/slurm_cluster.sh): task 0 runs on the
// first node of SLURM_STEP_NODELIST under the block (default) and cyclic distributions, and
// with -w, whose list Slurm sorts into its own node order; only -m arbitrary (SLURM_HOSTFILE)
// puts it elsewhere, and then srun exports SLURM_DISTRIBUTION=arbitrary. Within an allocation
// SLURM_NODELIST and SLURM_JOB_NODELIST are the allocation's, not the step's, hence the last
// resorts. Slurm's node names must resolve to the nodes (the usual set-up); rank 0 binds the
// wildcard where its name resolves to an address it does not have.
Status slurmRoot(const LaunchInfo& info, const std::string& jobSeed, std::string* rootText,
                 std::string* rootVariable) {
  const char* listVariable = nullptr;
  for (const char* name : {"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST"}) {
    if (env::isSet(name)) {
      listVariable = name;
      break;
    }
  }
  if (listVariable == nullptr) {
    return invalidArgument(
        "WEFT_ROOT_ADDR is not set, the Slurm job spans several hosts (SLURM_TASKS_PER_NODE='" +
        env::getString("SLURM_TASKS_PER_NODE") +
        "'), and no SLURM_STEP_NODELIST says where rank 0 runs: start the ranks with srun, or set "
        "WEFT_ROOT_ADDR to host:port where rank 0 can listen");
  }
  if (jobSeed.empty()) {
    return invalidArgument(
        "neither WEFT_ROOT_ADDR nor SLURM_JOB_ID is set; cannot choose a rendezvous port");
  }
  std::string distribution = env::getString("SLURM_DISTRIBUTION");
  if (distribution.rfind("arbitrary", 0) == 0) {
    return invalidArgument("SLURM_DISTRIBUTION='" + distribution +
                           "' places task 0 on any node of the step: set WEFT_ROOT_ADDR to "
                           "host:port on rank 0's node");
  }
  std::vector<std::string> hosts;
  WEFT_TRY(expandSlurmHostList(env::getString(listVariable), listVariable, &hosts));
  // Only rank 0 can check the rule, and does: the others would wait for it in vain.
  std::optional<int> node = parseInt(env::getString("SLURM_NODEID"));
  if (info.rank == 0 && node && *node != 0) {
    return invalidArgument("SLURM_PROCID=0 runs on node " + std::to_string(*node) + " of " +
                           listVariable + "='" + env::getString(listVariable) +
                           "' (SLURM_NODEID), not its first: set WEFT_ROOT_ADDR to host:port on "
                           "this node");
  }
  *rootText = hosts.front() + ":" + std::to_string(derivedPort(jobSeed));
  *rootVariable = std::string("the root derived from ") + listVariable + " (its first node) and " +
                  "SLURM_JOB_ID (set WEFT_ROOT_ADDR where Slurm's node names are not host names)";
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

// "RANK=0 WORLD_SIZE=4", for messages.
std::string describe(const Family& family) {
  return std::string(family.names->rank) + "=" + env::getString(family.names->rank) + " " +
         family.names->nranks + "=" + env::getString(family.names->nranks);
}

// A size variable of more than one rank, without its family's rank variable.
const Family* claimOfSeveralRanks() {
  for (const Family& family : kFamilies) {
    if (present(family)) continue;
    std::optional<int> size = parseInt(env::getString(family.names->nranks));
    if (size && *size > 1) return &family;
  }
  return nullptr;
}

// Slurm sets SLURM_PROCID in an sbatch script too, for the script itself: a process started there
// without srun is alone, whatever SLURM_NTASKS says.
Status checkStartedBySrun(const Family& slurm) {
  if (env::isSet("SLURM_STEP_ID") || env::isSet("SLURM_STEPID")) return Status::ok();
  std::optional<int> tasks = parseInt(env::getString("SLURM_NTASKS"));
  if (!tasks || *tasks <= 1) return Status::ok();
  return invalidArgument(describe(slurm) +
                         " come from a Slurm allocation, but this process was not started by "
                         "srun (SLURM_STEP_ID is not set): a lone process would wait for " +
                         std::to_string(*tasks - 1) +
                         " ranks that never come. Start the ranks with srun (e.g. `srun "
                         "./program`) inside the sbatch script");
}

// The launcher that started this process: the innermost family whose rank variable is set.
// Families of the same depth (Open MPI's and PMI's variables, say) must agree.
Status chooseFamily(const Family** out) {
  const Family* chosen = nullptr;
  for (const Family& family : kFamilies) {
    if (!present(family)) continue;
    if (chosen == nullptr) {
      chosen = &family;
      continue;
    }
    if (family.depth != chosen->depth) break;  // an outer launcher, which started this one
    if (env::getString(family.names->rank) != env::getString(chosen->names->rank) ||
        env::getString(family.names->nranks) != env::getString(chosen->names->nranks)) {
      return invalidArgument("conflicting launcher variables: " + describe(*chosen) + " (" +
                             chosen->startedBy + ") but " + describe(family) + " (" +
                             family.startedBy + "); unset the stale ones");
    }
  }
  if (chosen == nullptr) {
    if (const Family* claim = claimOfSeveralRanks()) {
      return invalidArgument(std::string(claim->names->nranks) + "=" +
                             env::getString(claim->names->nranks) + " says the job has " +
                             env::getString(claim->names->nranks) + " ranks (" + claim->startedBy +
                             "), but " + claim->names->rank +
                             " is not set: this process cannot tell which rank it is");
    }
    if (std::optional<std::string> rank = env::get("PMIX_RANK")) {
      std::string why;
      if (pmixDetected() && pmixAvailable(&why)) {
        *out = nullptr;  // PMIx alone: its store says the rank and the size
        return Status::ok();
      }
      if (why.empty()) why = "PMIX_NAMESPACE is not set";
      return invalidArgument("PMIX_RANK=" + *rank +
                             " says a PMIx launcher (Open MPI's mpirun, srun --mpi=pmix) "
                             "started this process, but weft cannot reach its PMIx server: " +
                             why + ". Set WEFT_RANK, WEFT_NRANKS and WEFT_ROOT_ADDR instead");
    }
    return invalidArgument(
        "no launcher environment found: set WEFT_RANK, WEFT_NRANKS and WEFT_ROOT_ADDR, or run "
        "under torchrun, Open MPI, MPICH, MVAPICH or Slurm");
  }
  if (chosen->names == &kSlurm) WEFT_TRY(checkStartedBySrun(*chosen));
  *out = chosen;
  return Status::ok();
}

// What identifies the job, for a single-host rendezvous port and the derived secret.
std::string jobSeedOf(const Names& names) {
  if (&names == &kOpenMpi) return env::getString("OMPI_MCA_ess_base_jobid");
  if (&names != &kSlurm) return "";
  std::optional<std::string> job = env::get("SLURM_JOB_ID");
  return job ? *job + "." + env::getString("SLURM_STEP_ID") : "";
}

// Launchers whose rendezvous weft cannot derive: WEFT_ROOT_ADDR must say where rank 0 listens.
Status requireRoot(const Family& family) {
  return invalidArgument(describe(family) + " say this process is one of " +
                         env::getString(family.names->nranks) + " ranks started by " +
                         family.startedBy +
                         ", but weft cannot find rank 0 through that launcher: set "
                         "WEFT_ROOT_ADDR to host:port where rank 0 can listen (the same on "
                         "every rank), and WEFT_SECRET");
}

}  // namespace

std::string secretAdvice(const std::string& launcher) {
  if (launcher == "slurm") {
    return "export WEFT_SECRET=$(openssl rand -hex 32) before srun or sbatch (Slurm passes the "
           "environment on to every rank)";
  }
  if (launcher == "torchrun") {
    return "export WEFT_SECRET=$(openssl rand -hex 32) on every node before torchrun (its "
           "workers inherit the agent's environment)";
  }
  if (launcher == "openmpi") {
    return "export WEFT_SECRET=$(openssl rand -hex 32); mpirun -x WEFT_SECRET ...";
  }
  return "export WEFT_SECRET=$(openssl rand -hex 32) where the launcher passes it on to every "
         "rank, or give every rank the same value";
}

bool launcherDetected() {
  for (const Family& family : kFamilies) {
    if (present(family)) return true;
  }
  return claimOfSeveralRanks() != nullptr || env::isSet("PMIX_RANK");
}

Status readLaunchEnvironment(LaunchInfo* out) {
  LaunchInfo info;
  const Family* family = nullptr;
  WEFT_TRY(chooseFamily(&family));
  std::optional<std::string> rootOverride = env::get("WEFT_ROOT_ADDR");
  if (family == nullptr) {  // PMIx's variables alone (Open MPI 5 may set no others)
    info.launcher = "pmix";
    info.store = JobStoreKind::pmix;
    *out = std::move(info);
    return Status::ok();
  }
  const Names* names = family->names;
  info.launcher = family->launcher;
  std::string rootText;
  std::string rootVariable = "WEFT_ROOT_ADDR";
  const std::string jobSeed = jobSeedOf(*names);

  if (names == &kPmi && pmi1Detected() && !rootOverride) {
    info.store = JobStoreKind::pmi1;  // rank, size, root and secret come through the PMI server
    *out = std::move(info);
    return Status::ok();
  }
  WEFT_TRY(readCounts(*names, &info));
  if (names == &kSlurm) WEFT_TRY(slurmLocalNranks(&info.localNranks));
  WEFT_TRY(validate(*names, info));
  // Open MPI's mpirun and srun --mpi=pmix serve PMIx: rank 0's unique id goes through it, on
  // one host or many, with a secret of its own. Inner launchers (weftrun, torchrun) started
  // under them inherit PMIx variables that name their parent, so those never use it.
  if ((names == &kOpenMpi || names == &kSlurm) && !rootOverride && pmixDetected() &&
      pmixAvailable(nullptr)) {
    info.store = JobStoreKind::pmix;
    *out = std::move(info);
    return Status::ok();
  }
  if (!rootOverride) {
    if (names == &kWeftrun) {
      return invalidArgument("WEFT_ROOT_ADDR is not set (weftrun sets it)");
    } else if (names == &kTorchrun) {
      WEFT_TRY(torchrunRoot(&rootText));
      rootVariable = "MASTER_ADDR:MASTER_PORT+1";
    } else if (names == &kOpenMpi) {
      Status derived = singleHostRoot(info, *names, "OMPI_MCA_ess_base_jobid", jobSeed, &rootText);
      std::string why;
      if (!derived.isOk() && pmixDetected() && !pmixAvailable(&why)) {
        return Status(derived.code(),
                      derived.message() + " (or let weft use Open MPI's PMIx server: " + why + ")");
      }
      WEFT_TRY(derived);
      rootVariable = "the root derived from OMPI_MCA_ess_base_jobid";
    } else if (names == &kSlurm && (info.nranks == 1 || info.localNranks == info.nranks)) {
      WEFT_TRY(singleHostRoot(info, *names, "SLURM_JOB_ID", jobSeed, &rootText));
      rootVariable = "the root derived from SLURM_JOB_ID";
    } else if (names == &kSlurm) {
      WEFT_TRY(slurmRoot(info, jobSeed, &rootText, &rootVariable));
    } else if (info.nranks > 1) {
      return requireRoot(*family);
    } else {
      // A job of one rank: its rendezvous is its own.
      rootText =
          "127.0.0.1:" + std::to_string(derivedPort(info.launcher + std::to_string(getpid())));
    }
  }

  if (rootOverride) rootText = *rootOverride;
  Status parsed = net::SocketAddress::parse(rootText, &info.root);
  if (!parsed.isOk()) {
    return invalidArgument(rootVariable + "='" + rootText + "': " + parsed.message());
  }
  if (info.root.port() == 0) {
    return invalidArgument(rootVariable + "='" + rootText + "' has port 0");
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
