#include "core/online_tuning.h"

#include <algorithm>
#include <string>

#include "base/datatype.h"
#include "base/log.h"
#include "core/comm.h"
#include "tune/contenders.h"
#include "tune/select.h"

namespace weft {
namespace {

// Candidates predicted within this factor of the best are worth trying: on the emulated
// clusters the model's predictions are up to about 2x off, and its ranking is reliable only
// beyond a third (docs/TUNING.md).
constexpr double kCloseFactor = 1.5;
constexpr size_t kMaxCandidates = 3;

// The trial for a shape seen for the first time, or none when the model's pick stands alone.
bool makeTrial(weftComm* comm, const CollArgs& args, OnlineTrial* trial) {
  const Layout& layout = comm->layout;
  const size_t slice = comm->config.sliceBytes;
  const Plan chosen = choosePlan(args, layout, comm->config.algos, slice);
  if (chosen.predictedMicros <= 0 || chosen.fromTable) return false;
  const size_t bytes = callSizes(args, comm->nranks).message;
  trial->plans = {chosen};
  for (const Candidate& candidate : rankCandidates(args.coll, bytes, layout, slice)) {
    if (trial->plans.size() >= kMaxCandidates) break;
    if (candidate.micros > kCloseFactor * chosen.predictedMicros) break;
    if (candidate.algo == chosen.algo && candidate.inner == chosen.inner) continue;
    AlgoOverrides forced;
    forced.byColl[static_cast<int>(args.coll)] = tune::AlgoChoice{candidate.algo, candidate.inner};
    Plan plan = choosePlan(args, layout, forced, slice);
    plan.predictedMicros = candidate.micros;
    trial->plans.push_back(plan);
  }
  if (trial->plans.size() < 2) return false;
  trial->micros.assign(trial->plans.size(), {});
  trial->callsEach = comm->config.onlineCalls;
  return true;
}

}  // namespace

uint64_t planKey(weftComm* comm, CollArgs* args) {
  args->symmetricWindows = comm->symmetricWindows.load(std::memory_order_acquire) > 0;
  return callShapeKey(*args) ^ (args->symmetricWindows ? uint64_t{1} << 62 : 0);
}

OnlineTrial* onlineTrialFor(weftComm* comm, const CollArgs& call) {
  if (comm->config.onlineCalls <= 0 || comm->agreeingOnTrial || call.deviceBuffers) return nullptr;
  CollArgs args = call;
  const uint64_t key = planKey(comm, &args);
  if (comm->plans.count(key) != 0) return nullptr;
  auto found = comm->trials.find(key);
  if (found != comm->trials.end()) return &found->second;
  if (comm->decidedWithoutTrial.count(key) != 0) return nullptr;
  OnlineTrial trial;
  if (!makeTrial(comm, args, &trial)) {
    // planFor() chooses and caches it; remember not to look again before it has.
    comm->decidedWithoutTrial.insert(key);
    return nullptr;
  }
  return &comm->trials.emplace(key, std::move(trial)).first->second;
}

Status finishTrialCall(weftComm* comm, const CollArgs& call, OnlineTrial* trial, double micros) {
  // The first round only warms each candidate up (its connections, scratch, caches).
  const size_t candidates = trial->plans.size();
  if (trial->calls >= candidates) trial->micros[trial->calls % candidates].push_back(micros);
  ++trial->calls;
  if (trial->calls < candidates * (1 + static_cast<size_t>(trial->callsEach))) return Status::ok();
  // The slowest rank's median per candidate, the same on every rank.
  std::vector<double> mine, slowest(trial->plans.size());
  for (const auto& times : trial->micros) mine.push_back(tune::medianOf(times));
  CollArgs agree;
  agree.coll = CollType::kAllReduce;
  agree.type = weftFloat64;
  agree.op = weftMax;
  agree.count = mine.size();
  agree.send = mine.data();
  agree.recv = slowest.data();
  comm->agreeingOnTrial = true;
  Status agreed = runCollective(comm, agree);
  comm->agreeingOnTrial = false;
  WEFT_TRY(agreed);
  // Ties go to the earlier candidate, the model's own pick first.
  const size_t winner = std::min_element(slowest.begin(), slowest.end()) - slowest.begin();
  CollArgs args = call;
  const uint64_t key = planKey(comm, &args);
  if (comm->rank == 0 && log::level() >= log::Level::kInfo) {
    std::string text;
    for (size_t i = 0; i < trial->plans.size(); ++i) {
      text.append(" ").append(planName(trial->plans[i])).append(" ");
      text.append(std::to_string(static_cast<int>(slowest[i])));
    }
    WEFT_INFO("%s of %zu bytes (%s): %s after online trials (us, slowest rank's median:%s)",
              collName(args.coll), callSizes(args, comm->nranks).message, typeName(args.type),
              planName(trial->plans[winner]).c_str(), text.c_str());
  }
  Plan plan = trial->plans[winner];
  comm->trials.erase(key);
  comm->plans[key] = plan;
  return Status::ok();
}

}  // namespace weft
