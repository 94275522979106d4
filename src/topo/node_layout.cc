#include "topo/node_layout.h"

#include <algorithm>
#include <map>

namespace weft::topo {

int NodeLayout::minPerNode() const {
  size_t least = nodeRanks.empty() ? 0 : nodeRanks.front().size();
  for (const auto& ranks : nodeRanks) least = std::min(least, ranks.size());
  return static_cast<int>(least);
}

int NodeLayout::maxPerNode() const {
  size_t most = 0;
  for (const auto& ranks : nodeRanks) most = std::max(most, ranks.size());
  return static_cast<int>(most);
}

bool NodeLayout::numberedByNode() const {
  for (int r = 1; r < nranks(); ++r) {
    if (nodeOf[r] < nodeOf[r - 1]) return false;
  }
  return true;
}

std::vector<int> NodeLayout::localRankAcrossNodes(int j) const {
  std::vector<int> ranks;
  for (const auto& members : nodeRanks) {
    if (j < static_cast<int>(members.size())) ranks.push_back(members[j]);
  }
  return ranks;
}

std::string NodeLayout::summary() const {
  std::string text = std::to_string(nranks()) + " rank" + (nranks() == 1 ? "" : "s") + " on " +
                     std::to_string(nodes()) + " node" + (nodes() == 1 ? "" : "s") + ", ";
  if (uniform()) {
    text += std::to_string(maxPerNode()) + " per node";
  } else {
    text += std::to_string(minPerNode()) + " to " + std::to_string(maxPerNode()) + " per node";
  }
  if (nodes() > 1) text += numberedByNode() ? ", numbered node by node" : ", numbered across nodes";
  return text;
}

NodeLayout buildNodeLayout(const std::vector<uint64_t>& hostIds) {
  NodeLayout layout;
  std::map<uint64_t, int> nodeIndex;
  for (uint64_t host : hostIds) {
    auto [it, added] = nodeIndex.emplace(host, static_cast<int>(layout.nodeRanks.size()));
    if (added) layout.nodeRanks.emplace_back();
    const int rank = static_cast<int>(layout.nodeOf.size());
    layout.nodeOf.push_back(it->second);
    layout.localIndexOf.push_back(static_cast<int>(layout.nodeRanks[it->second].size()));
    layout.nodeRanks[it->second].push_back(rank);
  }
  return layout;
}

NodeLayout describedNodeLayout(int nodes, int perNode, bool roundRobin) {
  std::vector<uint64_t> hostIds;
  for (int r = 0; r < nodes * perNode; ++r) {
    hostIds.push_back(static_cast<uint64_t>(roundRobin ? r % nodes : r / perNode));
  }
  return buildNodeLayout(hostIds);
}

}  // namespace weft::topo
