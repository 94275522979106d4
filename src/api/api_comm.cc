// Communicator lifecycle entry points.
#include <memory>

#include "api/arg_check.h"
#include "api/handles.h"
#include "base/log.h"
#include "base/status.h"
#include "bootstrap/launch_env.h"
#include "bootstrap/root_server.h"
#include "bootstrap/store_rendezvous.h"
#include "bootstrap/unique_id.h"
#include "core/comm.h"

using weft::Status;
using weft::api::CommGuard;
using weft::api::report;

namespace {

weftResult_t finishInit(weftComm_t* comm, const Status& status, weftComm* created) {
  if (!status.isOk()) return report(nullptr, status);
  weft::api::registerComm(created);
  *comm = created;
  return weftSuccess;
}

// Under a launcher with a key-value store (PMI-1, PMIx), rank 0's unique id reaches the others
// through it. Where the launcher's variables also say the rank and size, they must agree with
// the store's: a disagreement means stale variables from another job.
Status initThroughStore(const weft::bootstrap::LaunchInfo& info, const weft::CommConfig& resolved,
                        weftComm** out) {
  weft::Deadline deadline = weft::Deadline::after(resolved.timeoutMs);
  weft::bootstrap::JobStore* store = nullptr;
  WEFT_TRY(weft::bootstrap::processJobStore(info.store, deadline, &store));
  if (info.nranks > 0 && (store->rank() != info.rank || store->size() != info.nranks)) {
    return weft::invalidArgument(std::string("the launcher's variables say rank ") +
                                 std::to_string(info.rank) + " of " + std::to_string(info.nranks) +
                                 " (" + info.launcher + "), but its " + store->name() +
                                 " server says rank " + std::to_string(store->rank()) + " of " +
                                 std::to_string(store->size()) + ": unset the stale variables");
  }
  weft::bootstrap::StoreRendezvous rendezvous;
  WEFT_TRY(weft::bootstrap::rendezvousOverStore(*store, deadline, &rendezvous));
  weft::bootstrap::UniqueIdContents id;
  WEFT_TRY(weft::bootstrap::decodeUniqueId(rendezvous.id, &id));
  return weft::createComm(rendezvous.nranks, id, rendezvous.rank, resolved, out);
}

// Environment initialisation: rank 0 serves the rendezvous at the launcher's address. It binds
// that exact address when it is local, and the wildcard of its family otherwise (a host name
// that resolves to an address this process cannot bind, such as a NAT'd one).
Status initFromEnvironment(const weftConfig_t* config, weftComm** out) {
  weft::CommConfig resolved;
  WEFT_TRY(weft::resolveConfig(config, &resolved));
  if (!weft::bootstrap::launcherDetected()) {
    // Started by hand: a communicator of one, as MPI does for a singleton.
    WEFT_INFO("no launcher environment found: running as a single rank");
    weftUniqueId unique;
    WEFT_TRY(weft::bootstrap::createUniqueId(&unique));
    weft::bootstrap::UniqueIdContents id;
    WEFT_TRY(weft::bootstrap::decodeUniqueId(unique, &id));
    return weft::createComm(1, id, 0, resolved, out);
  }
  weft::bootstrap::LaunchInfo info;
  WEFT_TRY(weft::bootstrap::readLaunchEnvironment(&info));
  if (info.store != weft::bootstrap::JobStoreKind::none) {
    return initThroughStore(info, resolved, out);
  }
  std::shared_ptr<weft::bootstrap::RootServer> root;
  if (info.rank == 0) {
    weft::Deadline deadline = weft::Deadline::after(resolved.timeoutMs);
    Status started = weft::bootstrap::RootServer::start(info.root, info.secret, deadline, &root);
    if (!started.isOk()) {
      started = weft::bootstrap::RootServer::start(
          weft::net::SocketAddress::any(info.root.family(), info.root.port()), info.secret,
          deadline, &root);
    }
    WEFT_TRY(started.withContext("starting the rendezvous at " + info.root.toString() +
                                 " (launcher " + info.launcher + ")"));
  }
  weft::bootstrap::UniqueIdContents id{info.root, info.secret};
  Status created = weft::createComm(info.nranks, id, info.rank, resolved, out);
  if (root) root->stop();
  WEFT_TRY(created);
  if (!info.secretFromEnv && (*out)->nodes > 1 && info.rank == 0) {
    WEFT_WARN(
        "ranks span %d hosts but WEFT_SECRET is not set: connections are authenticated "
        "with a secret derived from the job's identity, which stops accidents, not "
        "attackers. Set WEFT_SECRET to the same private value on every rank: %s.",
        (*out)->nodes, weft::bootstrap::secretAdvice(info.launcher).c_str());
  }
  return Status::ok();
}

}  // namespace

