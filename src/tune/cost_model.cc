#include "tune/cost_model.h"

#include "algos/ring_math.h"
#include "algos/two_level.h"

#include <algorithm>
#include <cmath>
#include <memory>

namespace weft::tune {
namespace {

int ceilLog2(int n) {
  int steps = 0;
  while ((1 << steps) < n) ++steps;
  return steps;
}

// The same computation for N ranks on N nodes: the leaders' (or split groups') layout.
const CostLayout& acrossNodes(int nodes) {
  thread_local std::vector<std::unique_ptr<CostLayout>> cache;
  for (const auto& layout : cache) {
    if (layout->nranks == nodes) return *layout;
  }
  if (cache.size() > 8) cache.clear();
  cache.push_back(std::make_unique<CostLayout>(
      buildCostLayout(topo::describedNodeLayout(nodes, 1, false), true)));
  return *cache.back();
}

struct Costing {
  const CostParams& params;
  const CostLayout& layout;
  size_t sliceBytes;
  double sharers;  // ranks of a node using its link at once beyond what the layout implies
  double busy;     // active ranks per hardware thread (>= 1): every step is that much slower
  // The same for moving and reducing bytes, where it differs (0: busy). The leaders' stage of
  // the two-level all-reduces moves its bytes at every rank's share of the cores (the
  // node-mates waiting for its result are on them too) but pays its latencies at the leaders'
  // share. At the leaders' share for both, the model took two_level_shm from 16 KiB to 4 MiB
  // where the split measured 1.1-1.5x faster; at every rank's share for both, it left
  // two_level_shm up to 4 KiB and measured 1.05-1.12x slower there in the live A/B
  // (perf/results/two_level_variants.md).
  double busyBytes = 0;

  LinkCost link(int crossing) const {
    LinkCost chosen = crossing > 0 ? params.net : layout.intraShm ? params.shm : params.net;
    return {chosen.alphaMicros * busy, chosen.betaMicrosPerByte * bytesBusy()};
  }
  double bytesBusy() const { return busyBytes > 0 ? busyBytes : busy; }
  double step(int crossing, double bytes) const {
    return link(crossing).time(bytes, std::max(1, crossing) * sharers);
  }
  // Node i's own network link where calibration measured them apart.
  bool perNodeLinks() const {
    return static_cast<int>(params.nodeNet.size()) == layout.nodes && layout.nodes > 1;
  }
  LinkCost nodeLink(size_t node) const {
    const LinkCost& own = params.nodeNet[node];
    return {own.alphaMicros * busy, own.betaMicrosPerByte * bytesBusy()};
  }
  // The largest cost(link, transfers) over the nodes that a step's transfers cross.
  template <typename Cost>
  double slowestNode(const std::vector<int>& perNode, Cost cost) const {
    double slowest = 0;
    for (size_t node = 0; node < perNode.size(); ++node) {
      if (perNode[node] > 0) slowest = std::max(slowest, cost(nodeLink(node), perNode[node]));
    }
    return slowest;
  }
  // A step whose crossing transfers are counted node by node: it ends when the slowest node's
  // link has carried its own, so one slow node costs the steps that cross it and no others.
  double stepAt(const std::vector<int>& perNode, int crossing, double bytes) const {
    if (crossing == 0 || !perNodeLinks()) return step(crossing, bytes);
    return slowestNode(perNode, [&](const LinkCost& own, int transfers) {
      return own.time(bytes, transfers * sharers);
    });
  }
  // The latency of the slowest link that a step crossing these nodes uses.
  double alphaAt(const std::vector<int>& perNode, int crossing) const {
    if (crossing == 0 || !perNodeLinks()) return link(crossing).alphaMicros;
    return slowestNode(perNode, [](const LinkCost& own, int) { return own.alphaMicros; });
  }
  double gamma(double bytes) const { return bytes * params.gammaMicrosPerByte * bytesBusy(); }
  int anyCrossing() const { return layout.nodes > 1 ? 1 : 0; }

