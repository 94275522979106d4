// weftCommSplit: two small allgathers over the parent's bootstrap ring. The first shares every
// rank's (color, key); the lowest-keyed rank of each color then creates a unique id (becoming
// the rendezvous root of the new communicator), and the second allgather hands it to the others.
#include <algorithm>
#include <vector>

#include "bootstrap/unique_id.h"
#include "core/comm.h"

namespace weft {
namespace {

struct SplitEntry {
  int32_t color;
  int32_t key;
  int32_t rank;
};

}  // namespace

Status splitComm(weftComm* comm, int color, int key, const CommConfig& config, weftComm** newcomm) {
  *newcomm = nullptr;
  // The split talks over the bootstrap ring, not the fabric: transfers left outstanding may wait
  // on (their peers may answer only after the split).
  comm->executor->drain(/*background=*/false);
  if (comm->failed.load()) return commFailure(comm);
  const Deadline deadline = Deadline::after(comm->config.timeoutMs);

  SplitEntry mine{color, key, comm->rank};
  std::vector<SplitEntry> entries(comm->nranks);
  WEFT_TRY(comm->bootstrap->allgather(&mine, sizeof(mine), entries.data(), deadline)
               .withContext("weftCommSplit"));
  std::vector<SplitEntry> members;
  for (const SplitEntry& entry : entries) {
    if (color != WEFT_SPLIT_NOCOLOR && entry.color == color) members.push_back(entry);
  }
  std::sort(members.begin(), members.end(), [](const SplitEntry& a, const SplitEntry& b) {
    return a.key != b.key ? a.key < b.key : a.rank < b.rank;
  });

  weftUniqueId id{};
  const bool leader = !members.empty() && members.front().rank == comm->rank;
  if (leader) WEFT_TRY(bootstrap::createUniqueId(&id));
  std::vector<weftUniqueId> ids(comm->nranks);
  WEFT_TRY(comm->bootstrap->allgather(&id, sizeof(id), ids.data(), deadline)
               .withContext("weftCommSplit"));
  if (members.empty()) return Status::ok();

  int newRank = 0;
  while (members[newRank].rank != comm->rank) ++newRank;
  bootstrap::UniqueIdContents contents;
  WEFT_TRY(bootstrap::decodeUniqueId(ids[members.front().rank], &contents));
  return createComm(static_cast<int>(members.size()), contents, newRank, config, newcomm);
}

}  // namespace weft
