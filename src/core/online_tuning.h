// Online refinement (WEFT_TUNE_ONLINE=N): where the cost model ranks several candidates within
// its own error of each other, the first calls of that shape try them in turn, N timed calls
// each, and the ranks agree on the fastest with one small all-reduce of their timings (the
// slowest rank's median per candidate). The winner is then fixed for the communicator, like any
// other plan. Each candidate's first call is a warm-up and is not timed. Every call's result stays
// correct throughout; only the algorithm, and so the order of floating-point sums, differs between
// the trial calls.
//
// A shape whose choice comes from WEFT_ALGO, a tuning table or a one-host size rule is never
// tried: those are decisions, not predictions.
#pragma once

#include <cstdint>
#include <vector>

#include "algos/plan.h"
#include "base/call.h"
#include "base/status.h"

struct weftComm;

namespace weft {

struct OnlineTrial {
  std::vector<Plan> plans;                  // the model's pick first, then its close runners-up
  std::vector<std::vector<double>> micros;  // this rank's call times, per candidate
  int callsEach = 0;
  size_t calls = 0;
  const Plan& next() const { return plans[calls % plans.size()]; }
};

// The trial this call belongs to, or null when its shape is decided (or trials are off).
OnlineTrial* onlineTrialFor(weftComm* comm, const CollArgs& args);
// Records the call's time on this rank; after the trial's last call the ranks agree on the
// winner (a collective: every rank reaches it at the same call) and it becomes the plan.
Status finishTrialCall(weftComm* comm, const CollArgs& args, OnlineTrial* trial, double micros);

// The key of a call's shape in the communicator's plan cache (and its trials).
uint64_t planKey(weftComm* comm, CollArgs* args);

}  // namespace weft
