#include "core/outstanding.h"

#include <algorithm>
#include <string>

#include "core/comm.h"
#include "transports/message_mismatch.h"

namespace weft {
namespace {

using Clock = std::chrono::steady_clock;

// "rank 1 (host:pid) to receive 4096 bytes (point-to-point message 3 of the pair)"
std::string describeOutstanding(const weftComm* comm, int* awaited) {
  for (const auto& entry : comm->outstanding.entries) {
    const Xfer& xfer = *entry.xfer;
    if (xfer.done) continue;
    *awaited = xfer.peer;
    const bool sending = xfer.kind == Xfer::Kind::kSend;
    return comm->fabric->peerName(xfer.peer) + (sending ? " to receive " : " to send ") +
           std::to_string(xfer.bytes) + " bytes (point-to-point message " +
           std::to_string((xfer.tag >> 32) & 0x7fffffffu) + " of the pair)";
  }
  *awaited = -1;
  return "nothing";
}

// Entries are in posting order and share one timeout, so the first one pending is due first.
Deadline earliestDue(const weftComm* comm) {
  for (const auto& entry : comm->outstanding.entries) {
    if (!entry.xfer->done) return entry.due;
  }
  return Deadline::never();
}

}  // namespace

void postPointToPoint(weftComm* comm, const CollArgs& args, Xfer* xfer) {
  // Tags: kPointToPointTagBit marks point-to-point traffic, bits 32..62 count the pair's
  // messages in this direction (collectives put their sequence number there).
  const bool sending = args.coll == CollType::kSend;
  const int peer = args.root;
  uint32_t& counter = sending ? comm->p2pSent[peer] : comm->p2pReceived[peer];
  xfer->kind = sending ? Xfer::Kind::kSend : Xfer::Kind::kRecv;
  xfer->peer = peer;
  xfer->buf = sending ? const_cast<void*>(args.send) : args.recv;
  xfer->bytes = callSizes(args, comm->nranks).block;
  xfer->tag = kPointToPointTagBit | (static_cast<uint64_t>(counter++ & 0x7fffffffu) << 32);
  comm->fabric->post(xfer);
}

void leaveOutstanding(weftComm* comm, const CollArgs& args,
                      std::shared_ptr<Completion> completion) {
  OutstandingTransfers& outstanding = comm->outstanding;
  std::unique_ptr<Xfer> xfer;
  if (outstanding.spare.empty()) {
    xfer = std::make_unique<Xfer>();
  } else {
    xfer = std::move(outstanding.spare.back());
    outstanding.spare.pop_back();
  }
  postPointToPoint(comm, args, xfer.get());
  outstanding.entries.push_back(
      {std::move(xfer), std::move(completion), Deadline::after(comm->config.timeoutMs)});
}

void reapOutstanding(weftComm* comm) {
  auto& entries = comm->outstanding.entries;
  auto& spare = comm->outstanding.spare;
  // A failed transfer is left for advanceOutstanding(), which fails the fabric with it.
  auto reaped = [&](OutstandingTransfers::Entry& entry) {
    if (!entry.xfer->done || !entry.xfer->status.isOk()) return false;
    entry.completion->complete(Status::ok());
    spare.push_back(std::move(entry.xfer));
    return true;
  };
  entries.erase(std::remove_if(entries.begin(), entries.end(), reaped), entries.end());
  const Deadline due = earliestDue(comm);
  if (due.isNever() || !due.expired() || comm->fabric->failed()) return;
  comm->fabric->setCurrentOp("send/recv", comm->collectiveSeq, "p2p");
  int awaited = -1;
  const std::string what = describeOutstanding(comm, &awaited);
  Status why = comm->fabric->timeOut(what, awaited);
  markFailed(comm, why);
  failOutstanding(comm, why);
}

bool advanceOutstanding(weftComm* comm, Clock::time_point returnBy) {
  reapOutstanding(comm);
  const auto& entries = comm->outstanding.entries;
  if (entries.empty()) return false;
  if (comm->failed.load()) {
    failOutstanding(comm, commFailure(comm));
    return false;
  }
  const Executor& executor = *comm->executor;
  const bool bounded = returnBy != Clock::time_point::max();
  comm->fabric->setCurrentOp("send/recv", comm->collectiveSeq, "p2p");
  Status waited = comm->fabric->waitUntil(
      [&](Status* failure) {
        for (const auto& entry : entries) {
          if (!entry.xfer->done) continue;
          if (!entry.xfer->status.isOk()) *failure = entry.xfer->status;
          return true;
        }
        return executor.hasQueued() || (bounded && Clock::now() >= returnBy);
      },
      [&](int* awaited) { return describeOutstanding(comm, awaited); }, returnBy,
      earliestDue(comm));
  if (!waited.isOk()) {
    markFailed(comm, waited);
    failOutstanding(comm, waited);
    return false;
  }
  reapOutstanding(comm);
  return !entries.empty();
}

void failOutstanding(weftComm* comm, const Status& why) {
  // The transfers stay posted on a failed fabric, which never touches them again; their memory
  // goes with the communicator.
  for (auto& entry : comm->outstanding.entries) {
    entry.completion->complete(why);
    comm->outstanding.failed.push_back(std::move(entry.xfer));
  }
  comm->outstanding.entries.clear();
}

}  // namespace weft
