#include "core/call_check.h"

#include <cstring>
#include <string>
#include <vector>

#include "algos/algo_context.h"
#include "reduce/reduce.h"

namespace weft {
namespace {

// What a rank is about to run. Fixed size and layout, so the exchange itself always matches.
struct CallSummary {
  uint32_t collectives = 0;  // in this operation (a group may hold several)
  uint32_t coll = 0;         // the first collective's arguments
  uint32_t type = 0;
  uint32_t op = 0;
  int32_t root = 0;
  uint32_t device = 0;  // the first collective's buffers are device memory
  uint64_t count = 0;
  uint64_t seq = 0;     // the first collective's sequence number on this communicator
  uint64_t digest = 0;  // every collective of the operation, for groups
};

bool usesRoot(CollType coll) {
  return coll == CollType::kBroadcast || coll == CollType::kReduce || coll == CollType::kGather ||
         coll == CollType::kScatter;
}
bool usesOp(CollType coll) {
  return coll == CollType::kAllReduce || coll == CollType::kReduce ||
         coll == CollType::kReduceScatter;
}

// Only what must agree: buffers may differ, and ops and roots matter only where they are used.
void mixInto(uint64_t* digest, uint64_t value) {
  *digest = (*digest ^ value) * 1099511628211ull;  // FNV-1a step
}

CallSummary summarize(const Op& op, uint64_t nextSeq) {
  CallSummary summary;
  summary.digest = 1469598103934665603ull;
  for (const CollArgs& call : op.calls()) {
    if (isPointToPoint(call.coll)) continue;
    const uint32_t effectiveOp = usesOp(call.coll) ? call.op : 0;
    const int32_t effectiveRoot = usesRoot(call.coll) ? call.root : 0;
    if (summary.collectives++ == 0) {
      summary.coll = static_cast<uint32_t>(call.coll);
      summary.type = call.type;
      summary.op = effectiveOp;
      summary.root = effectiveRoot;
      summary.count = call.count;
      summary.seq = nextSeq;
      summary.device = call.deviceBuffers ? 1 : 0;
    }
    for (uint64_t value :
         {uint64_t(call.coll), uint64_t(call.type), uint64_t(effectiveOp),
          uint64_t(uint32_t(effectiveRoot)), uint64_t(call.count), uint64_t(call.deviceBuffers)}) {
      mixInto(&summary.digest, value);
    }
  }
  return summary;
}

std::string describe(const CallSummary& s) {
  const auto coll = static_cast<CollType>(s.coll);
  const std::string seq = " as collective #" + std::to_string(s.seq);
  if (coll == CollType::kBarrier) return "barrier()" + seq;
  std::string text = std::string(collName(coll)) + "(count " + std::to_string(s.count) + ", " +
                     typeName(static_cast<weftDataType_t>(s.type));
  if (usesOp(coll)) text += std::string(", ") + opName(static_cast<weftRedOp_t>(s.op));
  if (usesRoot(coll)) text += ", root " + std::to_string(s.root);
  if (s.device) text += ", device memory";
  return text + ")" + seq;
}

bool sameFirstCall(const CallSummary& a, const CallSummary& b) {
  return a.coll == b.coll && a.type == b.type && a.op == b.op && a.root == b.root &&
         a.count == b.count && a.seq == b.seq && a.device == b.device;
}

// Every rank sees every summary, so each finds the same first disagreement and words it alike.
std::string findMismatch(const std::vector<CallSummary>& all) {
  const CallSummary& first = all[0];
  for (size_t r = 1; r < all.size(); ++r) {
    const CallSummary& other = all[r];
    std::string rank = "rank " + std::to_string(r);
    if (!sameFirstCall(first, other)) {
      return "check mode: the ranks' calls differ: rank 0 called " + describe(first) + ", " + rank +
             " called " + describe(other);
    }
    if (first.collectives != other.collectives) {
      return "check mode: the ranks' groups differ: rank 0's holds " +
             std::to_string(first.collectives) + " collectives, " + rank + "'s holds " +
             std::to_string(other.collectives);
    }
    if (first.digest != other.digest) {
      return "check mode: the ranks' groups differ after their first collective, " +
             describe(first) + " (rank 0 against " + rank + ")";
    }
  }
  return "";
}

// Check exchanges use message indices from 2^31 up under the sequence number they precede,
// which no algorithm reaches, so they never meet an algorithm's messages.
constexpr uint64_t kCheckIndexBit = 1ull << 31;

}  // namespace

Status checkCallsMatch(weftComm* comm, const Op& op, bool* mismatch) {
  *mismatch = false;
  const uint64_t nextSeq = comm->collectiveSeq + 1;
  const CallSummary mine = summarize(op, nextSeq);
  if (mine.collectives == 0 || comm->nranks == 1) return Status::ok();

  std::vector<CallSummary> all(comm->nranks);
  all[comm->rank] = mine;
  comm->resources->beginOp();
  comm->resources->setTagBase(((nextSeq & 0x7fffffffu) << 32) | kCheckIndexBit);
  comm->fabric->setCurrentOp("check-mode exchange before", nextSeq, collName(CollType(mine.coll)));
  CollArgs none;
  Plan plan;
  AlgoContext exchange(*comm->fabric, *comm->resources, comm->layout.nodes, comm->rank,
                       comm->nranks, none, plan);
  for (int peer = 0; peer < comm->nranks; ++peer) {
    if (peer == comm->rank) continue;
    exchange.send(peer, &mine, sizeof(mine));
    exchange.recv(peer, &all[peer], sizeof(CallSummary));
  }
  WEFT_TRY(exchange.waitAll());
  comm->resources->beginOp();

  std::string difference = findMismatch(all);
  if (difference.empty()) return Status::ok();
  *mismatch = true;
  return invalidUsage(difference);
}

}  // namespace weft