extern "C" {

weftResult_t weftGetVersion(int* version) {
  if (version == nullptr)
    return report(nullptr, weft::invalidArgument("weftGetVersion: version is NULL"));
  *version = WEFT_VERSION_CODE;
  return weftSuccess;
}

const char* weftGetErrorString(weftResult_t result) {
  // Any int may arrive from C; switch on its bits rather than on an enum-typed load.
  switch (weft::api::rawEnum(result)) {
    case weftSuccess:
      return "no error";
    case weftSystemError:
      return "unhandled system error (see the last-error text)";
    case weftInternalError:
      return "internal error - please report this issue";
    case weftInvalidArgument:
      return "invalid argument (see the last-error text)";
    case weftInvalidUsage:
      return "invalid usage (see the last-error text)";
    case weftRemoteError:
      return "remote process exited or there was a network error";
    case weftInProgress:
      return "operation in progress";
    case weftTimeout:
      return "timed out";
    case weftAborted:
      return "communicator aborted";
    default:
      return "unknown result code";
  }
}

const char* weftGetLastError(weftComm_t comm) {
  return weft::api::lastError(comm);
}

weftResult_t weftGetUniqueId(weftUniqueId* uniqueId) {
  if (uniqueId == nullptr) {
    return report(nullptr, weft::invalidArgument("weftGetUniqueId: uniqueId is NULL"));
  }
  return report(nullptr, weft::bootstrap::createUniqueId(uniqueId));
}

weftResult_t weftCommInitRankConfig(weftComm_t* comm, int nranks, weftUniqueId commId, int rank,
                                    const weftConfig_t* config) {
  if (comm == nullptr) {
    return report(nullptr, weft::invalidArgument("weftCommInitRank: comm is NULL"));
  }
  *comm = nullptr;
  if (nranks < 1) {
    return report(nullptr, weft::invalidArgument("weftCommInitRank: nranks " +
                                                 std::to_string(nranks) + " must be >= 1"));
  }
  if (rank < 0 || rank >= nranks) {
    return report(nullptr,
                  weft::invalidArgument("weftCommInitRank: rank " + std::to_string(rank) +
                                        " is out of range [0, " + std::to_string(nranks) + ")"));
  }
  weft::bootstrap::UniqueIdContents id;
  Status status = weft::bootstrap::decodeUniqueId(commId, &id);
  weft::CommConfig resolved;
  if (status.isOk()) status = weft::resolveConfig(config, &resolved);
  weftComm* created = nullptr;
  if (status.isOk()) status = weft::createComm(nranks, id, rank, resolved, &created);
  return finishInit(comm, status, created);
}

weftResult_t weftCommInitRank(weftComm_t* comm, int nranks, weftUniqueId commId, int rank) {
  return weftCommInitRankConfig(comm, nranks, commId, rank, nullptr);
}

weftResult_t weftCommInitFromEnv(weftComm_t* comm, const weftConfig_t* config) {
  if (comm == nullptr) {
    return report(nullptr, weft::invalidArgument("weftCommInitFromEnv: comm is NULL"));
  }
  *comm = nullptr;
  weftComm* created = nullptr;
  Status status = initFromEnvironment(config, &created);
  return finishInit(comm, status, created);
}

weftResult_t weftCommSplit(weftComm_t comm, int color, int key, weftComm_t* newcomm,
                           const weftConfig_t* config) {
  if (newcomm == nullptr) {
    return report(nullptr, weft::invalidArgument("weftCommSplit: newcomm is NULL"));
  }
  *newcomm = nullptr;
  CommGuard guard(comm);
  if (!guard.valid()) {
    return report(nullptr, weft::invalidArgument("weftCommSplit: comm is not a live communicator"));
  }
  if (color < 0 && color != WEFT_SPLIT_NOCOLOR) {
    return report(comm, weft::invalidArgument("weftCommSplit: color " + std::to_string(color) +
                                              " must be >= 0 or WEFT_SPLIT_NOCOLOR"));
  }
  weft::CommConfig resolved = comm->config;
  Status status = config ? weft::resolveConfig(config, &resolved) : Status::ok();
  weftComm* created = nullptr;
  if (status.isOk()) status = weft::splitComm(comm, color, key, resolved, &created);
  if (!status.isOk()) return report(comm, status);
  if (created != nullptr) weft::api::registerComm(created);
  *newcomm = created;
  return weftSuccess;
}

weftResult_t weftCommDestroy(weftComm_t comm) {
  // NCCL's ncclCommDestroy(NULL) succeeds, and cleanup paths rely on it.
  if (comm == nullptr) return weftSuccess;
  if (!weft::api::retireComm(comm, [] {})) {
    return report(nullptr,
                  weft::invalidArgument("weftCommDestroy: comm is not a live communicator"));
  }
  weft::releaseComm(comm, true);
  return weftSuccess;
}

weftResult_t weftCommAbort(weftComm_t comm) {
  if (comm == nullptr) return weftSuccess;  // as ncclCommAbort(NULL)
  auto releaseCallsInFlight = [comm] {
    Status aborted(weftAborted, "the communicator was aborted");
    weft::markFailed(comm, aborted);
    comm->fabric->abort();
    comm->executor->cancelQueued(aborted);
  };
  if (!weft::api::retireComm(comm, releaseCallsInFlight)) {
    return report(nullptr, weft::invalidArgument("weftCommAbort: comm is not a live communicator"));
  }
  weft::releaseComm(comm, false);
  return weftSuccess;
}

weftResult_t weftCommGetAsyncError(weftComm_t comm, weftResult_t* asyncError) {
  CommGuard guard(comm);
  if (!guard.valid()) {
    return report(nullptr,
                  weft::invalidArgument("weftCommGetAsyncError: comm is not a live communicator"));
  }
  if (asyncError == nullptr) {
    return report(comm, weft::invalidArgument("weftCommGetAsyncError: asyncError is NULL"));
  }
  std::lock_guard<std::mutex> lock(comm->failureMutex);
  *asyncError = comm->failure.code();
  return weftSuccess;
}

weftResult_t weftCommCount(const weftComm_t comm, int* count) {
  CommGuard guard(comm);
  if (!guard.valid()) {
    return report(nullptr, weft::invalidArgument("weftCommCount: comm is not a live communicator"));
  }
  if (count == nullptr) return report(comm, weft::invalidArgument("weftCommCount: count is NULL"));
  *count = comm->nranks;
  return weftSuccess;
}

weftResult_t weftCommUserRank(const weftComm_t comm, int* rank) {
  CommGuard guard(comm);
  if (!guard.valid()) {
    return report(nullptr,
                  weft::invalidArgument("weftCommUserRank: comm is not a live communicator"));
  }
  if (rank == nullptr) return report(comm, weft::invalidArgument("weftCommUserRank: rank is NULL"));
  *rank = comm->rank;
  return weftSuccess;
}

}  // extern "C"