  // A step that waits on several ranks at once ends when the last of them has been scheduled
  // and has sent: each partner beyond the first adds half a message latency. Recursive doubling
  // waits on one partner per step, the ring on two (left and right), the double tree on up to
  // three (parent and two children). Priced at one latency whatever the partners, the model
  // chose the tree and the ring among 3 nodes where they measured 1.3-1.9x recursive doubling
  // (docs/TUNING.md "Fitting the model").
  static double latenciesPerStep(int partners) { return (partners + 1) / 2.0; }

  double allreduceRing(double bytes) const {
    const int n = layout.nranks;
    if (n == 1) return 0;
    const double waits = latenciesPerStep(n > 2 ? 2 : 1) - 1;
    return 2 * (n - 1) *
               (stepAt(layout.ringPerNode, layout.ringCrossing, bytes / n) +
                waits * alphaAt(layout.ringPerNode, layout.ringCrossing)) +
           gamma(bytes) * (n - 1) / n;
  }
  double fold(double bytes) const {
    return layout.nranks == ring::largestPowerOfTwoAtMost(layout.nranks)
               ? 0
               : 2 * stepAt(layout.foldPerNode, layout.foldCrossing, bytes) + gamma(bytes);
  }
  double doublingStep(size_t k, double bytes) const {
    return stepAt(layout.doublingPerNode[k], layout.doublingCrossing[k], bytes);
  }
  double allreduceDoubling(double bytes) const {
    double total = fold(bytes);
    for (size_t k = 0; k < layout.doublingCrossing.size(); ++k)
      total += doublingStep(k, bytes) + gamma(bytes);
    return total;
  }
  // Step k (distance 2^k) carries S/2^(k+1) when the nearest partner goes first, else
  // S/2^(steps-k).
  double allreduceRabenseifner(double bytes) const {
    const bool nearestFirst = rabenseifnerNearestFirst(layout);
    const int steps = static_cast<int>(layout.doublingCrossing.size());
    double total = fold(bytes);
    for (int k = 0; k < steps; ++k) {
      double part = bytes / static_cast<double>(1 << (nearestFirst ? k + 1 : steps - k));
      total += 2 * doublingStep(k, part) + gamma(part);
    }
    return total;
  }
  double allreduceTree(double bytes) const {
    if (layout.nranks == 1) return 0;
    const double chunk = std::min<double>(
        bytes / 2, static_cast<double>(treeChunkBytes(static_cast<size_t>(bytes), sliceBytes)));
    const int crossing = layout.treeCrossing;
    LinkCost edge = link(crossing);
    if (perNodeLinks() && crossing > 0) {
      // The slowest node that tree edges cross paces the pipeline; per byte, the node whose
      // own edges take longest to carry their half of the data.
      edge.alphaMicros = alphaAt(layout.treePerNode, crossing);
      edge.betaMicrosPerByte =
          slowestNode(layout.treePerNode, [](const LinkCost& own,
                                             int edges) { return own.betaMicrosPerByte * edges; }) /
          crossing;
    }
    // Each half goes up and down its tree once, pipelined: one iteration per chunk plus the
    // height twice to fill and drain the pipeline (allreduce_tree.cc), so even one chunk takes
    // 2H + 1 dependent iterations, each waiting on up to three partners in the two trees;
    // plus each node link carrying half the data per crossing edge.
    const double chunks = std::ceil(bytes / 2 / std::max(1.0, chunk));
    return (chunks + 2 * layout.treeHeight) * edge.alphaMicros * latenciesPerStep(3) +
           2 * layout.treeHeight * chunk * edge.betaMicrosPerByte +
           bytes / 2 * edge.betaMicrosPerByte * std::max(1, crossing) * sharers + gamma(bytes);
  }
  double flatAllreduce(AlgoId algo, double bytes) const {
    switch (algo) {
      case AlgoId::kRing:
        return allreduceRing(bytes);
      case AlgoId::kRecursiveDoubling:
        return allreduceDoubling(bytes);
      case AlgoId::kRabenseifner:
        return allreduceRabenseifner(bytes);
      case AlgoId::kTree:
        return allreduceTree(bytes);
      default:
        return -1;
    }
  }

