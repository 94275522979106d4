#include "core/small_call.h"

#include "algos/algo_context.h"
#include "algos/algorithms.h"
#include "base/log.h"
#include "core/comm.h"
#include "core/outstanding.h"

namespace weft {
namespace {

// The algorithm a qualifying call must be planned on: the one this path runs.
AlgoId smallCallAlgo(CollType coll) {
  switch (coll) {
    case CollType::kAllReduce:
    case CollType::kBarrier:
      return AlgoId::kShmFlat;
    case CollType::kBroadcast:
      return AlgoId::kShmDirect;
    default:
      return AlgoId::kPointToPoint;
  }
}

bool qualifies(const weftComm* comm, const CollArgs& args) {
  if (smallCallAlgo(args.coll) == AlgoId::kPointToPoint) return false;
  if (args.deviceBuffers || comm->nranks < 2) return false;
  if (comm->config.checkMode || comm->config.onlineCalls > 0) return false;
  const SharedWindows* windows = comm->fabric->windows();
  return windows != nullptr && windows->localSize() == comm->nranks &&
         args.count * typeSize(args.type) <= SharedWindows::kFlagPayloadBytes;
}

}  // namespace

bool runSmallCall(weftComm* comm, const CollArgs& args, Status* result) {
  if (!qualifies(comm, args)) return false;
  Executor& executor = *comm->executor;
  if (!executor.tryBeginInline()) return false;
  // Checked once this thread runs: a failure or registration that came first must be seen.
  const bool clear =
      !comm->failed.load() && !comm->registrationChangesPending.load(std::memory_order_acquire);
  const Plan* plan = clear ? &planFor(comm, args) : nullptr;
  if (plan == nullptr || plan->algo != smallCallAlgo(args.coll)) {
    executor.endInline();
    return false;
  }
  const uint64_t seq = ++comm->collectiveSeq;
  const char* name = collName(args.coll);
  const char* algorithm = algoName(plan->algo);
  comm->fabric->setCurrentOp(name, seq, algorithm);
  WEFT_TRACE("rank %d: %s #%llu %s count %zu %s (small-call path)", comm->rank, name,
             static_cast<unsigned long long>(seq), algorithm, args.count, typeName(args.type));
  AlgoContext context(*comm->fabric, *comm->resources, comm->layout.nodes, comm->rank, comm->nranks,
                      args, *plan);
  Status status = findAlgorithm(args.coll, plan->algo)(context);
  comm->fabric->operationDone();
  if (!status.isOk()) {
    markFailed(comm, status);
    failOutstanding(comm, status);
  } else if (!comm->outstanding.entries.empty()) {
    reapOutstanding(comm);
  }
  executor.endInline();
  *result = std::move(status);
  return true;
}

}  // namespace weft
