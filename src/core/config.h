// The communicator's effective settings: the user's weftConfig_t (validated by size, magic and
// version, so old callers keep working as fields are added), then the environment on top.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"
#include "core/rank_binding.h"
#include "transports/transport_options.h"
#include "tune/select.h"
#include "weft/weft.h"

namespace weft {

struct CommConfig {
  int64_t timeoutMs = 300000;
  std::string hostId;  // "" = detect
  std::string commName;
  bool checkMode = false;  // compare every collective's arguments across ranks before running it
  int buffers = WEFT_BUFFERS_AUTO;  // where call buffers live (cuda/buffer_kind.h)
  int64_t spinMicros = -1;          // -1 = decide from the layout
  BindMode bind = BindMode::none;   // WEFT_BIND (core/rank_binding.h)
  size_t sliceBytes = 512 * 1024;
  TransportOptions transports;  // transports/transport_options.h
  bool rdmaNetCostSet = false;  // WEFT_TUNE_NET given: it describes the network whatever serves it
  AlgoOverrides algos;
  tune::CostParams costs;  // the tuner's link costs
  int calibrate = 0;       // 1: measure links at init unless cached; 2: always measure
  std::string tuneFile;    // WEFT_TUNE_FILE: tuning tables ("" = the default search path)
  int onlineCalls = 0;     // WEFT_TUNE_ONLINE: timed calls per candidate in online trials (0: off)
};

// config may be NULL. Errors name the offending field or variable.
Status resolveConfig(const weftConfig_t* config, CommConfig* out);

}  // namespace weft