  double binomial(int ranks, double bytes, const LinkCost& edge, bool reducing) const {
    return ceilLog2(ranks) * (edge.time(bytes) + (reducing ? gamma(bytes) : 0));
  }
  double chain(int ranks, double bytes, const LinkCost& edge, bool reducing, double share) const {
    if (ranks <= 1) return 0;
    const double chunk = std::min<double>(bytes, static_cast<double>(sliceBytes));
    const double chunks = std::ceil(bytes / std::max(1.0, chunk));
    return (ranks - 2 + chunks) * (edge.time(chunk, share) + (reducing ? gamma(chunk) : 0));
  }
  // Reduce or broadcast among a node's P ranks, as the two-level algorithms run them.
  double intraTree(double bytes, bool reducing) const {
    const int ranks = layout.maxPerNode;
    const LinkCost edge = link(0);
    return bytes > two_level::kIntraChainBytes ? chain(ranks, bytes, edge, reducing, 1)
                                               : binomial(ranks, bytes, edge, reducing);
  }

  // A reduce or broadcast among a node's ranks on its shared windows: one flag round per
  // window area where the binomial tree takes log2 P dependent steps and the chain one step
  // per slice, with the copies into and out of the windows made by every node-mate at once.
  // Up to one window area that is about one message time. Beyond it the stage goes in rounds
  // whose copies in and out no longer overlap (each round waits for every node-mate), so the
  // bytes past the first area count twice: measured at 16-64 MiB, two_level_shm took
  // 1.08-1.23x two_level_leader's pipelined chains, at 1-4 MiB 0.78-1.0x.
  double windowStage(double bytes) const {
    const LinkCost edge = link(0);
    const double rounds = std::max(1.0, std::ceil(bytes / layout.windowAreaBytes));
    const double beyond = std::max(0.0, bytes - layout.windowAreaBytes);
    return rounds * edge.alphaMicros + (bytes + beyond) * edge.betaMicrosPerByte;
  }

