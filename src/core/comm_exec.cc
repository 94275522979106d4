// Executing an operation: a single call or a group's calls on one communicator. A group posts
// its point-to-point transfers first (on every rank, so they can never wait on a collective),
// then runs its collectives in issue order, then waits for the transfers. A non-blocking Send
// or Recv alone is posted and left outstanding (core/outstanding.h).
#include <chrono>
#include <cstdio>

#include "algos/algo_context.h"
#include "algos/algorithms.h"
#include "base/log.h"
#include "core/call_check.h"
#include "core/comm.h"
#include "core/online_tuning.h"
#include "reduce/reduce.h"
#include "tune/select.h"

namespace weft {
namespace {

// Tags: bits 32..62 hold the operation's sequence number, bits 0..31 the message index within
// the operation (bit 63 marks point-to-point traffic, core/outstanding.cc).
uint64_t tagBaseFor(uint64_t seq) {
  return (seq & 0x7fffffffu) << 32;
}

// "two_level_leader/ring 812 us (ring 1630, tree 900, ...)": the choice and the alternatives.
void logDecision(const weftComm* comm, const CollArgs& args, const Plan& plan) {
  const size_t bytes = callSizes(args, comm->nranks).message;
  std::string text = planName(plan);
  std::vector<Candidate> ranked =
      rankCandidates(args.coll, bytes, comm->layout, comm->config.sliceBytes);
  if (ranked.empty()) {
    text += plan.fromTable ? " (tuning table)" : plan.forced ? " (forced)" : " (size rule)";
  } else {
    char number[32];
    std::snprintf(number, sizeof(number), "%.1f", plan.predictedMicros);
    text += plan.predictedMicros > 0 ? std::string(", predicted ") + number + " us;"
            : plan.fromTable         ? " (tuning table); model:"
                                     : " (forced);";
    for (const Candidate& candidate : ranked) {
      std::snprintf(number, sizeof(number), " %.1f", candidate.micros);
      text += std::string(" ") + algoName(candidate.algo) + number;
    }
  }
  WEFT_INFO("%s of %zu bytes (%s): %s", collName(args.coll), bytes, typeName(args.type),
            text.c_str());
}

}  // namespace

const Plan& planFor(weftComm* comm, const CollArgs& call) {
  CollArgs args = call;
  const uint64_t key = planKey(comm, &args);
  auto found = comm->plans.find(key);
  if (found != comm->plans.end()) return found->second;
  if (comm->plans.size() >= 4096) {
    comm->plans.clear();
    comm->decidedWithoutTrial.clear();
  }
  Plan plan = choosePlan(args, comm->layout, comm->config.algos, comm->config.sliceBytes);
  if (comm->rank == 0 && log::level() >= log::Level::kInfo) logDecision(comm, args, plan);
  return comm->plans.emplace(key, plan).first->second;
}

Status runCollective(weftComm* comm, const CollArgs& args) {
  const uint64_t seq = ++comm->collectiveSeq;
  OnlineTrial* trial = onlineTrialFor(comm, args);
  const Plan plan = trial ? trial->next() : planFor(comm, args);
  const auto start =
      trial ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
  AlgoFn run = findAlgorithm(args.coll, plan.algo);
  if (run == nullptr) {
    return internalError(std::string("no algorithm ") + algoName(plan.algo) + " for " +
                         collName(args.coll));
  }
  comm->fabric->setCurrentOp(collName(args.coll), seq, algoName(plan.algo));
  comm->resources->setTagBase(tagBaseFor(seq));
  WEFT_TRACE("rank %d: %s #%llu %s count %zu %s", comm->rank, collName(args.coll),
             static_cast<unsigned long long>(seq), algoName(plan.algo), args.count,
             typeName(args.type));
  AlgoContext context(*comm->fabric, *comm->resources, comm->layout.nodes, comm->rank, comm->nranks,
                      args, plan);
  Status result = run(context);
  if (result.isOk()) result = context.waitAll();
  if (result.isOk() && trial) {
    const std::chrono::duration<double, std::micro> took = std::chrono::steady_clock::now() - start;
    result = finishTrialCall(comm, args, trial, took.count());
  }
  return result;
}

namespace {

Status runCalls(weftComm* comm, const Op& op) {
  comm->resources->beginOp();
  size_t pointToPoint = 0;
  for (const CollArgs& call : op.calls()) {
    if (isPointToPoint(call.coll)) {
      Xfer* xfer = comm->resources->nextXfer();
      postPointToPoint(comm, call, xfer);
      comm->resources->posted().push_back(xfer);
      ++pointToPoint;
    }
  }
  for (const CollArgs& call : op.calls()) {
    if (!isPointToPoint(call.coll)) WEFT_TRY(runCollective(comm, call));
  }
  if (pointToPoint == 0) return Status::ok();
  comm->fabric->setCurrentOp("send/recv", comm->collectiveSeq, "p2p");
  return comm->fabric->waitAll(comm->resources->posted().data(), pointToPoint);
}

// The GPU layer exists once a call with device buffers or a stream has been classified (before
// the operation was queued); it runs the operation around this layer's host path.
Status runOnDevice(weftComm* comm, const Op& op) {
  if (!comm->gpu) {
    return internalError("an operation on device buffers reached a communicator without a GPU");
  }
  return comm->gpu->run(comm, op, [comm](const Op& host) { return runCalls(comm, host); });
}

}  // namespace

// weftCommRegister and weftCommDeregister since the last operation, for the transports.
void applyRegistrationChanges(weftComm* comm) {
  if (!comm->registrationChangesPending.load(std::memory_order_acquire)) return;
  std::vector<weftComm::RegistrationChange> changes;
  {
    std::lock_guard<std::mutex> lock(comm->memoryMutex);
    comm->registrationChangesPending.store(false, std::memory_order_relaxed);
    changes.swap(comm->registrationChanges);
  }
  for (const auto& change : changes) {
    comm->fabric->userMemoryRegistered(change.buff, change.size, change.registered);
  }
}

Status executeOp(weftComm* comm, Op& op) {
  if (comm->failed.load()) return commFailure(comm);
  applyRegistrationChanges(comm);
  if (comm->config.checkMode) {
    bool mismatch = false;
    Status checked = checkCallsMatch(comm, op, &mismatch);
    if (!checked.isOk()) {
      if (!mismatch) markFailed(comm, checked);
      return checked;
    }
  }
  if (op.mayLeaveOutstanding && op.completion && !needsDevice(op)) {
    leaveOutstanding(comm, op.single, std::move(op.completion));
    comm->executor->noteBackgroundWork();
    comm->fabric->operationDone();
    return Status::ok();
  }
  Status result = needsDevice(op) ? runOnDevice(comm, op) : runCalls(comm, op);
  comm->fabric->operationDone();
  // Any failure during execution leaves connections in an unknown state (half-sent messages),
  // so the communicator is failed for good; argument errors never get this far.
  if (!result.isOk()) {
    markFailed(comm, result);
    failOutstanding(comm, result);
  } else if (!comm->outstanding.entries.empty()) {
    reapOutstanding(comm);
  }
  return result;
}

}  // namespace weft
