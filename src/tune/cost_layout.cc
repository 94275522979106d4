// What the cost model knows of a layout before pricing anything: which nodes each step of
// every schedule crosses and how often (buildCostLayout), how many ranks and leaders share a
// core (setCpuSharing), and the links it prices steps on (parseLink, useNodeLinks).
#include "tune/cost_model.h"

#include "algos/ring_math.h"
#include "algos/tree_math.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>

namespace weft::tune {
namespace {

int most(const std::vector<int>& perNode) {
  return perNode.empty() ? 0 : *std::max_element(perNode.begin(), perNode.end());
}

// Crossing edges at each node, for edges given as (rank, rank).
std::vector<int> crossingPerNode(const topo::NodeLayout& nodes,
                                 const std::vector<std::pair<int, int>>& edges) {
  std::vector<int> perNode(nodes.nodes(), 0);
  for (auto [a, b] : edges) {
    if (nodes.nodeOf[a] == nodes.nodeOf[b]) continue;
    ++perNode[nodes.nodeOf[a]];
    ++perNode[nodes.nodeOf[b]];
  }
  return perNode;
}

// For sends given as (from, to): the transfers each node's link carries in its busier
// direction (links are full duplex: a node's sends and receives do not share bandwidth, but a
// node that only receives, as in a fold, still has its link carry the message).
std::vector<int> transfersPerNode(const topo::NodeLayout& nodes,
                                  const std::vector<std::pair<int, int>>& sends) {
  std::vector<int> out(nodes.nodes(), 0), in(nodes.nodes(), 0);
  for (auto [from, to] : sends) {
    if (nodes.nodeOf[from] == nodes.nodeOf[to]) continue;
    ++out[nodes.nodeOf[from]];
    ++in[nodes.nodeOf[to]];
  }
  for (size_t node = 0; node < out.size(); ++node) out[node] = std::max(out[node], in[node]);
  return out;
}

// Counts each rank's messages in a broadcast schedule given by its sends (from, to).
BroadcastMessages broadcastMessages(const topo::NodeLayout& nodes,
                                    const std::vector<std::pair<int, int>>& sends) {
  BroadcastMessages messages;
  const size_t n = static_cast<size_t>(nodes.nranks());
  messages.crossing.assign(n, 0);
  messages.local.assign(n, 0);
  for (auto [from, to] : sends) {
    const bool crosses = nodes.nodeOf[from] != nodes.nodeOf[to];
    std::vector<int>& counts = crosses ? messages.crossing : messages.local;
    ++counts[from];
    ++counts[to];
    ++(crosses ? messages.crossingTotal : messages.localTotal);
  }
  return messages;
}

// A binomial broadcast over `members` from members[0]: the member at position r receives from
// position r minus r's lowest set bit (broadcast_binomial.cc).
void addBinomialSends(const std::vector<int>& members, std::vector<std::pair<int, int>>* sends) {
  for (size_t r = 1; r < members.size(); ++r)
    sends->emplace_back(members[r - (r & -r)], members[r]);
}

// A chain from members[0] through the members in order (broadcast_chain.cc).
void addChainSends(const std::vector<int>& members, std::vector<std::pair<int, int>>* sends) {
  for (size_t r = 1; r < members.size(); ++r) sends->emplace_back(members[r - 1], members[r]);
}

}  // namespace

Status parseLink(const std::string& text, LinkCost* out) {
  std::stringstream parts(text);
  std::string part;
  while (std::getline(parts, part, ',')) {
    char* end = nullptr;
    double value = std::strtod(part.c_str(), &end);
    std::string unit = end ? std::string(end) : "";
    if (end == part.c_str() || value <= 0)
      return invalidArgument("link '" + text + "': bad number in '" + part + "'");
    if (unit == "us") {
      out->alphaMicros = value;
    } else if (unit == "ms") {
      out->alphaMicros = value * 1000;
    } else if (unit == "Gbit" || unit == "gbit" || unit == "Mbit" || unit == "mbit" ||
               unit == "GB/s" || unit == "MB/s") {
      double bytesPerSecond = value * (unit[0] == 'G' || unit[0] == 'g' ? 1e9 : 1e6);
      if (unit.find("bit") != std::string::npos) bytesPerSecond /= 8;
      out->betaMicrosPerByte = 1e6 / bytesPerSecond;
    } else {
      return invalidArgument("link '" + text + "': unknown unit '" + unit +
                             "' (use us, ms, Gbit, Mbit, GB/s or MB/s)");
    }
  }
  return Status::ok();
}

std::string describeLink(const LinkCost& link) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.3g GB/s, %.3g us", 1e-3 / link.betaMicrosPerByte,
                link.alphaMicros);
  return text;
}

void useNodeLinks(std::vector<LinkCost> links, CostParams* params) {
  if (links.empty()) return;
  LinkCost worst = links[0];
  for (const LinkCost& link : links) {
    worst.alphaMicros = std::max(worst.alphaMicros, link.alphaMicros);
    worst.betaMicrosPerByte = std::max(worst.betaMicrosPerByte, link.betaMicrosPerByte);
  }
  params->net = worst;
  params->nodeNet = std::move(links);
}

