// Point-to-point calls left outstanding: a non-blocking weftSend or weftRecv outside a group is
// posted and returns, so that the calls after it run while its transfer waits for the peer (as
// gloo's and MPI's isend/irecv do). Its request completes once the transfer does: reaped after
// every operation, and advanced by the executor's background work while nothing is queued.
//
// Messages still match in posting order per pair and direction (transports/transport.h), so
// ranks must issue a pair's calls in matching orders, collectives included; what no longer
// matters is the order of calls between different directions or peers.
#pragma once

#include <chrono>
#include <deque>
#include <memory>
#include <vector>

#include "base/call.h"
#include "base/deadline.h"
#include "base/status.h"
#include "core/completion.h"
#include "transports/transport.h"

struct weftComm;

namespace weft {

struct OutstandingTransfers {
  struct Entry {
    std::unique_ptr<Xfer> xfer;
    std::shared_ptr<Completion> completion;
    // The timeout counts from posting, as a blocking call's wait counts from its start, so
    // that a transfer never answered fails even while later calls keep the communicator busy.
    Deadline due;
  };
  std::deque<Entry> entries;  // in posting order
  std::vector<std::unique_ptr<Xfer>> spare;
  std::vector<std::unique_ptr<Xfer>> failed;  // still posted on a failed fabric
};

// Fills and posts xfer for a Send or Recv call (tags: the pair's message count).
void postPointToPoint(weftComm* comm, const CollArgs& args, Xfer* xfer);
// Posts a non-blocking Send or Recv and keeps its completion until the transfer is done.
void leaveOutstanding(weftComm* comm, const CollArgs& args, std::shared_ptr<Completion> completion);
// Completes the requests of the finished transfers; a transfer past its deadline fails the
// communicator and every request (called after every operation).
void reapOutstanding(weftComm* comm);
// Executor::Background::advance for the communicator: progresses until a transfer finishes, an
// operation is queued or returnBy passes. A failure fails the communicator and every request.
bool advanceOutstanding(weftComm* comm, std::chrono::steady_clock::time_point returnBy);
// The communicator failed: every outstanding request completes with `why`.
void failOutstanding(weftComm* comm, const Status& why);

}  // namespace weft
