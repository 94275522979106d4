#include "core/table_agreement.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <map>

#include "algos/algo_context.h"
#include "core/comm.h"

namespace weft {
namespace {

// Far from the tags of the first 2^31 collectives (core/comm_exec.cc) and from calibration's.
constexpr uint64_t kAgreementTagBase = uint64_t{0x7ffffffe} << 32;

struct HashRange {
  uint64_t lowest;
  uint64_t highest;
};

std::string hex(uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof(text), "%016" PRIx64, value);
  return text;
}

// "0-3, 6" from ascending ranks.
std::string rankList(const std::vector<int>& ranks) {
  std::string text;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!text.empty()) text += ", ";
    text += std::to_string(ranks[i]);
    if (j > i) text.append("-").append(std::to_string(ranks[j]));
    i = j + 1;
  }
  return text;
}

// Dissemination: after round k every rank holds the range of 2^(k+1) ranks' hashes.
Status exchangeRange(weftComm* comm, HashRange* range) {
  const int n = comm->nranks;
  OpResources& resources = *comm->resources;
  resources.beginOp();
  resources.setTagBase(kAgreementTagBase);
  comm->fabric->setCurrentOp("tuning table agreement", 0, "dissemination");
  CollArgs none;
  Plan plan;
  AlgoContext ctx(*comm->fabric, resources, comm->layout.nodes, comm->rank, n, none, plan);
  for (int distance = 1; distance < n; distance <<= 1) {
    HashRange mine = *range, theirs{};
    ctx.send((comm->rank + distance) % n, &mine, sizeof(mine));
    ctx.recv((comm->rank - distance + n) % n, &theirs, sizeof(theirs));
    WEFT_TRY(ctx.waitAll());
    range->lowest = std::min(range->lowest, theirs.lowest);
    range->highest = std::max(range->highest, theirs.highest);
  }
  resources.beginOp();
  return Status::ok();
}

}  // namespace

Status agreeOnTuningTable(weftComm* comm, Deadline deadline) {
  if (comm->nranks == 1) return Status::ok();
  const uint64_t mine = comm->layout.table ? comm->layout.table->hash() : 0;
  HashRange range{mine, mine};
  WEFT_TRY(exchangeRange(comm, &range));
  comm->fabric->operationDone();
  if (range.lowest == range.highest) return Status::ok();

  std::vector<uint64_t> all(comm->nranks);
  WEFT_TRY(comm->bootstrap->allgather(&mine, sizeof(mine), all.data(), deadline));
  std::map<uint64_t, std::vector<int>> ranksOf;
  for (int rank = 0; rank < comm->nranks; ++rank) ranksOf[all[rank]].push_back(rank);
  std::string groups;
  for (const auto& [hash, ranks] : ranksOf) {
    if (!groups.empty()) groups += "; ";
    groups += "ranks " + rankList(ranks) + ": " +
              (hash == 0 ? std::string("no table") : std::string("table ").append(hex(hash)));
  }
  const std::string self =
      comm->layout.table ? comm->layout.table->source + " (" + hex(mine) + ")" : "no table";
  return invalidUsage(std::string("the ranks loaded different tuning tables (") + groups +
                      "); rank " + std::to_string(comm->rank) + " uses " + self +
                      ". Give every rank the same WEFT_TUNE_FILE");
}

}  // namespace weft