  // A broadcast as a loop of calls runs it, which is what the benchmarks time and what a
  // model's parameter broadcasts do. No rank waits for the others to finish: the root returns
  // once its sends have left, so each call's messages follow the previous call's down the tree
  // or chain, and a call costs what its busiest rank does (every message it handles, one after
  // another), or, where ranks outnumber cores, the bytes that all ranks move on those shared
  // cores. The chain's n - 1 latencies from end to end do not add up: on 8 emulated ranks a
  // 16-byte broadcast took about two message latencies by chain and three by binomial tree,
  // where pricing one call's critical path, every step slowed by the shared cores, had
  // predicted 2-25x the measured times (docs/TUNING.md "The cost model").
  struct BroadcastStage {
    const BroadcastMessages& messages;
    double units;      // messages per schedule edge: 1, or a chain's slices
    double unitBytes;  // bytes per message
    bool pipelined;    // a chain: a rank receives the next slice while it sends the last
  };
  // One rank's messages in a stage: a tree's one after another; a chain's receive and send
  // overlap slice by slice, so only the slower of its two edges is paid for every slice.
  double rankStage(const BroadcastStage& stage, size_t r, const LinkCost& net,
                   const LinkCost& local) const {
    const double crossing = stage.messages.crossing[r] * net.time(stage.unitBytes);
    const double onNode = stage.messages.local[r] * local.time(stage.unitBytes);
    if (!stage.pipelined) return stage.units * (crossing + onNode);
    const double slower = std::max(stage.messages.crossing[r] > 0 ? net.time(stage.unitBytes) : 0,
                                   stage.messages.local[r] > 0 ? local.time(stage.unitBytes) : 0);
    return stage.units * slower + (crossing + onNode - slower);
  }
  double broadcastLoop(std::initializer_list<BroadcastStage> stages) const {
    const LinkCost& net = params.net;
    const LinkCost& local = layout.intraShm ? params.shm : params.net;
    double busiest = 0;
    // Every stage counts all ranks (none, in a layout that was not built from nodes).
    for (size_t r = 0; r < stages.begin()->messages.crossing.size(); ++r) {
      double own = 0;
      for (const BroadcastStage& stage : stages) own += rankStage(stage, r, net, local);
      busiest = std::max(busiest, own);
    }
    if (layout.ranksPerCore <= 1) return busiest;
    double bytesOnCores = 0;
    for (const BroadcastStage& stage : stages) {
      bytesOnCores += stage.units * stage.unitBytes *
                      (stage.messages.crossingTotal * net.betaMicrosPerByte +
                       stage.messages.localTotal * local.betaMicrosPerByte);
    }
    return std::max(busiest, bytesOnCores * layout.ranksPerCore / layout.nranks);
  }
  BroadcastStage treeStage(const BroadcastMessages& messages, double bytes) const {
    return {messages, 1, bytes, false};
  }
  BroadcastStage chainStage(const BroadcastMessages& messages, double bytes) const {
    const double slice = std::min<double>(bytes, static_cast<double>(sliceBytes));
    return {messages, std::ceil(bytes / std::max(1.0, slice)), slice, true};
  }
  double broadcastFlat(AlgoId algo, double bytes) const {
    if (algo == AlgoId::kBinomial)
      return broadcastLoop({treeStage(layout.binomialMessages, bytes)});
    return broadcastLoop({chainStage(layout.chainMessages, bytes)});
  }
  // Whether a broadcast of `bytes` inside each node runs on its shared windows
  // (two_level::intraBroadcastAlgo).
  bool intraOnWindows(double bytes) const {
    return layout.intraShm && bytes >= static_cast<double>(two_level::kIntraWindowsFromBytes);
  }
  // The windows' rounds: every copy of a round waits for the round before it, as a tree's.
  BroadcastStage windowCopies(double bytes) const {
    return {layout.nodeWindowCopies, std::max(1.0, std::ceil(bytes / layout.windowAreaBytes)),
            std::min(bytes, layout.windowAreaBytes), false};
  }
  // The two-level broadcast: `inner` among one rank per node, then a tree, chain or window
  // rounds inside every node (two_level::intraBroadcastAlgo).
  double broadcastTwoLevel(AlgoId inner, double bytes) const {
    const BroadcastStage among = inner == AlgoId::kChain
                                     ? chainStage(layout.leadersChainMessages, bytes)
                                     : treeStage(layout.leadersBinomialMessages, bytes);
    const BroadcastStage inNode = intraOnWindows(bytes) ? windowCopies(bytes)
                                  : bytes > two_level::kIntraChainBytes
                                      ? chainStage(layout.nodeChainMessages, bytes)
                                      : treeStage(layout.nodeBinomialMessages, bytes);
    return broadcastLoop({among, inNode});
  }

  // Copying bytes inside a rank's own memory (staging, rotations).
  double localCopy(double bytes) const { return bytes * params.shm.betaMicrosPerByte * busy; }

  double allgatherFlat(AlgoId algo, double bytes) const {
    const int n = layout.nranks;
    const double block = bytes / n;
    double total = 0;
    if (algo == AlgoId::kRing)
      return (n - 1) * stepAt(layout.ringPerNode, layout.ringCrossing, block);
    int k = 0;
    for (int distance = 1; distance < n; distance *= 2, ++k) {
      const double sent = block * std::min(distance, n - distance);
      if (algo == AlgoId::kBruck) {
        total += stepAt(layout.bruckPerNode[k], layout.bruckCrossing[k], sent);
        continue;
      }
      const int crossing = k < static_cast<int>(layout.doublingCrossing.size())
                               ? layout.doublingCrossing[k]
                               : anyCrossing();
      total += step(crossing, sent);
    }
    if (algo == AlgoId::kBruck) total += localCopy(2 * bytes);
    if (algo == AlgoId::kRecursiveDoubling) total += fold(block);
    return total;
  }

