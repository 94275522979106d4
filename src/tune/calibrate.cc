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
  int32_t valid = 0;
  double netAlpha = 0, netBeta = 0, shmAlpha = 0, shmBeta = 0;
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

bool readCache(const std::string& path, Decision* decision) {
  FILE* file = std::fopen(path.c_str(), "r");
  if (file == nullptr) return false;
  int read = std::fscanf(file, "net %lf %lf shm %lf %lf", &decision->netAlpha, &decision->netBeta,
                         &decision->shmAlpha, &decision->shmBeta);
  std::fclose(file);
  return read == 4 && decision->netBeta > 0 && decision->shmBeta > 0;
}

void writeCache(const std::string& path, const Decision& decision) {
  std::string directory = path.substr(0, path.rfind('/'));
  mkdir(directory.substr(0, directory.rfind('/')).c_str(), 0700);
  mkdir(directory.c_str(), 0700);
  FILE* file = std::fopen(path.c_str(), "w");
  if (file == nullptr) {
    WEFT_WARN("tuner: cannot write the calibration cache %s", path.c_str());
    return;
  }
  std::fprintf(file, "net %.9g %.9g shm %.9g %.9g\n", decision.netAlpha, decision.netBeta,
               decision.shmAlpha, decision.shmBeta);
  std::fclose(file);
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
  const int netPeer = nodes.nodes() > 1 ? nodes.leaderOf(1) : -1;
  const int shmPeer = nodes.nodeRanks[0].size() > 1 ? nodes.nodeRanks[0][1] : -1;

  Decision decision;
  if (setup.rank == 0) {
    const std::string path = calibrationCachePath(setup.cacheKey);
    decision.measure = setup.remeasure || !readCache(path, &decision);
    for (int peer = 1; peer < setup.nranks; ++peer) ctx.send(peer, &decision, sizeof(decision));
    WEFT_TRY(ctx.waitAll());
  } else {
    WEFT_TRY(ctx.wait(ctx.recv(0, &decision, sizeof(decision))));
  }
  if (decision.measure) {
    LinkCost net = params->net, shm = params->shm;
    if (netPeer >= 0 && (setup.rank == 0 || setup.rank == netPeer)) {
      WEFT_TRY(measurePair(ctx, setup.rank == 0 ? netPeer : 0, setup.rank == 0, &net));
    }
    if (shmPeer >= 0 && (setup.rank == 0 || setup.rank == shmPeer)) {
      WEFT_TRY(measurePair(ctx, setup.rank == 0 ? shmPeer : 0, setup.rank == 0, &shm));
    }
    if (setup.rank == 0) {
      decision.netAlpha = net.alphaMicros;
      decision.netBeta = net.betaMicrosPerByte;
      decision.shmAlpha = shm.alphaMicros;
      decision.shmBeta = shm.betaMicrosPerByte;
      if (netPeer >= 0 && shmPeer >= 0) writeCache(calibrationCachePath(setup.cacheKey), decision);
      for (int peer = 1; peer < setup.nranks; ++peer) ctx.send(peer, &decision, sizeof(decision));
    } else {
      WEFT_TRY(ctx.wait(ctx.recv(0, &decision, sizeof(decision))));
    }
  }
  WEFT_TRY(ctx.waitAll());
  resources.beginOp();
  params->net = {decision.netAlpha, decision.netBeta};
  params->shm = {decision.shmAlpha, decision.shmBeta};
  if (setup.rank == 0) {
    WEFT_INFO("tuner: network %s, shared memory %s (%s)", describeLink(params->net).c_str(),
              describeLink(params->shm).c_str(),
              decision.measure ? "measured at init" : "from the calibration cache");
  }
  return Status::ok();
}

}  // namespace weft::tune
