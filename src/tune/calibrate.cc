#include "tune/calibrate.h"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "base/env.h"
#include "base/log.h"

namespace weft::tune {
namespace {

// Calibration runs before any collective (whose sequence numbers start at 1), under tag base 0.
constexpr uint64_t kCalibrationTagBase = 0;
constexpr int kSmallRoundTrips = 40;
constexpr int kLargeRoundTrips = 6;
constexpr size_t kLargeBytes = 1 << 20;

struct Decision {
  int32_t measure = 0;
  int32_t padding = 0;  // the struct is sent whole: no uninitialized bytes
  double shmAlpha = 0, shmBeta = 0;
};

// Half the median round trip of `bytes` between this rank and `peer`, in microseconds (the
// side with `starts` sends first). The median, because on a busy machine a few round trips
// wait for a CPU and would dominate a mean.
Status halfRoundTrip(AlgoContext& ctx, int peer, bool starts, size_t bytes, int trips, char* buffer,
                     double* micros) {
  auto once = [&]() -> Status {
    if (starts) {
      WEFT_TRY(ctx.wait(ctx.send(peer, buffer, bytes)));
      return ctx.wait(ctx.recv(peer, buffer, bytes));
    }
    WEFT_TRY(ctx.wait(ctx.recv(peer, buffer, bytes)));
    return ctx.wait(ctx.send(peer, buffer, bytes));
  };
  WEFT_TRY(once());  // warm-up: connections, page faults
  std::vector<double> times;
  for (int i = 0; i < trips; ++i) {
    auto start = std::chrono::steady_clock::now();
    WEFT_TRY(once());
    times.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
            .count());
  }
  std::nth_element(times.begin(), times.begin() + trips / 2, times.end());
  *micros = times[trips / 2] / 2;
  return Status::ok();
}

// alpha from small messages, beta from the extra time of large ones.
Status measurePair(AlgoContext& ctx, int peer, bool starts, LinkCost* link) {
  std::vector<char> buffer(kLargeBytes);
  double small = 0, large = 0;
  WEFT_TRY(halfRoundTrip(ctx, peer, starts, 8, kSmallRoundTrips, buffer.data(), &small));
  WEFT_TRY(halfRoundTrip(ctx, peer, starts, kLargeBytes, kLargeRoundTrips, buffer.data(), &large));
  link->alphaMicros = small;
  link->betaMicrosPerByte = std::max(1e-7, (large - small) / kLargeBytes);
  return Status::ok();
}

// Up to this many nodes the pairs are timed one at a time; beyond, a pair's time per node would
// add up (about 50 ms each at 10 Gbit/s), so disjoint pairs run at once.
constexpr int kMostNodesOneAtATime = 8;

// The pairs of node leaders to time: one pair on 2 nodes, else each node with the next (a ring),
// so that every node is in two pairs. Each leader times its pairs in this order, so in ring
// order every pair waits for the one before it (one at a time); ordered as rounds of disjoint
// pairs ((0,1) (2,3) ..., then (1,2) (3,4) ..., then the wrap-around pair when the count is
// odd), each round's pairs run at once and the whole takes 2-3 pairs' time.
std::vector<std::pair<int, int>> nodePairs(int nodes) {
  std::vector<std::pair<int, int>> pairs;
  if (nodes == 2) pairs.emplace_back(0, 1);
  if (nodes <= 2) return pairs;
  if (nodes <= kMostNodesOneAtATime) {
    for (int node = 0; node < nodes; ++node) pairs.emplace_back(node, (node + 1) % nodes);
    return pairs;
  }
  for (int first : {0, 1}) {
    for (int node = first; node + 1 < nodes; node += 2) pairs.emplace_back(node, node + 1);
  }
  pairs.emplace_back(nodes - 1, 0);
  return pairs;
}

// Each node's own network link, from ping-pongs between node leaders (each pair's first leader
// hands its result to rank 0). On up to kMostNodesOneAtATime nodes no pair's numbers include
// another's traffic; beyond, pairs that share no node run at once, which a non-blocking switch
// carries without interference. Where the nodes hang off one switch, a pair is as slow as the
// slower of its two node links, so a node's link is its faster pair: with every node in two
// pairs, a slow node is told apart from a slow neighbour unless both its neighbours are slow.
Status measureNodeLinks(AlgoContext& ctx, const topo::NodeLayout& nodes, int rank,
                        std::vector<LinkCost>* links) {
  const auto pairs = nodePairs(nodes.nodes());
  std::vector<LinkCost> pairLinks(pairs.size());
  for (size_t i = 0; i < pairs.size(); ++i) {
    const int first = nodes.leaderOf(pairs[i].first), second = nodes.leaderOf(pairs[i].second);
    if (rank != first && rank != second) continue;
    WEFT_TRY(measurePair(ctx, rank == first ? second : first, rank == first, &pairLinks[i]));
    if (rank == first && first != 0 && second != 0)
      WEFT_TRY(ctx.wait(ctx.send(0, &pairLinks[i], sizeof(LinkCost))));
  }
  if (rank != 0) return Status::ok();
  for (size_t i = 0; i < pairs.size(); ++i) {
    const int first = nodes.leaderOf(pairs[i].first), second = nodes.leaderOf(pairs[i].second);
    if (first != 0 && second != 0)
      WEFT_TRY(ctx.wait(ctx.recv(first, &pairLinks[i], sizeof(LinkCost))));
  }
  const double probe = static_cast<double>(kLargeBytes);
  links->assign(nodes.nodes(), LinkCost{});
  std::vector<bool> seen(nodes.nodes(), false);
  for (size_t i = 0; i < pairs.size(); ++i) {
    for (int node : {pairs[i].first, pairs[i].second}) {
      if (!seen[node] || pairLinks[i].time(probe) < (*links)[node].time(probe))
        (*links)[node] = pairLinks[i];
      seen[node] = true;
    }
  }
  return Status::ok();
}

// The cache: "shm ALPHA BETA", then "node I ALPHA BETA" per node (microseconds, per byte).
bool readCache(const std::string& path, int nodes, Decision* decision,
               std::vector<LinkCost>* links) {
  FILE* file = std::fopen(path.c_str(), "r");
  if (file == nullptr) return false;
  bool valid = std::fscanf(file, "shm %lf %lf", &decision->shmAlpha, &decision->shmBeta) == 2 &&
               decision->shmBeta > 0;
  links->assign(nodes, LinkCost{});
  for (int node = 0; valid && node < nodes; ++node) {
    int index = -1;
    LinkCost& link = (*links)[node];
    valid = std::fscanf(file, " node %d %lf %lf", &index, &link.alphaMicros,
                        &link.betaMicrosPerByte) == 3 &&
            index == node && link.betaMicrosPerByte > 0;
  }
  std::fclose(file);
  return valid;
}

void writeCache(const std::string& path, const Decision& decision,
                const std::vector<LinkCost>& links) {
  std::string directory = path.substr(0, path.rfind('/'));
  mkdir(directory.substr(0, directory.rfind('/')).c_str(), 0700);
  mkdir(directory.c_str(), 0700);
  FILE* file = std::fopen(path.c_str(), "w");
  if (file == nullptr) {
    WEFT_WARN("tuner: cannot write the calibration cache %s", path.c_str());
    return;
  }
  std::fprintf(file, "shm %.9g %.9g\n", decision.shmAlpha, decision.shmBeta);
  for (size_t node = 0; node < links.size(); ++node) {
    std::fprintf(file, "node %zu %.9g %.9g\n", node, links[node].alphaMicros,
                 links[node].betaMicrosPerByte);
  }
  std::fclose(file);
}

void reportLinks(const CostParams& params, bool measured) {
  const char* source = measured ? "measured at init" : "from the calibration cache";
  if (params.nodeNet.size() <= 2) {
    WEFT_INFO("tuner: network %s, shared memory %s (%s)", describeLink(params.net).c_str(),
              describeLink(params.shm).c_str(), source);
    return;
  }
  const double probe = static_cast<double>(kLargeBytes);
  size_t slowest = 0, fastest = 0;
  for (size_t node = 0; node < params.nodeNet.size(); ++node) {
    if (params.nodeNet[node].time(probe) > params.nodeNet[slowest].time(probe)) slowest = node;
    if (params.nodeNet[node].time(probe) < params.nodeNet[fastest].time(probe)) fastest = node;
  }
  WEFT_INFO(
      "tuner: network per node, slowest node %zu: %s, fastest node %zu: %s; shared memory "
      "%s (%s)",
      slowest, describeLink(params.nodeNet[slowest]).c_str(), fastest,
      describeLink(params.nodeNet[fastest]).c_str(), describeLink(params.shm).c_str(), source);
}

}  // namespace