  // The ring's first half: n-1 steps of one block each, waiting on both neighbours.
  double reduceScatterRing(double bytes) const {
    const int n = layout.nranks;
    const double waits = latenciesPerStep(n > 2 ? 2 : 1) - 1;
    return (n - 1) * (stepAt(layout.ringPerNode, layout.ringCrossing, bytes / n) +
                      waits * alphaAt(layout.ringPerNode, layout.ringCrossing)) +
           gamma(bytes) * (n - 1) / n;
  }
  // Partner at distance 2^k (largest first) exchanges S 2^k / p; the fold hands the whole
  // input over before and one block back after.
  double reduceScatterHalving(double bytes) const {
    const int n = layout.nranks;
    const int power = ring::largestPowerOfTwoAtMost(n);
    double total = 0;
    if (n != power) {
      total += stepAt(layout.foldPerNode, layout.foldCrossing, bytes) + gamma(bytes) +
               stepAt(layout.foldPerNode, layout.foldCrossing, bytes / n);
    }
    for (size_t k = 0; k < layout.doublingCrossing.size(); ++k) {
      const double part = bytes * static_cast<double>(1 << k) / power;
      total += doublingStep(k, part) + gamma(part);
    }
    return total;
  }
  double reduceScatterFlat(AlgoId algo, double bytes) const {
    if (layout.nranks == 1) return 0;
    if (algo == AlgoId::kRing) return reduceScatterRing(bytes);
    if (algo == AlgoId::kRecursiveHalving) return reduceScatterHalving(bytes);
    return -1;
  }

