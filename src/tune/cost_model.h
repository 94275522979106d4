// The alpha-beta-gamma cost model behind the tuner. Each link class (shared memory inside a
// node, the network between nodes) has a per-message latency alpha and a per-byte time beta;
// gamma is the reduction time per byte. An algorithm's predicted time is the sum over its steps
// of the slowest transfer in that step, where a network transfer's beta is multiplied by the
// number of the node's ranks that use the node's link in that same step (they share its
// bandwidth). The step structure comes from the real rank numbering (ring neighbours and
// recursive-doubling partners are on other nodes or not), so machine-by-machine and interleaved
// numberings get different predictions. Everything is a pure function of the layout and the
// parameters, so every rank (and weft_tune) computes the same numbers.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "algos/plan.h"
#include "base/call.h"
#include "base/status.h"
#include "topo/node_layout.h"

namespace weft::tune {

struct LinkCost {
  double alphaMicros = 0;
  double betaMicrosPerByte = 0;
  double time(double bytes, double sharers = 1) const {
    return alphaMicros + bytes * betaMicrosPerByte * sharers;
  }
};

struct CostParams {
  LinkCost shm{2.0, 1.0 / 4000.0};           // 4 GB/s per rank, 2 us per message
  LinkCost net{25.0, 1.0 / 1250.0};          // 10 Gbit/s, 25 us (TCP through the kernel)
  LinkCost rdma{3.0, 1.0 / 12500.0};         // 100 Gbit/s, 3 us: the net link when rdma serves it
  double gammaMicrosPerByte = 1.0 / 8000.0;  // 8 GB/s of reduction
  // The GPU link class (device_paths.h): one GPU's memory as the device-direct kernels of the
  // ranks sharing it use it together (a kernel launch and its wait per call), and the copies
  // between a GPU and pinned host memory that staging pays.
  LinkCost gpu{15.0, 1.0 / 1000000.0};  // 1 TB/s shared by the GPU's ranks, 15 us
  LinkCost copy{10.0, 1.0 / 25000.0};   // 25 GB/s, 10 us per copy
  // Each node's own network link, by node index, where they differ (calibration measures them;
  // empty: every node's is `net`). `net` is then the worst of them, for the steps the model
  // does not price node by node.
  std::vector<LinkCost> nodeNet;
};

// "1Gbit,50us" or "3.2GB/s,8us" (either part may be left out) into a LinkCost.
Status parseLink(const std::string& text, LinkCost* out);
std::string describeLink(const LinkCost& link);
// Gives each node its own network link (index: node) and makes `net` the worst of them.
void useNodeLinks(std::vector<LinkCost> links, CostParams* params);

// The messages each rank handles in one broadcast from rank 0 along a tree or chain, by rank:
// those that cross to another node and those that stay on it.
struct BroadcastMessages {
  std::vector<int> crossing;
  std::vector<int> local;
  int crossingTotal = 0;  // messages (each counted once) that cross nodes
  int localTotal = 0;
};

// What the model needs from the layout, computed once per communicator.
struct CostLayout {
  int nranks = 1;
  int nodes = 1;
  int minPerNode = 1;
  int maxPerNode = 1;
  bool intraShm = true;  // ranks of a node talk through shared memory (else through the network)
  // Ring: the most ranks of one node whose right neighbour is on another node (0: none is).
  int ringCrossing = 0;
  // Recursive doubling over the largest power of two p <= n, step k (partner at distance 2^k
  // among p virtual ranks): the most ranks of one node whose partner is on another node.
  std::vector<int> doublingCrossing;
  // The fold of the n - p extra ranks: the most ranks of one node handing data across.
  int foldCrossing = 0;
  // Bruck's rounds (all-gather, all-to-all), round k sending to the rank 2^k away: the most
  // ranks of one node whose partner is on another node.
  std::vector<int> bruckCrossing;
  // All-to-all: the blocks that leave one node (each of its P ranks sends one to each of the
  // n - P ranks elsewhere), for pairwise exchange, which posts them all at once.
  int alltoallCrossing = 0;
  // The most runs of consecutive ranks on one node (1 where ranks are numbered node by node):
  // a stage among nodes that moves a node's blocks sends one message per run.
  int runsPerNode = 1;
  // Double binary tree: the most tree edges (both trees) leaving one node, and the height.
  int treeCrossing = 0;
  int treeHeight = 0;
  // The same counts node by node (index: node), for links that differ between nodes.
  std::vector<int> ringPerNode;
  std::vector<std::vector<int>> doublingPerNode;
  std::vector<int> foldPerNode;
  std::vector<int> treePerNode;
  std::vector<std::vector<int>> bruckPerNode;
  std::vector<int> alltoallPerNode;
  // Broadcast schedules over the whole communicator (binomial tree, chain in rank order), over
  // one rank per node (the two-level broadcast's stage among nodes), and inside every node at
  // once.
  BroadcastMessages binomialMessages;
  BroadcastMessages chainMessages;
  BroadcastMessages leadersBinomialMessages;
  BroadcastMessages leadersChainMessages;
  BroadcastMessages nodeBinomialMessages;
  BroadcastMessages nodeChainMessages;
  // Inside every node on its shared windows: each rank of a node with others copies once per
  // round (the root in, the rest out).
  BroadcastMessages nodeWindowCopies;
  // CPU sharing: the most ranks (and nodes' leaders) per hardware thread on one machine. Where
  // ranks outnumber cores (the seeds' one process per core group, or emulated nodes sharing a
  // machine), a step that keeps every rank busy takes proportionally longer; a two-level
  // schedule whose network stage involves only the leaders pays less.
  double ranksPerCore = 1;    // the cost of a step scales with max(1, this)
  double leadersPerCore = 1;  // per leader; the split variant's L groups multiply it by L
  // What one round of the shared-window algorithms holds (half a node's window).
  double windowAreaBytes = 4 << 20;
};

CostLayout buildCostLayout(const topo::NodeLayout& nodes, bool intraShm);
// Fills ranksPerCore and leadersPerCore from each rank's machine identity and core count.
void setCpuSharing(const topo::NodeLayout& nodes, const std::vector<uint64_t>& machineOf,
                   const std::vector<int>& coresOf, CostLayout* layout);

// Predicted microseconds for one call of `coll` with `algo` (and, for two-level algorithms,
// `inner` among nodes) on `bytes` (for all-gather, reduce-scatter and all-to-all: the whole
// buffer of n blocks, CallSizes::message).
double predictMicros(const CostParams& params, const CostLayout& layout, CollType coll, AlgoId algo,
                     AlgoId inner, size_t bytes, size_t sliceBytes);

// Whether Rabenseifner's halving should start with the nearest partner (see
// allreduce_rabenseifner.cc): true where that puts fewer bytes on the network.
bool rabenseifnerNearestFirst(const CostLayout& layout);

// The double binary tree pipelines each half of the buffer in chunks; it needs several chunks
// per half to overlap its up and down phases, so its chunk shrinks below the Plan's slice for
// mid-size messages (down to 16 KiB).
size_t treeChunkBytes(size_t bytes, size_t sliceBytes);

// The algorithms the model compares for a collective on this layout (two-level ones only where
// some node has several ranks and there are several nodes).
std::vector<AlgoId> modelledAlgos(CollType coll, const CostLayout& layout);
// The stages among nodes that a two-level algorithm can use for this collective.
std::vector<AlgoId> innerAlgos(CollType coll);

}  // namespace weft::tune
