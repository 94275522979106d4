// WEFT_BIND's choice of CPU (core/rank_binding.h) and the CPUs it chooses from.
#include <catch2/catch.hpp>

#include <algorithm>

#include "core/rank_binding.h"
#include "topo/cpu_binding.h"
#include "topo/machine.h"

namespace weft {

TEST_CASE("WEFT_BIND's values", "[bind]") {
  BindMode mode = BindMode::none;
  CHECK(parseBindMode("core", &mode).isOk());
  CHECK(mode == BindMode::core);
  CHECK(parseBindMode("auto", &mode).isOk());
  CHECK(mode == BindMode::oversubscribed);
  CHECK(parseBindMode("none", &mode).isOk());
  CHECK(mode == BindMode::none);
  Status bad = parseBindMode("yes", &mode);
  CHECK_FALSE(bad.isOk());
  CHECK_THAT(bad.message(), Catch::Contains("WEFT_BIND") && Catch::Contains("'yes'"));
}

TEST_CASE("ranks are dealt to CPUs round robin", "[bind]") {
  std::vector<int> cpus{0, 2, 1, 3};  // one thread of each core first
  std::vector<int> chosen;
  for (int index = 0; index < 6; ++index) {
    chosen.push_back(chooseBinding(BindMode::core, index, 6, 4, cpus).cpu);
  }
  CHECK(chosen == std::vector<int>{0, 2, 1, 3, 0, 2});
}

TEST_CASE("auto binds only where the machine's ranks outnumber its CPUs", "[bind]") {
  std::vector<int> cpus{4, 5};
  CHECK(chooseBinding(BindMode::oversubscribed, 1, 2, 2, cpus).cpu == -1);
  CHECK_THAT(chooseBinding(BindMode::oversubscribed, 1, 2, 2, cpus).reason,
             Catch::Contains("2 ranks on this machine's 2 CPUs"));
  CHECK(chooseBinding(BindMode::oversubscribed, 1, 3, 2, cpus).cpu == 5);
  CHECK(chooseBinding(BindMode::oversubscribed, 2, 3, 2, cpus).cpu == 4);
  CHECK(chooseBinding(BindMode::core, 1, 2, 2, cpus).cpu == 5);
  // 8 ranks of a 16-CPU machine that a launcher gave 2 CPUs each: theirs to keep.
  CHECK(chooseBinding(BindMode::oversubscribed, 3, 8, 16, cpus).cpu == -1);
}

TEST_CASE("a process a launcher bound to one CPU stays there", "[bind]") {
  BindingChoice choice = chooseBinding(BindMode::core, 3, 8, 2, {6});
  CHECK(choice.cpu == -1);
  CHECK_THAT(choice.reason, Catch::Contains("already bound to CPU 6"));
  CHECK(chooseBinding(BindMode::none, 0, 8, 2, {0, 1}).cpu == -1);
  CHECK(chooseBinding(BindMode::core, 0, 8, 2, {}).cpu == -1);
}

TEST_CASE("binding candidates keep the core order within the allowed CPUs", "[bind]") {
  CHECK(topo::bindingCandidates({0, 2, 1, 3}, {1, 2, 3}) == std::vector<int>{2, 1, 3});
  // A core order that shares nothing with the mask (another machine's numbers): the mask.
  CHECK(topo::bindingCandidates({8, 9}, {0, 1}) == std::vector<int>{0, 1});
  CHECK(topo::bindingCandidates({}, {0, 1}) == std::vector<int>{0, 1});
}

TEST_CASE("this machine's CPUs by core are the CPUs this process may use", "[bind][topo]") {
  topo::MachineInfo info;
  REQUIRE(topo::describeMachine("", &info).isOk());
  std::vector<int> byCore = info.cpusByCore;
  std::sort(byCore.begin(), byCore.end());
  std::vector<int> allowed = topo::allowedCpus();
  // hwloc's allowed set can be wider than the affinity mask (a cgroup's, not a taskset's).
  CHECK(std::includes(byCore.begin(), byCore.end(), allowed.begin(), allowed.end()));
  CHECK(static_cast<int>(info.cpusByCore.size()) == info.hardwareThreads);
  CHECK_FALSE(allowed.empty());
}

#ifdef WEFT_HAVE_HWLOC
TEST_CASE("threads are dealt one per core before a second of any", "[bind][topo]") {
  // Synthetic machines number their threads core by core: core 0 has 0 and 1, core 1 2 and 3.
  topo::MachineInfo info;
  REQUIRE(topo::describeMachine("pack:1 core:2 pu:2", &info).isOk());
  CHECK(info.cpusByCore == std::vector<int>{0, 2, 1, 3});
  REQUIRE(topo::describeMachine("pack:2 core:2 pu:2", &info).isOk());
  CHECK(info.cpusByCore == std::vector<int>{0, 2, 4, 6, 1, 3, 5, 7});
  REQUIRE(topo::describeMachine("pack:1 core:3 pu:1", &info).isOk());
  CHECK(info.cpusByCore == std::vector<int>{0, 1, 2});
}
#endif

}  // namespace weft