  double alltoallFlat(AlgoId algo, double bytes) const {
    const int n = layout.nranks;
    if (n == 1) return 0;
    const double block = bytes / n;
    if (algo == AlgoId::kPairwise) {
      // Every exchange is posted at once: one latency per message sent, and each node's link
      // carries all the blocks that leave the node.
      return (n - 2) * link(layout.alltoallCrossing).alphaMicros +
             stepAt(layout.alltoallPerNode, layout.alltoallCrossing, block);
    }
    if (algo != AlgoId::kBruck) return -1;
    // Each round moves the slots whose index has the round's bit set, packed into one message
    // each way; the buffer is rotated in and out once.
    double total = localCopy(2 * bytes);
    int k = 0;
    for (int distance = 1; distance < n; distance *= 2, ++k) {
      int moving = 0;
      for (int slot = distance; slot < n; ++slot) moving += (slot & distance) != 0;
      const double sent = moving * block;
      total += stepAt(layout.bruckPerNode[k], layout.bruckCrossing[k], sent) + localCopy(2 * sent);
    }
    return total;
  }
};

}  // namespace

size_t treeChunkBytes(size_t bytes, size_t sliceBytes) {
  constexpr size_t kChunksPerHalf = 8;
  constexpr size_t kSmallestChunk = 16 * 1024;
  return std::min(sliceBytes, std::max(kSmallestChunk, bytes / 2 / kChunksPerHalf));
}

std::vector<AlgoId> innerAlgos(CollType coll) {
  if (coll == CollType::kAllReduce) {
    return {AlgoId::kRing, AlgoId::kRecursiveDoubling, AlgoId::kRabenseifner, AlgoId::kTree};
  }
  if (coll == CollType::kBroadcast || coll == CollType::kReduce) {
    return {AlgoId::kBinomial, AlgoId::kChain};
  }
  return {};
}

std::vector<AlgoId> modelledAlgos(CollType coll, const CostLayout& layout) {
  const bool twoLevel = layout.nodes > 1 && layout.maxPerNode > 1;
  std::vector<AlgoId> algos;
  switch (coll) {
    case CollType::kAllReduce:
      algos = innerAlgos(coll);
      if (twoLevel) algos.insert(algos.end(), {AlgoId::kTwoLevelLeader, AlgoId::kTwoLevelSplit});
      // Without shared memory between node-mates it would run as two_level_leader.
      if (twoLevel && layout.intraShm) algos.push_back(AlgoId::kTwoLevelShm);
      if (twoLevel) algos.push_back(AlgoId::kTwoLevelReplicated);
      break;
    case CollType::kBroadcast:
      algos = innerAlgos(coll);
      if (twoLevel) algos.push_back(AlgoId::kTwoLevelLeader);
      break;
    case CollType::kAllGather:
      algos = {AlgoId::kRing, AlgoId::kRecursiveDoubling, AlgoId::kBruck};
      if (twoLevel) algos.push_back(AlgoId::kTwoLevelLeader);
      break;
    case CollType::kReduceScatter:
      algos = {AlgoId::kRing, AlgoId::kRecursiveHalving};
      break;
    case CollType::kAlltoAll:
      algos = {AlgoId::kPairwise, AlgoId::kBruck};
      break;
    default:
      break;
  }
  return algos;
}

namespace {

// The stage among nodes of `groups` sets of ranks, one per node each, exchanging at once (the
// split's parts, the replicated all-reduce's local ranks). Each pays for the link that the
// node's groups share and for the cores that every exchanging rank shares, whichever is
// scarcer. Where the link is itself the cores (nodes emulated on one machine), paying both was
// counting one resource twice. Their latencies sit between the leaders' share and every
// exchanging rank's (the geometric mean): at every rank's share the model took two_level_shm at
// 64 KiB where the split measured 0.69-0.78x its time, while up to 4 KiB, at the leaders' share,
// it took the split where it measured 1.1-1.2x slower.
Costing groupsAmongNodes(const Costing& flat, int groups) {
  const CostLayout& layout = flat.layout;
  const double leadersBusy = std::max(1.0, layout.leadersPerCore);
  const double busy = std::max(1.0, layout.leadersPerCore * groups);
  return {flat.params,
          acrossNodes(layout.nodes),
          flat.sliceBytes,
          std::max<double>(groups, busy) / busy,
          std::sqrt(leadersBusy * busy),
          busy};
}

// The replicated all-reduce: the node's sum on every node-mate (one flag round on windows up to
// the node stage's flat limit, each rank reducing every input; recursive doubling among
// node-mates without windows), then every local rank's group all-reduces the whole buffer among
// nodes at once, as the split's parts do, and on uneven nodes one message to the extra ranks.
double replicatedAllreduce(const Costing& flat, AlgoId inner, double bytes) {
  const CostLayout& layout = flat.layout;
  const int perNode = layout.maxPerNode;
  const LinkCost edge = flat.link(0);
  double inNode = 0;
  if (perNode > 1 && layout.intraShm) {
    inNode = bytes <= kShmFlatAllreduceBytes
                 ? flat.windowStage(bytes) + flat.gamma(bytes * (perNode - 1))
                 : 2 * flat.windowStage(bytes) + flat.gamma(bytes);
  } else if (perNode > 1) {
    inNode = ceilLog2(perNode) * (edge.time(bytes) + flat.gamma(bytes));
  }
  // On uneven nodes each group's rank sends the result to the node-mates beyond the groups,
  // one message after another.
  const int groups = layout.minPerNode;
  const double extras = std::ceil(double(perNode - groups) / groups) * edge.time(bytes);
  return inNode + groupsAmongNodes(flat, groups).flatAllreduce(inner, bytes) + extras;
}

}  // namespace

double predictMicros(const CostParams& params, const CostLayout& layout, CollType coll, AlgoId algo,
                     AlgoId inner, size_t size, size_t sliceBytes) {
  const double bytes = static_cast<double>(size);
  const double allBusy = std::max(1.0, layout.ranksPerCore);
  const double leadersBusy = std::max(1.0, layout.leadersPerCore);
  Costing flat{params, layout, sliceBytes, 1, allBusy};
  const CostLayout& leaders = acrossNodes(layout.nodes);
  if (coll == CollType::kAllReduce) {
    if (algo == AlgoId::kTwoLevelLeader) {
      Costing among{params, leaders, sliceBytes, 1, leadersBusy, allBusy};
      return flat.intraTree(bytes, true) + among.flatAllreduce(inner, bytes) +
             flat.intraTree(bytes, false);
    }
    if (algo == AlgoId::kTwoLevelShm) {
      Costing among{params, leaders, sliceBytes, 1, leadersBusy, allBusy};
      const double stage = layout.maxPerNode > 1 ? flat.windowStage(bytes) : 0;
      return 2 * stage + flat.gamma(bytes / layout.maxPerNode) + among.flatAllreduce(inner, bytes);
    }
    if (algo == AlgoId::kTwoLevelSplit) {
      const int parts = layout.minPerNode;
      const double part = bytes / parts;
      // Below kSplitWindowsFromBytes, and always where node-mates share no memory, each stage
      // inside a node is a message to or from each node-mate, one after another (each part's
      // owner receives a part from every node-mate). On windows it is one flag round per window
      // area, and each rank copies what it does not own: every part but its own, or, where a
      // node has more ranks than parts (uneven nodes), the whole buffer for those that own none.
      const LinkCost edge = flat.link(0);
      const bool onWindows = layout.intraShm && bytes >= two_level::kSplitWindowsFromBytes;
      const double latencies = onWindows ? 1 : layout.maxPerNode - 1;
      const double copied = !onWindows                  ? (layout.maxPerNode - 1) * part
                            : layout.maxPerNode > parts ? bytes
                                                        : bytes - part;
      const double inNode = layout.maxPerNode > 1
                                ? latencies * edge.alphaMicros + copied * edge.betaMicrosPerByte
                                : 0;
      // The parts' exchanges among nodes run at once.
      return 2 * inNode + flat.gamma(bytes) +
             groupsAmongNodes(flat, parts).flatAllreduce(inner, part);
    }
    if (algo == AlgoId::kTwoLevelReplicated) return replicatedAllreduce(flat, inner, bytes);
    return flat.flatAllreduce(algo, bytes);
  }
  if (coll == CollType::kBroadcast) {
    if (algo == AlgoId::kTwoLevelLeader) return flat.broadcastTwoLevel(inner, bytes);
    return flat.broadcastFlat(algo, bytes);
  }
  if (coll == CollType::kAllGather) {
    if (algo == AlgoId::kTwoLevelLeader) {
      const double perNode = bytes / layout.nodes;
      Costing among{params, leaders, sliceBytes, 1, leadersBusy};
      // Each ring step among the leaders sends a node's blocks as one message per run.
      const double step =
          among.step(1, perNode) + (layout.runsPerNode - 1) * among.link(1).alphaMicros;
      const double fromLeader = layout.maxPerNode < 2        ? 0
                                : flat.intraOnWindows(bytes) ? flat.windowStage(bytes)
                                                             : flat.intraTree(bytes, false);
      return flat.link(0).time(perNode) + (layout.nodes - 1) * step + fromLeader;
    }
    return flat.allgatherFlat(algo, bytes);
  }
  if (coll == CollType::kReduceScatter) return flat.reduceScatterFlat(algo, bytes);
  if (coll == CollType::kAlltoAll) return flat.alltoallFlat(algo, bytes);
  return -1;
}

}  // namespace weft::tune