CostLayout buildCostLayout(const topo::NodeLayout& nodes, bool intraShm) {
  CostLayout layout;
  const int n = nodes.nranks();
  layout.nranks = n;
  layout.nodes = nodes.nodes();
  layout.minPerNode = nodes.minPerNode();
  layout.maxPerNode = nodes.maxPerNode();
  layout.intraShm = intraShm;
  if (n <= 1) return layout;
  std::vector<std::pair<int, int>> sends;
  sends.reserve(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) sends.emplace_back(r, (r + 1) % n);
  layout.ringPerNode = transfersPerNode(nodes, sends);
  layout.ringCrossing = most(layout.ringPerNode);
  const int power = ring::largestPowerOfTwoAtMost(n);
  const int rem = n - power;
  for (int mask = 1; mask < power; mask <<= 1) {
    sends.clear();
    for (int v = 0; v < power; ++v)
      sends.emplace_back(ring::foldedRank(v, rem), ring::foldedRank(v ^ mask, rem));
    layout.doublingPerNode.push_back(transfersPerNode(nodes, sends));
    layout.doublingCrossing.push_back(most(layout.doublingPerNode.back()));
  }
  sends.clear();
  for (int r = 0; r + 1 < 2 * rem; r += 2) sends.emplace_back(r, r + 1);
  layout.foldPerNode = transfersPerNode(nodes, sends);
  layout.foldCrossing = most(layout.foldPerNode);
  for (int distance = 1; distance < n; distance *= 2) {
    sends.clear();
    for (int r = 0; r < n; ++r) sends.emplace_back(r, (r + distance) % n);
    layout.bruckPerNode.push_back(transfersPerNode(nodes, sends));
    layout.bruckCrossing.push_back(most(layout.bruckPerNode.back()));
  }
  layout.alltoallPerNode.assign(nodes.nodes(), 0);
  for (int node = 0; node < nodes.nodes(); ++node) {
    const int here = static_cast<int>(nodes.nodeRanks[node].size());
    layout.alltoallPerNode[node] = here * (n - here);
  }
  layout.alltoallCrossing = most(layout.alltoallPerNode);
  for (const std::vector<int>& ranks : nodes.nodeRanks) {
    int runs = 0;
    for (size_t i = 0; i < ranks.size(); ++i) runs += i == 0 || ranks[i] != ranks[i - 1] + 1;
    layout.runsPerNode = std::max(layout.runsPerNode, runs);
  }
  std::vector<std::pair<int, int>> edges;
  for (int which = 0; which < 2; ++which) {
    for (int r = 0; r < n; ++r) {
      int parent = tree::nodeOf(r, n, which).parent;
      if (parent >= 0) edges.emplace_back(r, parent);
    }
  }
  layout.treePerNode = crossingPerNode(nodes, edges);
  layout.treeCrossing = most(layout.treePerNode);
  layout.treeHeight = tree::heightOf(n);

  std::vector<int> everyone(static_cast<size_t>(n)), leaders;
  for (int r = 0; r < n; ++r) everyone[static_cast<size_t>(r)] = r;
  for (int node = 0; node < nodes.nodes(); ++node) leaders.push_back(nodes.leaderOf(node));
  auto messagesOf =
      [&](void (*schedule)(const std::vector<int>&, std::vector<std::pair<int, int>>*),
          const std::vector<std::vector<int>>& groups) {
        std::vector<std::pair<int, int>> scheduleSends;
        for (const std::vector<int>& group : groups) schedule(group, &scheduleSends);
        return broadcastMessages(nodes, scheduleSends);
      };
  layout.binomialMessages = messagesOf(addBinomialSends, {everyone});
  layout.chainMessages = messagesOf(addChainSends, {everyone});
  layout.leadersBinomialMessages = messagesOf(addBinomialSends, {leaders});
  layout.leadersChainMessages = messagesOf(addChainSends, {leaders});
  layout.nodeBinomialMessages = messagesOf(addBinomialSends, nodes.nodeRanks);
  layout.nodeChainMessages = messagesOf(addChainSends, nodes.nodeRanks);
  BroadcastMessages& copies = layout.nodeWindowCopies;
  copies.crossing.assign(static_cast<size_t>(n), 0);
  copies.local.assign(static_cast<size_t>(n), 0);
  for (const std::vector<int>& node : nodes.nodeRanks) {
    if (node.size() < 2) continue;
    for (int r : node) copies.local[static_cast<size_t>(r)] = 1;
    copies.localTotal += static_cast<int>(node.size());
  }
  return layout;
}

bool rabenseifnerNearestFirst(const CostLayout& layout) {
  // Network bytes (weighted by link sharers) per unit of message, either way round.
  const int steps = static_cast<int>(layout.doublingCrossing.size());
  double nearest = 0, farthest = 0;
  for (int k = 0; k < steps; ++k) {
    nearest += layout.doublingCrossing[k] / static_cast<double>(1 << (k + 1));
    farthest += layout.doublingCrossing[k] / static_cast<double>(1 << (steps - k));
  }
  return nearest < farthest;
}

void setCpuSharing(const topo::NodeLayout& nodes, const std::vector<uint64_t>& machineOf,
                   const std::vector<int>& coresOf, CostLayout* layout) {
  struct Machine {
    int ranks = 0;
    int leaders = 0;
    int cores = 1 << 30;
  };
  std::map<uint64_t, Machine> machines;
  for (int r = 0; r < nodes.nranks(); ++r) {
    Machine& machine = machines[machineOf[r]];
    ++machine.ranks;
    machine.leaders += nodes.leaderOf(nodes.nodeOf[r]) == r;
    machine.cores = std::min(machine.cores, std::max(1, coresOf[r]));
  }
  // Raw ratios (they may be below 1): the split variant multiplies the leaders' by its parts.
  layout->ranksPerCore = layout->leadersPerCore = 0;
  for (const auto& [id, machine] : machines) {
    layout->ranksPerCore = std::max(layout->ranksPerCore, double(machine.ranks) / machine.cores);
    layout->leadersPerCore =
        std::max(layout->leadersPerCore, double(machine.leaders) / machine.cores);
  }
}

}  // namespace weft::tune
