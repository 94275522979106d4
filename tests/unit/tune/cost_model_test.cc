// The cost model: link parsing, what it reads from layouts, and the shape of its predictions.
#include <catch2/catch.hpp>

#include <algorithm>
#include <utility>

#include "tune/cost_model.h"
#include "tune/select.h"

namespace weft::tune {
namespace {

Layout clusterLayout(int nodes, int perNode, bool interleave, const char* net) {
  Layout layout;
  layout.nodes = topo::describedNodeLayout(nodes, perNode, interleave);
  layout.nranks = layout.nodes.nranks();
  layout.cost = buildCostLayout(layout.nodes, true);
  REQUIRE(parseLink(net, &layout.params.net).isOk());
  return layout;
}

CollArgs allreduce(size_t bytes) {
  CollArgs args;
  args.coll = CollType::kAllReduce;
  args.type = weftUint8;
  args.count = bytes;
  return args;
}

// 2 nodes x 4 ranks twice, one whose node-mates share memory (and so windows) and one whose
// talk over the network, on the same link: predictions differ only by the form of the stages
// inside a node.
std::pair<Layout, Layout> sharedAndNetworkNodes() {
  Layout windows = clusterLayout(2, 4, false, "3.3GB/s,5.4us");
  windows.params.shm = windows.params.net;
  Layout messages = windows;
  messages.cost = buildCostLayout(messages.nodes, false);
  return {windows, messages};
}

double predict(const Layout& layout, AlgoId algo, size_t bytes, AlgoId inner = AlgoId::kRing) {
  return predictMicros(layout.params, layout.cost, CollType::kAllReduce, algo, inner, bytes,
                       512 * 1024);
}

}  // namespace

TEST_CASE("link costs parse from bandwidth and latency", "[tune]") {
  LinkCost link;
  REQUIRE(parseLink("1Gbit,50us", &link).isOk());
  CHECK(link.alphaMicros == Approx(50));
  CHECK(link.betaMicrosPerByte == Approx(1e6 / 125e6));
  REQUIRE(parseLink("2GB/s", &link).isOk());
  CHECK(link.betaMicrosPerByte == Approx(1e6 / 2e9));
  CHECK(link.alphaMicros == Approx(50));  // unchanged: only the bandwidth was given
  Status bad = parseLink("1Gbit,5parsecs", &link);
  CHECK(bad.code() == weftInvalidArgument);
  CHECK_THAT(bad.message(), Catch::Contains("parsecs"));
  CHECK(parseLink("fast", &link).code() == weftInvalidArgument);
}

TEST_CASE("the layout's crossing counts follow the rank numbering", "[tune]") {
  CostLayout byNode = buildCostLayout(topo::describedNodeLayout(4, 2, false), true);
  CHECK(byNode.ringCrossing == 1);
  CHECK(byNode.doublingCrossing == std::vector<int>{0, 2, 2});
  CostLayout interleaved = buildCostLayout(topo::describedNodeLayout(4, 2, true), true);
  CHECK(interleaved.ringCrossing == 2);
  CHECK(interleaved.doublingCrossing == std::vector<int>{2, 2, 0});
  CostLayout single = buildCostLayout(topo::describedNodeLayout(1, 4, false), true);
  CHECK(single.ringCrossing == 0);
  CHECK(single.treeCrossing == 0);
}

TEST_CASE("Rabenseifner's halving order follows the numbering", "[tune]") {
  CHECK(rabenseifnerNearestFirst(buildCostLayout(topo::describedNodeLayout(4, 2, false), true)));
  CHECK_FALSE(
      rabenseifnerNearestFirst(buildCostLayout(topo::describedNodeLayout(4, 2, true), true)));
  CHECK_FALSE(
      rabenseifnerNearestFirst(buildCostLayout(topo::describedNodeLayout(1, 8, false), true)));
}

TEST_CASE("predictions: latency-bound small, bandwidth-bound large", "[tune]") {
  Layout layout = clusterLayout(4, 2, false, "1Gbit,100us");
  // Small: step counts decide, so recursive doubling and the two-level schedules beat the ring.
  CHECK(predict(layout, AlgoId::kRecursiveDoubling, 8) < predict(layout, AlgoId::kRing, 8));
  CHECK(predict(layout, AlgoId::kTwoLevelLeader, 8, AlgoId::kRecursiveDoubling) <
        predict(layout, AlgoId::kRing, 8));
  // Large: whole-buffer exchanges lose to the bandwidth-optimal ring.
  CHECK(predict(layout, AlgoId::kRing, 64 << 20) <
        predict(layout, AlgoId::kRecursiveDoubling, 64 << 20));
  // The same ring costs more when every hop crosses the network and shares a node's link.
  Layout interleaved = clusterLayout(4, 2, true, "1Gbit,100us");
  CHECK(predict(layout, AlgoId::kRing, 1 << 20) < predict(interleaved, AlgoId::kRing, 1 << 20));
}

TEST_CASE("choosePlan takes the cheapest candidate and the same one every time", "[tune]") {
  Layout layout = clusterLayout(4, 2, false, "1Gbit,100us");
  AlgoOverrides none;
  for (size_t bytes : {size_t{8}, size_t{564000}, size_t{64} << 20}) {
    CAPTURE(bytes);
    std::vector<Candidate> ranked = rankCandidates(CollType::kAllReduce, bytes, layout, 512 << 10);
    REQUIRE(ranked.size() == 8);
    Plan plan = choosePlan(allreduce(bytes), layout, none, 512 << 10);
    CHECK(plan.algo == ranked.front().algo);
    CHECK(plan.predictedMicros == Approx(ranked.front().micros));
    for (const Candidate& candidate : ranked) CHECK(candidate.micros >= ranked.front().micros);
  }
}

TEST_CASE("the double tree pays its dependent iterations among a few nodes", "[tune]") {
  // Among 3 leaders a one-chunk tree takes 2H + 1 iterations of several messages each, where
  // recursive doubling takes 3 exchanges: the tree must not look cheaper for small messages.
  Layout three = clusterLayout(3, 1, false, "10Gbit,25us");
  for (size_t bytes : {size_t{16}, size_t{1024}, size_t{16384}}) {
    CAPTURE(bytes);
    CHECK(predict(three, AlgoId::kRecursiveDoubling, bytes) < predict(three, AlgoId::kTree, bytes));
  }
  // More chunks, more iterations: the tree's time grows with the message's chunk count.
  CHECK(predict(three, AlgoId::kTree, 4 << 20) > 8 * predict(three, AlgoId::kTree, 16));
}

TEST_CASE("two_level_shm is a candidate only where node-mates share memory", "[tune]") {
  Layout layout = clusterLayout(4, 2, false, "10Gbit,25us");
  auto has = [](const std::vector<AlgoId>& algos, AlgoId algo) {
    return std::find(algos.begin(), algos.end(), algo) != algos.end();
  };
  CHECK(has(modelledAlgos(CollType::kAllReduce, layout.cost), AlgoId::kTwoLevelShm));
  Layout overNetwork = layout;
  overNetwork.cost = buildCostLayout(overNetwork.nodes, false);
  CHECK_FALSE(has(modelledAlgos(CollType::kAllReduce, overNetwork.cost), AlgoId::kTwoLevelShm));
  // One flag round per stage against the leader variant's log2 P binomial steps.
  Layout wide = clusterLayout(2, 8, false, "10Gbit,25us");
  CHECK(predict(wide, AlgoId::kTwoLevelShm, 1024, AlgoId::kRecursiveDoubling) <
        predict(wide, AlgoId::kTwoLevelLeader, 1024, AlgoId::kRecursiveDoubling));
}

TEST_CASE("per-node links: equal ones predict as the one network link", "[tune]") {
  for (bool interleave : {false, true}) {
    Layout layout = clusterLayout(3, 2, interleave, "10Gbit,25us");
    Layout perNode = layout;
    useNodeLinks(std::vector<LinkCost>(3, layout.params.net), &perNode.params);
    for (AlgoId algo : modelledAlgos(CollType::kAllReduce, layout.cost)) {
      for (size_t bytes : {size_t{64}, size_t{256} << 10, size_t{16} << 20}) {
        CAPTURE(interleave, algoName(algo), bytes);
        CHECK(predict(perNode, algo, bytes, AlgoId::kRecursiveDoubling) ==
              Approx(predict(layout, algo, bytes, AlgoId::kRecursiveDoubling)));
        CHECK(predict(perNode, algo, bytes, AlgoId::kRing) ==
              Approx(predict(layout, algo, bytes, AlgoId::kRing)));
      }
    }
  }
}

TEST_CASE("one slow node costs the steps that cross it, not every step", "[tune]") {
  // 3 nodes, node 0 at 100 Mbit/s and the others at 10 Gbit/s. Every ring step crosses node
  // 0's link; recursive doubling folds node 0 into node 1 (its link carries the message there
  // and back) and then exchanges between nodes 1 and 2 only.
  Layout uniform = clusterLayout(3, 1, false, "100Mbit,50us");
  Layout slowNode = clusterLayout(3, 1, false, "10Gbit,25us");
  LinkCost slow = uniform.params.net;
  useNodeLinks({slow, slowNode.params.net, slowNode.params.net}, &slowNode.params);
  CHECK(slowNode.params.net.betaMicrosPerByte == Approx(slow.betaMicrosPerByte));  // the worst
  const size_t bytes = 4 << 20;
  CHECK(predict(slowNode, AlgoId::kRing, bytes) == Approx(predict(uniform, AlgoId::kRing, bytes)));
  const double doubling = predict(slowNode, AlgoId::kRecursiveDoubling, bytes);
  CHECK(doubling < 0.75 * predict(uniform, AlgoId::kRecursiveDoubling, bytes));
  // What is left is the fold: the message over the slow link twice.
  CHECK(doubling > 2 * bytes * slow.betaMicrosPerByte);
  CHECK(doubling < 2.2 * bytes * slow.betaMicrosPerByte);
  // The slowest node's link decides where the tree's edges meet it.
  CHECK(predict(slowNode, AlgoId::kTree, bytes) >
        predict(clusterLayout(3, 1, false, "10Gbit,25us"), AlgoId::kTree, bytes) * 10);
}

TEST_CASE("the two-level leaders move their bytes at every rank's share of the cores", "[tune]") {
  // 8 ranks sharing 2 cores, as on emulated nodes: 4 ranks per core, the 4 leaders 2.
  Layout layout = clusterLayout(4, 2, false, "3.3GB/s,5.4us");
  REQUIRE(parseLink("12.9GB/s,4.1us", &layout.params.shm).isOk());
  layout.cost.ranksPerCore = 4;
  layout.cost.leadersPerCore = 2;
  const AlgoOverrides none;
  // Latency-bound: the leaders' steps at their own share, and the split's stages inside a node
  // a message per node-mate; one window stage fewer takes the replicated form.
  CHECK(choosePlan(allreduce(1024), layout, none, 512 << 10).algo == AlgoId::kTwoLevelReplicated);
  CHECK(predict(layout, AlgoId::kTwoLevelSplit, 2048, AlgoId::kRecursiveDoubling) >
        predict(layout, AlgoId::kTwoLevelShm, 2048, AlgoId::kRecursiveDoubling));
  // From 16 KiB the split's parts, streamed at once, beat the leaders' whole message.
  for (size_t bytes : {size_t{64} << 10, size_t{1} << 20}) {
    CAPTURE(bytes);
    CHECK(choosePlan(allreduce(bytes), layout, none, 512 << 10).algo == AlgoId::kTwoLevelSplit);
  }
}

TEST_CASE("the split's exchanges among nodes wait less than every rank's share of the cores",
          "[tune]") {
  // 3 nodes x 2 ranks on 2 cores, with links as calibrated there (a latency of tens of
  // microseconds): every rank's share is 3 ranks per core, the leaders' 1.5.
  Layout layout = clusterLayout(3, 2, false, "3.8GB/s,35us");
  REQUIRE(parseLink("6.7GB/s,24us", &layout.params.shm).isOk());
  layout.cost.ranksPerCore = 3;
  layout.cost.leadersPerCore = 1.5;
  const AlgoOverrides none;
  // At 64 KiB the split measured 0.69-0.70x two_level_shm's time there; priced at every
  // exchanging rank's share the model took two_level_shm.
  CHECK(choosePlan(allreduce(64 << 10), layout, none, 512 << 10).algo == AlgoId::kTwoLevelSplit);
  // Latency-bound, the split's stages inside the node still cost it more.
  CHECK(predict(layout, AlgoId::kTwoLevelSplit, 256, AlgoId::kRecursiveDoubling) >
        predict(layout, AlgoId::kTwoLevelShm, 256, AlgoId::kRecursiveDoubling));
}

TEST_CASE("the split's stages inside a node are messages where node-mates share no memory",
          "[tune]") {
  auto [windows, messages] = sharedAndNetworkNodes();
  // From the windows' threshold the split pays one latency per stage inside a node on windows,
  // and one per node-mate (3 here) in messages; below it, one per node-mate either way.
  const size_t large = size_t{64} << 10;
  CHECK(predict(messages, AlgoId::kTwoLevelSplit, large) -
            predict(windows, AlgoId::kTwoLevelSplit, large) ==
        Approx(2 * 2 * windows.params.net.alphaMicros));
  CHECK(predict(messages, AlgoId::kTwoLevelSplit, 1024) ==
        Approx(predict(windows, AlgoId::kTwoLevelSplit, 1024)));
}

TEST_CASE("the replicated all-reduce saves the broadcast back and pays the network per local rank",
          "[tune]") {
  auto [windows, messages] = sharedAndNetworkNodes();
  // Every rank a core of its own: the 4 groups' exchanges among nodes run at once.
  windows.cost.leadersPerCore = messages.cost.leadersPerCore = 0.25;
  const double alpha = windows.params.net.alphaMicros;
  // Latency-bound: the node's sum in one flag round and no broadcast back, against
  // two_level_shm's two window stages around the same stage among nodes.
  const size_t small = 1024;
  CHECK(predict(windows, AlgoId::kTwoLevelReplicated, small, AlgoId::kRecursiveDoubling) <
        predict(windows, AlgoId::kTwoLevelShm, small, AlgoId::kRecursiveDoubling) - alpha / 2);
  // Without windows the node's sum takes log2 4 = 2 message steps instead of one flag round
  // (and each rank reduces 2 inputs instead of 3).
  const double bytes = static_cast<double>(small);
  CHECK(predict(messages, AlgoId::kTwoLevelReplicated, small, AlgoId::kRecursiveDoubling) -
            predict(windows, AlgoId::kTwoLevelReplicated, small, AlgoId::kRecursiveDoubling) ==
        Approx(alpha + bytes * windows.params.net.betaMicrosPerByte -
               bytes * windows.params.gammaMicrosPerByte));
  // Bandwidth-bound: every local rank carries the whole buffer among nodes, where the split's
  // each carry a quarter.
  const size_t large = size_t{4} << 20;
  CHECK(predict(windows, AlgoId::kTwoLevelReplicated, large, AlgoId::kRabenseifner) >
        2 * predict(windows, AlgoId::kTwoLevelSplit, large, AlgoId::kRabenseifner));
}

TEST_CASE("on uneven nodes the ranks beyond the smallest node's count pay for the whole buffer",
          "[tune]") {
  // 3 + 2 + 1 ranks: one part for the split and one group for the replicated form.
  Layout uneven;
  uneven.nodes = topo::buildNodeLayout({10, 10, 10, 11, 11, 12});
  uneven.nranks = uneven.nodes.nranks();
  uneven.cost = buildCostLayout(uneven.nodes, true);
  REQUIRE(parseLink("2GB/s,8us", &uneven.params.net).isOk());
  REQUIRE(parseLink("5GB/s,5us", &uneven.params.shm).isOk());
  const double gamma = uneven.params.gammaMicrosPerByte;
  // The split's window stages: node 0's two ranks that own no part copy the whole buffer in
  // and out, one buffer each at once, not a part per node-mate. With one part its stage among
  // nodes is two_level_shm's, so the two differ only by who reduces what.
  const size_t large = size_t{256} << 10;
  const double bytes = static_cast<double>(large);
  CHECK(predict(uneven, AlgoId::kTwoLevelSplit, large) -
            predict(uneven, AlgoId::kTwoLevelShm, large) ==
        Approx(gamma * bytes * (1 - 1.0 / 3)));
  // The replicated form's one group sends the result to node 0's other two ranks in turn: two
  // messages where two_level_shm has its second window stage (one message's time).
  const size_t small = 1024;
  const double message = uneven.params.shm.time(static_cast<double>(small));
  CHECK(predict(uneven, AlgoId::kTwoLevelReplicated, small, AlgoId::kRecursiveDoubling) -
            predict(uneven, AlgoId::kTwoLevelShm, small, AlgoId::kRecursiveDoubling) ==
        Approx(message + gamma * static_cast<double>(small) * (2 - 1.0 / 3)));
}

TEST_CASE("the two-level broadcast and all-gather end on shared windows from 64 KiB", "[tune]") {
  auto [windows, messages] = sharedAndNetworkNodes();
  auto price = [](const Layout& layout, CollType coll, size_t bytes) {
    return predictMicros(layout.params, layout.cost, coll, AlgoId::kTwoLevelLeader,
                         AlgoId::kBinomial, bytes, 64 * 1024);
  };
  for (CollType coll : {CollType::kBroadcast, CollType::kAllGather}) {
    CAPTURE(collName(coll));
    // Below 64 KiB a tree inside each node either way; from it, one window round where a
    // chain takes a hop per node-mate and slice.
    CHECK(price(windows, coll, 16 << 10) == Approx(price(messages, coll, 16 << 10)));
    CHECK(price(windows, coll, 256 << 10) < price(messages, coll, 256 << 10));
  }
}

TEST_CASE("size-range rules override the model inside their ranges only", "[tune]") {
  Layout layout = clusterLayout(2, 2, false, "10Gbit,25us");
  AlgoOverrides rules;
  REQUIRE(
      parseAlgoOverrides("allreduce:0-16K=tree,allreduce:16K-1M=two_level_split", &rules).isOk());
  CHECK(choosePlan(allreduce(100), layout, rules, 4096).algo == AlgoId::kTree);
  CHECK(choosePlan(allreduce(16384), layout, rules, 4096).algo == AlgoId::kTwoLevelSplit);
  Plan beyond = choosePlan(allreduce(8 << 20), layout, rules, 4096);
  CHECK(beyond.predictedMicros > 0);  // chosen by the model
  AlgoOverrides bad;
  Status status = parseAlgoOverrides("allreduce:16K-8K=ring", &bad);
  CHECK(status.code() == weftInvalidArgument);
  CHECK_THAT(status.message(), Catch::Contains("16K-8K"));
  CHECK(parseAlgoOverrides("allreduce:lots-=ring", &bad).code() == weftInvalidArgument);
}

TEST_CASE("a forced two-level broadcast gets a broadcast algorithm among nodes", "[tune]") {
  Layout layout = clusterLayout(1, 2, false, "10Gbit,25us");
  AlgoOverrides forced;
  REQUIRE(parseAlgoOverrides("broadcast=two_level_leader", &forced).isOk());
  CollArgs args;
  args.coll = CollType::kBroadcast;
  args.type = weftFloat32;
  for (size_t count : {size_t{1}, size_t{1} << 20}) {
    args.count = count;
    Plan plan = choosePlan(args, layout, forced, 512 << 10);
    CHECK(plan.algo == AlgoId::kTwoLevelLeader);
    CHECK((plan.inner == AlgoId::kBinomial || plan.inner == AlgoId::kChain));
  }
}

TEST_CASE("Bruck's rounds and all-to-all count the transfers that leave each node", "[tune]") {
  CostLayout byNode = buildCostLayout(topo::describedNodeLayout(4, 2, false), true);
  CHECK(byNode.bruckCrossing == std::vector<int>{1, 2, 2});
  CHECK(byNode.alltoallCrossing == 2 * 6);
  CHECK(byNode.runsPerNode == 1);
  CostLayout interleaved = buildCostLayout(topo::describedNodeLayout(4, 2, true), true);
  CHECK(interleaved.bruckCrossing == std::vector<int>{2, 2, 0});
  CHECK(interleaved.runsPerNode == 2);  // node 0 holds ranks 0 and 4
  // Uneven nodes: the node with most ranks sends the most blocks off-node (3 x 3).
  CostLayout uneven = buildCostLayout(topo::buildNodeLayout({1, 1, 1, 2, 2, 3}), true);
  CHECK(uneven.alltoallPerNode == std::vector<int>{9, 8, 5});
}

TEST_CASE("reduce-scatter and all-to-all: log-step algorithms small, ring and pairwise large",
          "[tune]") {
  Layout layout = clusterLayout(4, 2, false, "10Gbit,25us");
  CollArgs args;
  args.type = weftFloat32;
  for (CollType coll : {CollType::kReduceScatter, CollType::kAlltoAll}) {
    CAPTURE(collName(coll));
    args.coll = coll;
    args.count = 4;  // 16 bytes per rank
    Plan small = choosePlan(args, layout, AlgoOverrides{}, 512 << 10);
    CHECK(small.algo ==
          (coll == CollType::kReduceScatter ? AlgoId::kRecursiveHalving : AlgoId::kBruck));
    CHECK(small.predictedMicros > 0);
    args.count = 1 << 20;  // 4 MiB per rank
    Plan large = choosePlan(args, layout, AlgoOverrides{}, 512 << 10);
    CHECK(large.algo == (coll == CollType::kReduceScatter ? AlgoId::kRing : AlgoId::kPairwise));
  }
}

TEST_CASE("the two-level all-gather is priced with its stage among nodes", "[tune]") {
  Layout layout = clusterLayout(4, 2, false, "10Gbit,25us");
  std::vector<Candidate> ranked = rankCandidates(CollType::kAllGather, 1 << 20, layout, 512 << 10);
  auto twoLevel = std::find_if(ranked.begin(), ranked.end(), [](const Candidate& candidate) {
    return candidate.algo == AlgoId::kTwoLevelLeader;
  });
  REQUIRE(twoLevel != ranked.end());
  CHECK(twoLevel->micros > 0);
}

TEST_CASE("broadcast schedules count each rank's messages on and off its node", "[tune]") {
  CostLayout byNode = buildCostLayout(topo::describedNodeLayout(4, 2, false), true);
  // Binomial from rank 0: 0->1, 0->2, 2->3, 0->4, 4->5, 4->6, 6->7; nodes {0,1} {2,3} ...
  CHECK(byNode.binomialMessages.crossing == std::vector<int>{2, 0, 1, 0, 2, 0, 1, 0});
  CHECK(byNode.binomialMessages.local == std::vector<int>{1, 1, 1, 1, 1, 1, 1, 1});
  CHECK(byNode.binomialMessages.crossingTotal == 3);
  CHECK(byNode.chainMessages.crossing == std::vector<int>{0, 1, 1, 1, 1, 1, 1, 0});
  CHECK(byNode.chainMessages.localTotal == 4);
  CostLayout interleaved = buildCostLayout(topo::describedNodeLayout(4, 2, true), true);
  CHECK(interleaved.chainMessages.crossingTotal == 7);
  // The two-level stages: a chain among the leaders 0-3, then 0->4, 1->5, ... inside nodes.
  CHECK(interleaved.leadersChainMessages.crossing == std::vector<int>{1, 2, 2, 1, 0, 0, 0, 0});
  CHECK(interleaved.nodeChainMessages.local == std::vector<int>{1, 1, 1, 1, 1, 1, 1, 1});
  CHECK(interleaved.nodeChainMessages.crossingTotal == 0);
  // Uneven nodes: ranks 0-2, 3-4, 5; the node stage's binomial tree inside the first node.
  CostLayout uneven = buildCostLayout(topo::buildNodeLayout({1, 1, 1, 2, 2, 3}), true);
  CHECK(uneven.nodeBinomialMessages.local == std::vector<int>{2, 1, 1, 1, 1, 0});
  CHECK(uneven.leadersBinomialMessages.crossing == std::vector<int>{2, 0, 0, 1, 0, 1});
}

TEST_CASE("a broadcast in a loop costs its busiest rank's messages", "[tune]") {
  // 8 ranks sharing 2 cores, as on emulated nodes.
  Layout layout = clusterLayout(4, 2, true, "1.6GB/s,5us");
  REQUIRE(parseLink("8GB/s,4us", &layout.params.shm).isOk());
  layout.cost.ranksPerCore = 4;
  layout.cost.leadersPerCore = 2;
  auto broadcast = [&](AlgoId algo, size_t bytes, AlgoId inner = AlgoId::kBinomial) {
    return predictMicros(layout.params, layout.cost, CollType::kBroadcast, algo, inner, bytes,
                         512 * 1024);
  };
  // 16 bytes: a rank of the chain handles two messages, whatever the chain's length; the
  // binomial root three, one of them to its node-mate 4.
  CHECK(broadcast(AlgoId::kChain, 16) == Approx(2 * 5.0).epsilon(0.01));
  CHECK(broadcast(AlgoId::kBinomial, 16) == Approx(2 * 5.0 + 4.0).epsilon(0.01));
  CollArgs args;
  args.coll = CollType::kBroadcast;
  args.type = weftUint8;
  args.count = 16;
  CHECK(choosePlan(args, layout, AlgoOverrides{}, 512 << 10).algo == AlgoId::kChain);
  // 16 MiB on shared cores: the chain carries the message 7 times over the network, the
  // two-level algorithm 3 times (and 4 times through shared memory).
  const double perCopy = (16 << 20) / 1.6e3;
  CHECK(broadcast(AlgoId::kChain, 16 << 20) == Approx(7 * perCopy / 2).epsilon(0.01));
  args.count = 16 << 20;
  Plan large = choosePlan(args, layout, AlgoOverrides{}, 512 << 10);
  CHECK(large.algo == AlgoId::kTwoLevelLeader);
  CHECK(large.predictedMicros < broadcast(AlgoId::kBinomial, 16 << 20));
}

TEST_CASE("reduce on several nodes: two-level from 1 MiB where ranks are not numbered by node",
          "[tune]") {
  CollArgs args;
  args.coll = CollType::kReduce;
  args.type = weftUint8;
  for (bool interleave : {false, true}) {
    CAPTURE(interleave);
    Layout layout = clusterLayout(4, 2, interleave, "10Gbit,25us");
    args.count = 16 << 10;
    CHECK(choosePlan(args, layout, AlgoOverrides{}, 512 << 10).algo == AlgoId::kBinomial);
    args.count = 256 << 10;
    CHECK(choosePlan(args, layout, AlgoOverrides{}, 512 << 10).algo == AlgoId::kChain);
    args.count = 1 << 20;
    Plan large = choosePlan(args, layout, AlgoOverrides{}, 512 << 10);
    CHECK(large.algo == (interleave ? AlgoId::kTwoLevelLeader : AlgoId::kChain));
    if (interleave) CHECK(large.inner == AlgoId::kChain);
  }
  // Forced without a stage among nodes, it takes the size rule's; named, it keeps that one.
  Layout layout = clusterLayout(2, 2, false, "10Gbit,25us");
  AlgoOverrides forced;
  REQUIRE(parseAlgoOverrides("reduce=two_level_leader", &forced).isOk());
  args.count = 16;
  CHECK(choosePlan(args, layout, forced, 512 << 10).inner == AlgoId::kBinomial);
  REQUIRE(parseAlgoOverrides("reduce=two_level_leader/chain", &forced).isOk());
  CHECK(choosePlan(args, layout, forced, 512 << 10).inner == AlgoId::kChain);
  CHECK(parseAlgoOverrides("reduce=two_level_leader/ring", &forced).code() == weftInvalidArgument);
}

}  // namespace weft::tune
