// WEFT_BIND: whether init binds this process to one CPU, round robin over the ranks of its
// machine (topo/cpu_binding.h says why). Launchers that bind (mpirun --bind-to, srun
// --cpu-bind) have done it before init; weftrun asks for it with WEFT_BIND=auto.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "bootstrap/peer_info.h"

namespace weft {

enum class BindMode {
  none,            // leave the process where the kernel puts it
  core,            // always bind
  oversubscribed,  // bind where the machine's ranks outnumber its CPUs
};

Status parseBindMode(const std::string& text, BindMode* out);

struct BindingChoice {
  int cpu = -1;        // -1: stay unbound
  std::string reason;  // why this CPU, or why none, for the INFO line
};

// The choice for the `index`-th of `ranksOnMachine` ranks of one machine (processes, not
// threads of one) given the CPUs it may use, spreading first (topo::bindingCandidates), and the
// machine's CPUs (all its ranks may use, whatever a launcher left each): `auto` compares the
// ranks with those, so that ranks a launcher gave CPUs of their own are left as they are.
BindingChoice chooseBinding(BindMode mode, int index, int ranksOnMachine, int machineCpus,
                            const std::vector<int>& candidates);

// Applies WEFT_BIND for `rank` of `peers` once per process: a later communicator (a split, a
// second job step) keeps the first one's CPU. Failing to bind is a warning, not an error.
void bindRank(BindMode mode, int rank, const std::vector<PeerInfo>& peers);

}  // namespace weft
