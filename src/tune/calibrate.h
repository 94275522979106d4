// A short calibration of the cost model's links at init (WEFT_TUNE_CALIBRATE=1): ping-pongs
// between the first rank of node 0 and the first rank of every other node in turn (network: the
// worst latency and bandwidth of those links) and between the first two ranks of node 0
// (shared memory). Rank 0 decides whether to measure or to reuse its per-host cache and sends
// the resulting parameters to every rank, so all ranks plan with identical numbers.
#pragma once

#include <string>

#include "algos/algo_context.h"
#include "tune/cost_model.h"

namespace weft::tune {

struct CalibrationSetup {
  int rank = 0;
  int nranks = 1;
  bool remeasure = false;  // ignore the cache
  std::string cacheKey;    // identifies the hosts involved (rank 0 only)
};

// Updates `params` in place on every rank; the same values everywhere on success.
Status calibrateLinks(Fabric& fabric, OpResources& resources, const topo::NodeLayout& nodes,
                      const CalibrationSetup& setup, CostParams* params);

// Where rank 0 keeps measured links: $XDG_CACHE_HOME/weft or ~/.cache/weft.
std::string calibrationCachePath(const std::string& cacheKey);

}  // namespace weft::tune
