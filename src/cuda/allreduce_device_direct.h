// All-reduce of device buffers among ranks sharing one GPU (allreduce_device_direct.cc).
#pragma once

#include <functional>
#include <string>

#include "core/comm.h"
#include "core/executor.h"
#include "cuda/device_api.h"

namespace weft::device {

// Runs a host operation on the communicator (the exchanges and barriers around the kernels).
using HostRunner = std::function<Status(const Op&)>;
// Waits, within the operation's deadline, until the work queued on stream so far has finished.
using StreamWaiter = std::function<Status(Stream, const std::string& what)>;

// Whether op is a call the direct all-reduce may serve: decided from what every rank of the
// call agrees on (its shape, device buffers, one host, at most kMaxReduceSources ranks).
bool directAllReduceApplies(const weftComm* comm, const Op& op);

// Exchanges the ranks' buffer locations; when all are on one GPU and reachable, runs the
// direct all-reduce and sets *ran. Otherwise returns with *ran false (the caller stages the
// call); every rank comes to the same decision.
Status runDirectAllReduce(weftComm* comm, const CollArgs& call, const StreamWaiter& waitFor,
                          const HostRunner& runHost, bool* ran);

}  // namespace weft::device
