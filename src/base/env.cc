#include "base/env.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "base/log.h"

namespace weft::env {
namespace {

// Keep alphabetical within each group; docs/ENVIRONMENT.md is generated from this table.
constexpr Variable kVariables[] = {
    // Logging.
    {"WEFT_DEBUG", "WARN", "Log level: NONE, WARN, INFO or TRACE."},
    {"WEFT_DEBUG_FILE", "",
     "Write log lines to this file instead of stderr; %h is replaced by the host name, %p by the "
     "pid."},
    // Communicator behaviour.
    {"WEFT_ALGO", "",
     "Force algorithms, e.g. 'ring', 'allreduce=ring,broadcast=chain', or per size range "
     "'allreduce:0-16K=tree,allreduce:16K-=ring' (bytes of the call's count; names: "
     "docs/ALGORITHMS.md); 'allreduce=two_level_leader/ring' also names a two-level algorithm's "
     "stage among nodes, and 'allreduce=ring@128K' the slice of one that pipelines. Sizes no "
     "rule covers stay with the tuner."},
    {"WEFT_BIND", "none",
     "Bind this process to one CPU at init, round robin over its machine's ranks (one thread of "
     "every core before a second of any, within the CPUs it may use): none, core, or auto (only "
     "where the machine's ranks outnumber its CPUs). weftrun sets auto unless told otherwise "
     "(--bind-to)."},
    {"WEFT_BUFFERS", "auto",
     "Where call buffers live: auto (a process that has loaded the CUDA driver asks it about "
     "each call's buffers; any other process's are host memory), host (never ask), or device "
     "(every non-empty buffer is GPU memory; for memory the lookup cannot classify)."},
    {"WEFT_CHECK", "0",
     "1: before each collective the ranks compare its arguments (collective, count, datatype, "
     "op, root) and a mismatch fails the call on every rank with weftInvalidUsage instead of "
     "hanging. Costs one small exchange per call."},
    {"WEFT_HOSTID", "", "Override the host identity (ranks with equal ids form a node)."},
    {"WEFT_SLICE_BYTES", "524288",
     "Pipelining unit of the ring and chain algorithms for large messages, in bytes."},
    {"WEFT_SPIN_US", "-1",
     "Microseconds a wait polls before it blocks (-1: 50). Where a host's ranks outnumber its "
     "cores each poll yields the core first."},
    {"WEFT_TIMEOUT", "300", "Seconds any internal wait may take before the call fails."},
    {"WEFT_TUNE_CALIBRATE", "0",
     "1: measure each node's network link and the shared-memory link with short ping-pongs at "
     "init (about 0.1-0.5 s) unless rank 0 has them cached in ~/.cache/weft; 2: measure now and "
     "refresh the cache. The measured links replace WEFT_TUNE_NET and WEFT_TUNE_SHM."},
    {"WEFT_TUNE_COPY", "25GB/s,10us",
     "The cost model's copies between a GPU and pinned host memory, which staged device calls "
     "pay (docs/CUDA.md)."},
    {"WEFT_TUNE_FILE", "",
     "Measured tuning tables (weft_tune measure): files or directories of *.txt files, separated "
     "by ':'. A communicator uses the first table measured on a layout like its own; unset, "
     "$XDG_CONFIG_HOME/weft/tuning (or ~/.config/weft/tuning) and /etc/weft/tuning are searched. "
     "Every rank must load the same table."},
    {"WEFT_TUNE_GPU", "1000GB/s,15us",
     "The cost model's GPU link: one GPU's memory as the device-direct kernels of the ranks "
     "sharing it use it together, and the latency of a kernel and its wait (docs/CUDA.md)."},
    {"WEFT_TUNE_NET", "10Gbit,25us",
     "The cost model's network link between nodes: bandwidth and per-message latency, e.g. "
     "'1Gbit,50us' or '3GB/s,10us' (either part may be left out). Set it to what the network "
     "really delivers; weft_tune shows what changes."},
    {"WEFT_TUNE_ONLINE", "0",
     "Online refinement: where the cost model ranks candidates within its error of each other, "
     "the first calls of each call shape try them in turn, this many timed calls each, and the "
     "ranks agree on the fastest (0: off; docs/TUNING.md). Shapes a table or WEFT_ALGO decides "
     "are never tried."},
    {"WEFT_TUNE_RDMA", "100Gbit,3us",
     "The cost model's network link when rdma carries it (unless WEFT_TUNE_NET is set, which "
     "then describes the network whatever serves it)."},
    {"WEFT_TUNE_SHM", "4GB/s,2us",
     "The cost model's shared-memory link between ranks of a node: bandwidth per rank and "
     "per-message latency."},
    {"WEFT_TOPO", "",
     "Describe the machine to weft instead of reading it with hwloc: an hwloc XML file, or a "
     "synthetic description like 'pack:2 numa:2 core:4 pu:2' (for tests and studies)."},
    {"WEFT_TRANSPORT", "",
     "Force one transport for every peer: tcp, shm (every rank on one host) or rdma (every rank "
     "needs a usable RDMA port). Default: shm between ranks with the same host identity; between "
     "hosts rdma when every rank has a usable RDMA port, else tcp."},
    // Shared memory.
    {"WEFT_SHM_CMA_MIN_BYTES", "65536",
     "Messages of at least this many bytes between ranks of a host are read in place with "
     "process_vm_readv (one copy) where the kernel allows it; 0 turns that off."},
    {"WEFT_SHM_WINDOW_BYTES", "8388608",
     "Shared window per rank for the direct intra-host algorithms, in bytes."},
    // RDMA.
    {"WEFT_IBVERBS_LIB", "libibverbs.so.1",
     "The libibverbs library the rdma transport loads at run time (a file name or path); tests "
     "point it at the project's fake."},
    {"WEFT_IB_GID_INDEX", "-1",
     "GID table index of the RDMA port; -1 chooses: on RoCE an IPv4-mapped RoCE v2 GID first, "
     "then any RoCE v2 GID, then any non-empty one."},
    {"WEFT_IB_HCA", "",
     "RDMA devices to use, NCCL_IB_HCA's syntax: 'mlx5_0:1,mlx5_1' (prefixes; ':port' picks the "
     "port), '^mlx5_1' excludes, '=mlx5_0' exact names. Default: the first device with an ACTIVE "
     "port and a usable GID."},
    {"WEFT_RDMA_REG_CACHE_BYTES", "1073741824",
     "Idle registrations of user buffers the rdma transport keeps within an operation before it "
     "evicts the least recently used, in bytes."},
    {"WEFT_RDMA_SLOTS", "16",
     "Staging slots per peer and direction of the rdma transport (2..1024): how many eager "
     "chunks may be in flight to a peer."},
    {"WEFT_RDMA_SLOT_BYTES", "65536",
     "Size of one rdma staging slot, header included (4096..16777216, a multiple of 64): the "
     "eager chunk size."},
    {"WEFT_RDMA_ZCOPY_BYTES", "65536",
     "Messages of at least this many bytes go zero-copy over rdma (written straight into the "
     "receiver's registered buffer); smaller ones are staged. 0 stages everything."},
    // TCP.
    {"WEFT_NSOCKS", "1",
     "TCP sockets per peer (1..16); messages of 256 KiB and more are striped over them. More than "
     "one helps on links where a single TCP flow cannot fill the path."},
    {"WEFT_RUNTIME_CONNECT", "1",
     "1: a TCP pair connects the first time something is posted between its ranks, so a job "
     "connects only the pairs its algorithms use. 0: every pair connects while the communicator "
     "is created (failures show at init, first calls pay nothing). As NCCL_RUNTIME_CONNECT."},
    {"WEFT_SOCKET_FAMILY", "", "AF_INET or AF_INET6: the address family to use."},
    {"WEFT_SOCKET_IFNAME", "",
     "Interfaces to use: a comma list of prefixes, '^' to exclude, '=' for exact names "
     "(NCCL_SOCKET_IFNAME's syntax). Default: every interface that is up but docker* and virbr*, "
     "non-loopback first."},
    {"NCCL_SOCKET_IFNAME", "",
     "Read as WEFT_SOCKET_IFNAME when that is not set, so that NCCL job scripts pick the same "
     "interfaces."},
    // The torch.distributed backend (bindings/torch).
    {"WEFT_TORCH_DEFER_BYTES", "1048576",
     "A collective of at most this many bytes (the tensors weft reads and writes), issued while "
     "no earlier call of the group is outstanding, is held until its Work is waited on and then "
     "runs on the waiting thread; it is queued instead once the group's next call, get_future() "
     "or is_completed() needs it, or after 1 ms. 0 queues every call (docs/TORCH.md)."},
    {"WEFT_TORCH_P2P_COMM", "1",
     "1 gives each group's send, recv, isend and irecv a communicator of their own, split from "
     "the group's at creation, so that a pending send or receive never meets a collective's "
     "message; 0 keeps them on the group's communicator (cheaper groups; docs/TORCH.md)."},
    // Launch (set by weftrun, or by the user for other launchers).
    {"WEFT_LOCAL_NRANKS", "", "Ranks on this host (weftrun sets it)."},
    {"WEFT_LOCAL_RANK", "", "Rank within this host (weftrun sets it)."},
    {"WEFT_NRANKS", "", "Number of ranks (weftrun sets it)."},
    {"WEFT_RANK", "", "This process's rank (weftrun sets it)."},
    {"WEFT_ROOT_ADDR", "",
     "host:port where rank 0 listens for the rendezvous, overriding what the launcher gives "
     "(weftrun sets it; torchrun: MASTER_ADDR:MASTER_PORT+1; Slurm: the step's first node; "
     "Open MPI, srun --mpi=pmix and Hydra: none needed, the launcher's store carries the id). "
     "Needed under MVAPICH."},
    {"WEFT_SECRET", "",
     "Shared secret authenticating every connection of an environment-initialised job."},
    {"WEFT_PMIX_LIB", "libpmix.so.2",
     "The PMIx client library loaded at run time under a PMIx launcher (a file name or path)."},
    // Launcher variables weft reads.
    {"LOCAL_RANK", "", "torchrun: rank within the host."},
    {"LOCAL_WORLD_SIZE", "", "torchrun: ranks on this host."},
    {"MASTER_ADDR", "", "torchrun: rendezvous host."},
    {"MASTER_PORT", "", "torchrun: rendezvous port (weft uses MASTER_PORT+1)."},
    {"OMPI_COMM_WORLD_LOCAL_RANK", "", "Open MPI: rank within the host."},
    {"OMPI_COMM_WORLD_LOCAL_SIZE", "", "Open MPI: ranks on this host."},
    {"OMPI_COMM_WORLD_RANK", "", "Open MPI: rank."},
    {"OMPI_COMM_WORLD_SIZE", "", "Open MPI: number of ranks."},
    {"OMPI_MCA_ess_base_jobid", "", "Open MPI: job id (seeds a single-host rendezvous port)."},
    {"MPI_LOCALNRANKS", "", "MPICH's Hydra, Intel MPI: ranks on this host."},
    {"MPI_LOCALRANKID", "", "MPICH's Hydra, Intel MPI: rank within the host."},
    {"MV2_COMM_WORLD_LOCAL_RANK", "", "MVAPICH: rank within the host."},
    {"MV2_COMM_WORLD_LOCAL_SIZE", "", "MVAPICH: ranks on this host."},
    {"MV2_COMM_WORLD_RANK", "", "MVAPICH: rank."},
    {"MV2_COMM_WORLD_SIZE", "", "MVAPICH: number of ranks."},
    {"PMI_FD", "",
     "MPICH Hydra (PMI-1): the inherited socket to the launcher (mpiexec.hydra, Intel MPI)."},
    {"PMI_ID", "", "MPICH Hydra (PMI-1): this process's id on PMI_PORT's initack."},
    {"PMI_PORT", "",
     "MPICH Hydra (PMI-1): host:port of the launcher when it passes no PMI_FD "
     "(mpiexec.hydra -pmi-port)."},
    {"PMI_RANK", "", "MPICH Hydra (PMI-1): rank (unset under PMI_PORT, where the launcher says)."},
    {"PMI_SIZE", "",
     "MPICH Hydra (PMI-1): number of ranks (unset under PMI_PORT, where the launcher says)."},
    {"PMIX_NAMESPACE", "",
     "PMIx launchers (Open MPI's mpirun, srun --mpi=pmix): the job's namespace; with PMIX_RANK "
     "it makes weft rendezvous through the launcher's PMIx server."},
    {"PMIX_RANK", "", "PMIx launchers (Open MPI's mpirun, srun --mpi=pmix): rank."},
    {"RANK", "", "torchrun: rank."},
    {"SLURM_DISTRIBUTION", "",
     "Slurm: srun's task distribution; 'arbitrary' (a hostfile) may put rank 0 on any node, so "
     "WEFT_ROOT_ADDR must say where."},
    {"SLURM_JOB_ID", "", "Slurm: job id (seeds the rendezvous port and the derived secret)."},
    {"SLURM_JOB_NODELIST", "",
     "Slurm: the allocation's nodes; where SLURM_STEP_NODELIST is missing, rank 0's host is "
     "its first (wrong for a step on a subset of the allocation, which srun always describes)."},
    {"SLURM_LOCALID", "", "Slurm: rank within the host."},
    {"SLURM_MPI_TYPE", "",
     "Slurm: srun's --mpi plugin; under pmi2 the PMI_* variables are Slurm's."},
    {"SLURM_NODEID", "",
     "Slurm: this node's index in the step's node list; picks the local size out of uneven "
     "SLURM_STEP_TASKS_PER_NODE, and on rank 0 checks that it runs on the list's first node."},
    {"SLURM_NODELIST", "", "Slurm: the older name of SLURM_JOB_NODELIST (the allocation's too)."},
    {"SLURM_NTASKS", "", "Slurm: number of ranks."},
    {"SLURM_PROCID", "", "Slurm: rank."},
    {"SLURM_STEP_ID", "",
     "Slurm: step id (seeds a single-host rendezvous port); srun sets it, an sbatch script has "
     "none."},
    {"SLURM_STEP_NODELIST", "",
     "Slurm: the step's nodes, e.g. 'node[01-04]'; without WEFT_ROOT_ADDR rank 0 of a step "
     "across hosts listens on the first, at a port derived from SLURM_JOB_ID and SLURM_STEP_ID."},
    {"SLURM_STEP_TASKS_PER_NODE", "",
     "Slurm: the step's ranks per host, e.g. '2(x3),1'; read before SLURM_TASKS_PER_NODE."},
    {"SLURM_STEPID", "", "Slurm: the older name of SLURM_STEP_ID."},
    {"SLURM_TASKS_PER_NODE", "", "Slurm: ranks per host, e.g. '4(x2)'."},
    {"WORLD_SIZE", "", "torchrun: number of ranks."},
    // System variables weft reads.
    {"HOME", "",
     "The calibration cache lives in $HOME/.cache/weft unless XDG_CACHE_HOME is set; tuning "
     "tables are searched in $HOME/.config/weft/tuning unless XDG_CONFIG_HOME is set."},
    {"XDG_CACHE_HOME", "", "The calibration cache lives in $XDG_CACHE_HOME/weft when set."},
    {"XDG_CONFIG_HOME", "", "Tuning tables are searched in $XDG_CONFIG_HOME/weft/tuning when set."},
};

const Variable& find(const char* name) {
  for (const Variable& v : kVariables) {
    if (std::strcmp(v.name, name) == 0) return v;
  }
  std::fprintf(stderr, "weft: internal error: environment variable %s is not in the table\n", name);
  std::abort();
}

}  // namespace

std::span<const Variable> table() {
  return kVariables;
}

std::optional<std::string> get(const char* name) {
  find(name);
  const char* value = std::getenv(name);
  if (value == nullptr || value[0] == '\0') return std::nullopt;
  return std::string(value);
}

bool isSet(const char* name) {
  return get(name).has_value();
}

std::string getString(const char* name) {
  auto value = get(name);
  return value ? *value : std::string(find(name).defaultValue);
}

int64_t getInt(const char* name) {
  const Variable& var = find(name);
  auto value = get(name);
  const char* text = value ? value->c_str() : var.defaultValue;
  if (text[0] == '\0') return 0;
  char* end = nullptr;
  errno = 0;
  long long parsed = std::strtoll(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0') {
    WEFT_WARN("%s='%s' is not an integer; using the default %s", name, text, var.defaultValue);
    return std::strtoll(var.defaultValue, nullptr, 10);
  }
  return parsed;
}

Status getBounded(const char* name, int64_t min, int64_t max, int64_t* out) {
  *out = getInt(name);
  if (*out < min || *out > max) {
    return invalidArgument(std::string(name) + " must be in " + std::to_string(min) + ".." +
                           std::to_string(max) + ", got " + std::to_string(*out));
  }
  return Status::ok();
}

}  // namespace weft::env
