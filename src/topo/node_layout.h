// Which ranks share a node, from the host identities every rank published at init. Ranks may be
// numbered in any order (machine by machine, round robin, or scattered) and nodes may hold
// different numbers of ranks: nothing here assumes otherwise, unlike the seed ADR's setup.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace weft::topo {

struct NodeLayout {
  std::vector<int> nodeOf;                  // node index of each rank
  std::vector<int> localIndexOf;            // position of each rank within its node
  std::vector<std::vector<int>> nodeRanks;  // each node's ranks, ascending; nodes ordered by
                                            // their lowest rank, so node 0 holds rank 0

  int nranks() const { return static_cast<int>(nodeOf.size()); }
  int nodes() const { return static_cast<int>(nodeRanks.size()); }
  int minPerNode() const;
  int maxPerNode() const;
  bool uniform() const { return minPerNode() == maxPerNode(); }
  // Ranks 0..P-1 on the first node, P..2P-1 on the next, and so on.
  bool numberedByNode() const;
  // The lowest rank of a node: the leader the two-level algorithms use.
  int leaderOf(int node) const { return nodeRanks[node].front(); }
  // Local rank j of every node that has one, in node order.
  std::vector<int> localRankAcrossNodes(int j) const;
  // "8 ranks on 4 nodes, 2 per node, numbered node by node".
  std::string summary() const;
};

// hostIds[r] is rank r's host identity.
NodeLayout buildNodeLayout(const std::vector<uint64_t>& hostIds);
// nodes x perNode ranks, numbered node by node or round robin (for the tuner's tables).
NodeLayout describedNodeLayout(int nodes, int perNode, bool roundRobin);

}  // namespace weft::topo
