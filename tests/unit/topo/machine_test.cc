// The machine description: this machine, synthetic machines and XML exports through hwloc.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <string>

#include "topo/machine.h"

#ifdef WEFT_HAVE_HWLOC
#include <hwloc.h>
#endif

namespace weft::topo {

TEST_CASE("this machine has cores", "[topo]") {
  MachineInfo info;
  REQUIRE(describeMachine("", &info).isOk());
  CHECK(info.cores >= 1);
  CHECK(info.hardwareThreads >= info.cores);
  CHECK(info.numaDomains >= 1);
  CHECK_THAT(info.summary(), Catch::Contains("core"));
}

#ifdef WEFT_HAVE_HWLOC
TEST_CASE("a synthetic two-socket machine", "[topo]") {
  MachineInfo info;
  REQUIRE(describeMachine("pack:2 numa:2 core:4 pu:2", &info).isOk());
  CHECK(info.packages == 2);
  CHECK(info.numaDomains == 4);
  CHECK(info.cores == 16);
  CHECK(info.hardwareThreads == 32);
  CHECK_THAT(info.summary(),
             Catch::StartsWith("16 cores (32 threads), 2 packages, 4 NUMA domains"));
}

TEST_CASE("a machine read from an hwloc XML export", "[topo]") {
  hwloc_topology_t topology;
  REQUIRE(hwloc_topology_init(&topology) == 0);
  REQUIRE(hwloc_topology_set_synthetic(topology, "pack:1 numa:3 core:2 pu:1") == 0);
  REQUIRE(hwloc_topology_load(topology) == 0);
  std::string path = "/tmp/weft_machine_test_" + std::to_string(getpid()) + ".xml";
  REQUIRE(hwloc_topology_export_xml(topology, path.c_str(), 0) == 0);
  hwloc_topology_destroy(topology);
  MachineInfo info;
  Status status = describeMachine(path, &info);
  unlink(path.c_str());
  REQUIRE(status.isOk());
  CHECK(info.numaDomains == 3);
  CHECK(info.cores == 6);
  CHECK_THAT(info.source, Catch::Contains("XML"));
}

TEST_CASE("a description hwloc cannot read is an error naming WEFT_TOPO", "[topo]") {
  MachineInfo info;
  Status status = describeMachine("pack:two", &info);
  CHECK(status.code() == weftInvalidArgument);
  CHECK_THAT(status.message(), Catch::Contains("WEFT_TOPO"));
  CHECK(describeMachine("/nonexistent/machine.xml", &info).code() == weftInvalidArgument);
}
#endif

}  // namespace weft::topo
