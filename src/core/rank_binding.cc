#include "core/rank_binding.h"

#include <atomic>
#include <map>
#include <utility>

#include "base/log.h"
#include "topo/cpu_binding.h"
#include "topo/machine.h"

namespace weft {

Status parseBindMode(const std::string& text, BindMode* out) {
  if (text == "none") {
    *out = BindMode::none;
  } else if (text == "core") {
    *out = BindMode::core;
  } else if (text == "auto") {
    *out = BindMode::oversubscribed;
  } else {
    return invalidArgument("WEFT_BIND must be none, core or auto, got '" + text + "'");
  }
  return Status::ok();
}

BindingChoice chooseBinding(BindMode mode, int index, int ranksOnMachine, int machineCpus,
                            const std::vector<int>& candidates) {
  BindingChoice choice;
  auto cpus = static_cast<int>(candidates.size());
  if (mode == BindMode::none) {
    choice.reason = "WEFT_BIND=none";
  } else if (cpus == 0) {
    choice.reason = "the CPUs this process may use are unknown";
  } else if (cpus == 1) {
    choice.reason = "already bound to CPU " + std::to_string(candidates[0]);
  } else if (mode == BindMode::oversubscribed && ranksOnMachine <= machineCpus) {
    choice.reason = std::to_string(ranksOnMachine) + " ranks on this machine's " +
                    std::to_string(machineCpus) +
                    " CPUs (WEFT_BIND=auto binds only where they outnumber them)";
  } else {
    choice.cpu = candidates[index % cpus];
    choice.reason = "rank " + std::to_string(index + 1) + " of " + std::to_string(ranksOnMachine) +
                    " on this machine, round robin over " + std::to_string(cpus) + " CPUs";
  }
  return choice;
}

void bindRank(BindMode mode, int rank, const std::vector<PeerInfo>& peers) {
  if (mode == BindMode::none) return;
  static std::atomic<bool> decided{false};
  if (decided.exchange(true)) return;
  const PeerInfo& self = peers[rank];
  // Ranks are dealt node by node, then by rank: on a machine that is one node that is rank
  // order, and where one machine holds several nodes (emulated clusters) each node's ranks
  // alternate over the CPUs whatever the numbering.
  std::map<uint64_t, int> nodeOrder;  // host identity -> its lowest rank
  for (const PeerInfo& peer : peers) nodeOrder.try_emplace(peer.hostId, peer.rank);
  auto dealtBefore = [&](const PeerInfo& a, const PeerInfo& b) {
    return std::make_pair(nodeOrder[a.hostId], a.rank) <
           std::make_pair(nodeOrder[b.hostId], b.rank);
  };
  int index = 0;
  int ranksOnMachine = 0;
  for (const PeerInfo& peer : peers) {
    if (peer.machineId != self.machineId) continue;
    if (peer.pid == self.pid && peer.rank != rank) {
      // Binding the process would put every rank it runs on one CPU.
      WEFT_INFO("rank %d: not binding: other ranks are threads of this process", rank);
      return;
    }
    index += dealtBefore(peer, self);
    ++ranksOnMachine;
  }
  std::vector<int> candidates =
      topo::bindingCandidates(topo::thisMachine().cpusByCore, topo::allowedCpus());
  BindingChoice choice =
      chooseBinding(mode, index, ranksOnMachine, topo::thisMachine().hardwareThreads, candidates);
  if (choice.cpu < 0) {
    WEFT_INFO("rank %d: not binding: %s", rank, choice.reason.c_str());
    return;
  }
  Status status = topo::bindProcessToCpu(choice.cpu);
  if (!status.isOk()) {
    WEFT_WARN("rank %d: binding to CPU %d failed: %s", rank, choice.cpu, status.message().c_str());
    return;
  }
  WEFT_INFO("rank %d bound to CPU %d (%s)", rank, choice.cpu, choice.reason.c_str());
}

}  // namespace weft