std::string calibrationCachePath(const std::string& cacheKey) {
  auto xdg = env::get("XDG_CACHE_HOME");
  auto home = env::get("HOME");
  std::string base = xdg ? *xdg : (home ? *home : std::string("/tmp")) + "/.cache";
  return base + "/weft/links-" + cacheKey + ".txt";
}

Status calibrateLinks(Fabric& fabric, OpResources& resources, const topo::NodeLayout& nodes,
                      const CalibrationSetup& setup, CostParams* params) {
  if (setup.nranks == 1) return Status::ok();
  resources.beginOp();
  resources.setTagBase(kCalibrationTagBase);
  fabric.setCurrentOp("tuner calibration", 0, "ping-pong");
  CollArgs none;
  Plan plan;
  AlgoContext ctx(fabric, resources, nodes, setup.rank, setup.nranks, none, plan);
  const int shmPeer = nodes.nodeRanks[0].size() > 1 ? nodes.nodeRanks[0][1] : -1;

  const int nodeCount = nodes.nodes();
  Decision decision;
  std::vector<LinkCost> links(nodeCount);
  if (setup.rank == 0) {
    const std::string path = calibrationCachePath(setup.cacheKey);
    decision.measure = setup.remeasure || !readCache(path, nodeCount, &decision, &links);
    for (int peer = 1; peer < setup.nranks; ++peer) ctx.send(peer, &decision, sizeof(decision));
    WEFT_TRY(ctx.waitAll());
  } else {
    WEFT_TRY(ctx.wait(ctx.recv(0, &decision, sizeof(decision))));
  }
  if (decision.measure) {
    LinkCost shm = params->shm;
    links.assign(nodeCount, params->net);
    WEFT_TRY(measureNodeLinks(ctx, nodes, setup.rank, &links));
    if (shmPeer >= 0 && (setup.rank == 0 || setup.rank == shmPeer)) {
      WEFT_TRY(measurePair(ctx, setup.rank == 0 ? shmPeer : 0, setup.rank == 0, &shm));
    }
    if (setup.rank == 0) {
      decision.shmAlpha = shm.alphaMicros;
      decision.shmBeta = shm.betaMicrosPerByte;
      if (nodeCount > 1 && shmPeer >= 0)
        writeCache(calibrationCachePath(setup.cacheKey), decision, links);
      for (int peer = 1; peer < setup.nranks; ++peer) ctx.send(peer, &decision, sizeof(decision));
    } else {
      WEFT_TRY(ctx.wait(ctx.recv(0, &decision, sizeof(decision))));
    }
  }
  // Every rank plans with rank 0's links.
  if (nodeCount > 1) {
    if (setup.rank == 0) {
      for (int peer = 1; peer < setup.nranks; ++peer)
        ctx.send(peer, links.data(), links.size() * sizeof(LinkCost));
    } else {
      WEFT_TRY(ctx.wait(ctx.recv(0, links.data(), links.size() * sizeof(LinkCost))));
    }
  }
  WEFT_TRY(ctx.waitAll());
  resources.beginOp();
  params->shm = {decision.shmAlpha, decision.shmBeta};
  if (nodeCount > 1) useNodeLinks(std::move(links), params);
  if (setup.rank == 0) reportLinks(*params, decision.measure != 0);
  return Status::ok();
}

}  // namespace weft::tune
