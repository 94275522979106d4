// The job's life cycle: start every rank, relay output, forward signals, and end the job as a
// whole when one rank fails, the timeout passes or weftrun is told to stop.
#pragma once

#include "launcher/launch_options.h"

namespace weftrun {

// Runs the job to the end and returns weftrun's exit status: 0 if every rank exited 0; else the
// first failing rank's status (128 + signal if it was killed), 124 on timeout, 127 (126) if the
// program could not be started, 128 + signal if weftrun was told to stop, 1 on internal errors.
int RunJob(const LaunchOptions& options);

}  // namespace weftrun
