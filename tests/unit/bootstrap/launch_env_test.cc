#include "bootstrap/launch_env.h"
#include "bootstrap/pmix_client.h"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

using weft::Status;
using weft::bootstrap::LaunchInfo;
using weft::bootstrap::readLaunchEnvironment;

namespace {

// Every variable readLaunchEnvironment may look at, so each case starts from a clean slate even
// when the tests themselves run under a launcher.
const char* const kLaunchVariables[] = {"WEFT_RANK",
                                        "WEFT_NRANKS",
                                        "WEFT_LOCAL_RANK",
                                        "WEFT_LOCAL_NRANKS",
                                        "WEFT_ROOT_ADDR",
                                        "WEFT_SECRET",
                                        "RANK",
                                        "WORLD_SIZE",
                                        "LOCAL_RANK",
                                        "LOCAL_WORLD_SIZE",
                                        "MASTER_ADDR",
                                        "MASTER_PORT",
                                        "OMPI_COMM_WORLD_RANK",
                                        "OMPI_COMM_WORLD_SIZE",
                                        "OMPI_COMM_WORLD_LOCAL_RANK",
                                        "OMPI_COMM_WORLD_LOCAL_SIZE",
                                        "OMPI_MCA_ess_base_jobid",
                                        "SLURM_PROCID",
                                        "SLURM_NTASKS",
                                        "SLURM_LOCALID",
                                        "SLURM_TASKS_PER_NODE",
                                        "SLURM_JOB_ID",
                                        "SLURM_STEP_ID",
                                        "SLURM_STEPID",
                                        "SLURM_STEP_NODELIST",
                                        "SLURM_NODELIST",
                                        "SLURM_JOB_NODELIST",
                                        "SLURM_NODEID",
                                        "SLURM_STEP_TASKS_PER_NODE",
                                        "SLURM_DISTRIBUTION",
                                        "MV2_COMM_WORLD_RANK",
                                        "MV2_COMM_WORLD_SIZE",
                                        "MV2_COMM_WORLD_LOCAL_RANK",
                                        "MV2_COMM_WORLD_LOCAL_SIZE",
                                        "PMI_RANK",
                                        "PMI_SIZE",
                                        "MPI_LOCALRANKID",
                                        "MPI_LOCALNRANKS",
                                        "PMIX_RANK",
                                        "PMIX_NAMESPACE",
                                        "WEFT_PMIX_LIB"};

class LaunchEnv {
 public:
  explicit LaunchEnv(std::initializer_list<std::pair<const char*, const char*>> vars) {
    for (const char* name : kLaunchVariables) {
      const char* old = std::getenv(name);
      saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
      unsetenv(name);
    }
    for (const auto& [name, value] : vars) setenv(name, value, 1);
  }
  ~LaunchEnv() {
    for (const auto& [name, value] : saved_) {
      if (value) {
        setenv(name.c_str(), value->c_str(), 1);
      } else {
        unsetenv(name.c_str());
      }
    }
  }

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

LaunchInfo readOk() {
  LaunchInfo info;
  Status status = readLaunchEnvironment(&info);
  INFO(status.message());
  REQUIRE(status.isOk());
  return info;
}

// The error must be weftInvalidArgument and mention every fragment.
void expectError(std::initializer_list<const char*> fragments) {
  LaunchInfo info;
  Status status = readLaunchEnvironment(&info);
  INFO(status.message());
  CHECK(status.code() == weftInvalidArgument);
  for (const char* fragment : fragments) {
    CHECK(status.message().find(fragment) != std::string::npos);
  }
}

}  // namespace

TEST_CASE("weftrun environment", "[bootstrap][launch]") {
  SECTION("complete") {
    LaunchEnv env({{"WEFT_RANK", "1"},
                   {"WEFT_NRANKS", "4"},
                   {"WEFT_ROOT_ADDR", "127.0.0.1:5000"},
                   {"WEFT_LOCAL_RANK", "1"},
                   {"WEFT_LOCAL_NRANKS", "2"}});
    LaunchInfo info = readOk();
    CHECK(info.launcher == "weftrun");
    CHECK(info.rank == 1);
    CHECK(info.nranks == 4);
    CHECK(info.localRank == 1);
    CHECK(info.localNranks == 2);
    CHECK(info.root.toString() == "127.0.0.1:5000");
    CHECK_FALSE(info.secretFromEnv);
  }
  SECTION("local values are optional") {
    LaunchEnv env({{"WEFT_RANK", "0"}, {"WEFT_NRANKS", "1"}, {"WEFT_ROOT_ADDR", "[::1]:6000"}});
    LaunchInfo info = readOk();
    CHECK(info.localRank == -1);
    CHECK(info.localNranks == 0);
    CHECK(info.root.toString() == "[::1]:6000");
  }
  SECTION("WEFT_SECRET") {
    LaunchEnv env({{"WEFT_RANK", "0"},
                   {"WEFT_NRANKS", "2"},
                   {"WEFT_ROOT_ADDR", "127.0.0.1:5000"},
                   {"WEFT_SECRET", "correct horse"}});
    LaunchInfo info = readOk();
    CHECK(info.secretFromEnv);
    CHECK(info.secret == weft::net::secretFromPassphrase("correct horse"));
  }
  SECTION("missing root") {
    LaunchEnv env({{"WEFT_RANK", "0"}, {"WEFT_NRANKS", "2"}});
    expectError({"WEFT_ROOT_ADDR"});
  }
  SECTION("missing size") {
    LaunchEnv env({{"WEFT_RANK", "0"}, {"WEFT_ROOT_ADDR", "127.0.0.1:5000"}});
    expectError({"WEFT_NRANKS", "not set"});
  }
  SECTION("malformed rank") {
    LaunchEnv env(
        {{"WEFT_RANK", "1x"}, {"WEFT_NRANKS", "2"}, {"WEFT_ROOT_ADDR", "127.0.0.1:5000"}});
    expectError({"WEFT_RANK='1x'"});
  }
  SECTION("rank out of range") {
    LaunchEnv env({{"WEFT_RANK", "2"}, {"WEFT_NRANKS", "2"}, {"WEFT_ROOT_ADDR", "127.0.0.1:5000"}});
    expectError({"WEFT_RANK='2'", "WEFT_NRANKS=2"});
  }
  SECTION("negative rank") {
    LaunchEnv env(
        {{"WEFT_RANK", "-1"}, {"WEFT_NRANKS", "2"}, {"WEFT_ROOT_ADDR", "127.0.0.1:5000"}});
    expectError({"WEFT_RANK='-1'"});
  }
  SECTION("zero ranks") {
    LaunchEnv env({{"WEFT_RANK", "0"}, {"WEFT_NRANKS", "0"}, {"WEFT_ROOT_ADDR", "127.0.0.1:5000"}});
    expectError({"WEFT_NRANKS='0'"});
  }
  SECTION("huge number") {
    LaunchEnv env({{"WEFT_RANK", "0"},
                   {"WEFT_NRANKS", "99999999999999999999"},
                   {"WEFT_ROOT_ADDR", "127.0.0.1:5000"}});
    expectError({"WEFT_NRANKS='99999999999999999999'"});
  }
  SECTION("local rank out of range") {
    LaunchEnv env({{"WEFT_RANK", "0"},
                   {"WEFT_NRANKS", "4"},
                   {"WEFT_LOCAL_RANK", "2"},
                   {"WEFT_LOCAL_NRANKS", "2"},
                   {"WEFT_ROOT_ADDR", "127.0.0.1:5000"}});
    expectError({"WEFT_LOCAL_RANK='2'"});
  }
  SECTION("local size larger than the job") {
    LaunchEnv env({{"WEFT_RANK", "0"},
                   {"WEFT_NRANKS", "2"},
                   {"WEFT_LOCAL_NRANKS", "3"},
                   {"WEFT_ROOT_ADDR", "127.0.0.1:5000"}});
    expectError({"WEFT_LOCAL_NRANKS='3'"});
  }
  SECTION("bad root") {
    LaunchEnv env({{"WEFT_RANK", "0"}, {"WEFT_NRANKS", "2"}, {"WEFT_ROOT_ADDR", "127.0.0.1"}});
    expectError({"WEFT_ROOT_ADDR='127.0.0.1'"});
  }
  SECTION("weftrun wins over torchrun") {
    LaunchEnv env({{"WEFT_RANK", "1"},
                   {"WEFT_NRANKS", "2"},
                   {"WEFT_ROOT_ADDR", "127.0.0.1:5000"},
                   {"RANK", "0"},
                   {"WORLD_SIZE", "8"}});
    CHECK(readOk().launcher == "weftrun");
  }
}

TEST_CASE("torchrun environment", "[bootstrap][launch]") {
  SECTION("root is MASTER_ADDR:MASTER_PORT+1") {
    LaunchEnv env({{"RANK", "3"},
                   {"WORLD_SIZE", "4"},
                   {"LOCAL_RANK", "1"},
                   {"LOCAL_WORLD_SIZE", "2"},
                   {"MASTER_ADDR", "127.0.0.1"},
                   {"MASTER_PORT", "29500"}});
    LaunchInfo info = readOk();
    CHECK(info.launcher == "torchrun");
    CHECK(info.rank == 3);
    CHECK(info.nranks == 4);
    CHECK(info.localRank == 1);
    CHECK(info.localNranks == 2);
    CHECK(info.root.toString() == "127.0.0.1:29501");
  }
  SECTION("IPv6 and host names") {
    LaunchEnv env(
        {{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"MASTER_ADDR", "::1"}, {"MASTER_PORT", "80"}});
    CHECK(readOk().root.toString() == "[::1]:81");
    setenv("MASTER_ADDR", "localhost", 1);
    LaunchInfo info = readOk();
    CHECK(info.root.isLoopback());
    CHECK(info.root.port() == 81);
  }
  SECTION("WEFT_ROOT_ADDR overrides MASTER_ADDR") {
    LaunchEnv env({{"RANK", "0"},
                   {"WORLD_SIZE", "2"},
                   {"MASTER_ADDR", "10.9.9.9"},
                   {"MASTER_PORT", "29500"},
                   {"WEFT_ROOT_ADDR", "127.0.0.1:7777"}});
    CHECK(readOk().root.toString() == "127.0.0.1:7777");
  }
  SECTION("missing MASTER_ADDR") {
    LaunchEnv env({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "29500"}});
    expectError({"MASTER_ADDR", "WEFT_ROOT_ADDR"});
  }
  SECTION("malformed MASTER_PORT") {
    LaunchEnv env({{"RANK", "0"},
                   {"WORLD_SIZE", "2"},
                   {"MASTER_ADDR", "127.0.0.1"},
                   {"MASTER_PORT", "http"}});
    expectError({"MASTER_PORT='http'"});
  }
  SECTION("MASTER_PORT at the top of the range") {
    LaunchEnv env({{"RANK", "0"},
                   {"WORLD_SIZE", "2"},
                   {"MASTER_ADDR", "127.0.0.1"},
                   {"MASTER_PORT", "65535"}});
    expectError({"MASTER_PORT='65535'"});
  }
  SECTION("missing WORLD_SIZE") {
    LaunchEnv env({{"RANK", "0"}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "29500"}});
    expectError({"WORLD_SIZE"});
  }
  SECTION("the derived secret depends on the root") {
    LaunchEnv env({{"RANK", "0"},
                   {"WORLD_SIZE", "2"},
                   {"MASTER_ADDR", "127.0.0.1"},
                   {"MASTER_PORT", "29500"}});
    LaunchInfo a = readOk();
    LaunchInfo b = readOk();
    CHECK(a.secret == b.secret);
    setenv("MASTER_PORT", "29600", 1);
    CHECK(readOk().secret != a.secret);
  }
}

TEST_CASE("Open MPI environment", "[bootstrap][launch]") {
  SECTION("single host derives a loopback root from the job id") {
    LaunchEnv env({{"OMPI_COMM_WORLD_RANK", "2"},
                   {"OMPI_COMM_WORLD_SIZE", "4"},
                   {"OMPI_COMM_WORLD_LOCAL_RANK", "2"},
                   {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"},
                   {"OMPI_MCA_ess_base_jobid", "3735879681"}});
    LaunchInfo info = readOk();
    CHECK(info.launcher == "openmpi");
    CHECK(info.rank == 2);
    CHECK(info.localNranks == 4);
    CHECK(info.root.toString().rfind("127.0.0.1:", 0) == 0);
    CHECK(info.root.port() >= 20000);
    CHECK(info.root.port() < 60000);
    CHECK(readOk().root == info.root);  // every rank derives the same
    setenv("OMPI_MCA_ess_base_jobid", "3735879682", 1);
    LaunchInfo other = readOk();
    CHECK(other.secret != info.secret);
  }
  SECTION("several hosts need WEFT_ROOT_ADDR") {
    LaunchEnv env({{"OMPI_COMM_WORLD_RANK", "0"},
                   {"OMPI_COMM_WORLD_SIZE", "4"},
                   {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                   {"OMPI_MCA_ess_base_jobid", "1"}});
    expectError({"WEFT_ROOT_ADDR"});
    setenv("WEFT_ROOT_ADDR", "127.0.0.1:4000", 1);
    CHECK(readOk().root.toString() == "127.0.0.1:4000");
  }
  SECTION("unknown local size needs WEFT_ROOT_ADDR") {
    LaunchEnv env({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "1"}});
    expectError({"WEFT_ROOT_ADDR"});
  }
  SECTION("single host without a job id") {
    LaunchEnv env({{"OMPI_COMM_WORLD_RANK", "0"},
                   {"OMPI_COMM_WORLD_SIZE", "2"},
                   {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}});
    expectError({"OMPI_MCA_ess_base_jobid"});
  }
  SECTION("malformed size") {
    LaunchEnv env({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "four"}});
    expectError({"OMPI_COMM_WORLD_SIZE='four'"});
  }
}

TEST_CASE("Slurm environment", "[bootstrap][launch]") {
  SECTION("single node") {
    LaunchEnv env({{"SLURM_PROCID", "1"},
                   {"SLURM_NTASKS", "4"},
                   {"SLURM_LOCALID", "1"},
                   {"SLURM_TASKS_PER_NODE", "4"},
                   {"SLURM_JOB_ID", "77"},
                   {"SLURM_STEP_ID", "0"}});
    LaunchInfo info = readOk();
    CHECK(info.launcher == "slurm");
    CHECK(info.rank == 1);
    CHECK(info.localRank == 1);
    CHECK(info.localNranks == 4);
    CHECK(info.root.isLoopback());
    uint16_t port = info.root.port();
    setenv("SLURM_STEP_ID", "1", 1);
    CHECK(readOk().secret != info.secret);
    CHECK(port >= 20000);
  }
  SECTION("N(xM) on one node") {
    LaunchEnv env({{"SLURM_PROCID", "0"},
                   {"SLURM_NTASKS", "2"},
                   {"SLURM_TASKS_PER_NODE", "2(x1)"},
                   {"SLURM_JOB_ID", "5"},
                   {"SLURM_STEP_ID", "0"}});
    CHECK(readOk().localNranks == 2);
  }
  SECTION("several nodes need WEFT_ROOT_ADDR") {
    LaunchEnv env({{"SLURM_PROCID", "0"},
                   {"SLURM_NTASKS", "4"},
                   {"SLURM_TASKS_PER_NODE", "2(x2)"},
                   {"SLURM_JOB_ID", "5"},
                   {"SLURM_STEPID", "0"}});
    expectError({"WEFT_ROOT_ADDR"});
    setenv("WEFT_ROOT_ADDR", "127.0.0.1:4000", 1);
    LaunchInfo info = readOk();
    CHECK(info.localNranks == 2);
    CHECK(info.root.port() == 4000);
  }
  SECTION("uneven nodes leave the local size unknown") {
    LaunchEnv env({{"SLURM_PROCID", "0"},
                   {"SLURM_NTASKS", "7"},
                   {"SLURM_TASKS_PER_NODE", "2(x3),1"},
                   {"SLURM_STEP_ID", "3"},
                   {"WEFT_ROOT_ADDR", "127.0.0.1:4000"}});
    CHECK(readOk().localNranks == 0);
  }
  SECTION("uneven nodes: SLURM_NODEID picks this node's count") {
    LaunchEnv env({{"SLURM_PROCID", "6"},
                   {"SLURM_NTASKS", "7"},
                   {"SLURM_TASKS_PER_NODE", "2(x3),1"},
                   {"SLURM_NODEID", "3"},
                   {"SLURM_STEP_ID", "0"},
                   {"WEFT_ROOT_ADDR", "127.0.0.1:4000"}});
    CHECK(readOk().localNranks == 1);
    setenv("SLURM_NODEID", "0", 1);
    setenv("SLURM_PROCID", "1", 1);
    CHECK(readOk().localNranks == 2);
    setenv("SLURM_NODEID", "4", 1);  // outside the list: unknown
    CHECK(readOk().localNranks == 0);
  }
  SECTION("the step's counts win over the allocation's") {
    LaunchEnv env({{"SLURM_PROCID", "0"},
                   {"SLURM_NTASKS", "3"},
                   {"SLURM_TASKS_PER_NODE", "4(x2)"},
                   {"SLURM_STEP_TASKS_PER_NODE", "3"},
                   {"SLURM_JOB_ID", "5"},
                   {"SLURM_STEP_ID", "1"}});
    LaunchInfo info = readOk();
    CHECK(info.localNranks == 3);
    CHECK(info.root.isLoopback());
  }
  SECTION("malformed task counts name the variable") {
    LaunchEnv env({{"SLURM_PROCID", "0"},
                   {"SLURM_NTASKS", "4"},
                   {"SLURM_STEP_TASKS_PER_NODE", "2(x2"},
                   {"SLURM_STEP_ID", "0"},
                   {"WEFT_ROOT_ADDR", "127.0.0.1:4000"}});
    expectError({"SLURM_STEP_TASKS_PER_NODE='2(x2'"});
  }
  SECTION("missing SLURM_NTASKS") {
    LaunchEnv env({{"SLURM_PROCID", "0"}, {"WEFT_ROOT_ADDR", "127.0.0.1:4000"}});
    expectError({"SLURM_NTASKS"});
  }
  SECTION("malformed SLURM_PROCID") {
    LaunchEnv env({{"SLURM_PROCID", ""}, {"SLURM_NTASKS", "2"}});
    expectError({"SLURM_PROCID is not set"});  // empty counts as unset
  }
}

// srun --mpi=none across hosts: rank 0 listens on the first node of the step's node list, at a port
// derived from the job and step ids. The node names here are addresses ("127.0.0.[1-3]" is a
// valid host list), so that they resolve on any machine.
TEST_CASE("Slurm across hosts without WEFT_ROOT_ADDR", "[bootstrap][launch][slurm]") {
  auto step = [](const char* rank, const char* node) {
    return LaunchEnv({{"SLURM_PROCID", rank},
                      {"SLURM_NTASKS", "6"},
                      {"SLURM_NODEID", node},
                      {"SLURM_LOCALID", "0"},
                      {"SLURM_TASKS_PER_NODE", "2(x3)"},
                      {"SLURM_STEP_NODELIST", "127.0.0.[1-3]"},
                      {"SLURM_JOB_ID", "42"},
                      {"SLURM_STEP_ID", "0"}});
  };
  SECTION("every rank names the first node, with the same port and secret") {
    LaunchInfo first;
    {
      LaunchEnv env = step("0", "0");
      first = readOk();
    }
    LaunchEnv env = step("5", "2");
    LaunchInfo last = readOk();
    CHECK(first.launcher == "slurm");
    CHECK(first.root.toString() == last.root.toString());
    CHECK(first.root.toString().rfind("127.0.0.1:", 0) == 0);
    CHECK(first.root.port() >= 20000);
    CHECK(first.secret == last.secret);
    CHECK_FALSE(last.secretFromEnv);
    CHECK(last.localNranks == 2);
    CHECK(last.rank == 5);
    // Another step of the job: another port (for these ids) and another secret.
    setenv("SLURM_STEP_ID", "1", 1);
    LaunchInfo next = readOk();
    CHECK(next.root.port() != last.root.port());
    CHECK(next.secret != last.secret);
  }
  SECTION("without a step's node list, the job's") {
    LaunchEnv env = step("1", "0");
    unsetenv("SLURM_STEP_NODELIST");
    setenv("SLURM_JOB_NODELIST", "127.0.0.2,127.0.0.1", 1);
    CHECK(readOk().root.toString().rfind("127.0.0.2:", 0) == 0);
    setenv("SLURM_NODELIST", "127.0.0.3", 1);  // the older name: the last resort
    CHECK(readOk().root.toString().rfind("127.0.0.2:", 0) == 0);
    unsetenv("SLURM_JOB_NODELIST");
    CHECK(readOk().root.toString().rfind("127.0.0.3:", 0) == 0);
  }
  SECTION("no node list at all") {
    LaunchEnv env = step("1", "0");
    unsetenv("SLURM_STEP_NODELIST");
    expectError({"WEFT_ROOT_ADDR", "SLURM_STEP_NODELIST"});
  }
  SECTION("WEFT_ROOT_ADDR still wins") {
    LaunchEnv env = step("1", "0");
    setenv("WEFT_ROOT_ADDR", "127.0.0.9:4000", 1);
    CHECK(readOk().root.toString() == "127.0.0.9:4000");
  }
  SECTION("rank 0 off the first node is caught by rank 0") {
    LaunchEnv env = step("0", "2");
    expectError({"SLURM_NODEID", "SLURM_STEP_NODELIST='127.0.0.[1-3]'", "WEFT_ROOT_ADDR"});
  }
  SECTION("an arbitrary distribution needs WEFT_ROOT_ADDR") {
    LaunchEnv env = step("3", "1");
    setenv("SLURM_DISTRIBUTION", "arbitrary", 1);
    expectError({"SLURM_DISTRIBUTION='arbitrary'", "WEFT_ROOT_ADDR"});
    setenv("SLURM_DISTRIBUTION", "cyclic", 1);
    CHECK(readOk().root.toString().rfind("127.0.0.1:", 0) == 0);
  }
  SECTION("a malformed node list names the variable") {
    LaunchEnv env = step("3", "1");
    setenv("SLURM_STEP_NODELIST", "node[1-", 1);
    expectError({"SLURM_STEP_NODELIST='node[1-'", "'[' without ']'"});
  }
  SECTION("the advice on WEFT_SECRET") {
    std::string advice = weft::bootstrap::secretAdvice("slurm");
    CHECK(advice.find("export WEFT_SECRET=$(openssl rand -hex 32)") != std::string::npos);
    CHECK(advice.find("srun") != std::string::npos);
  }
}

TEST_CASE("no launcher at all", "[bootstrap][launch]") {
  LaunchEnv env({});
  expectError({"no launcher", "WEFT_RANK"});
  CHECK_FALSE(weft::bootstrap::launcherDetected());
}

TEST_CASE("the launcher that started the process wins over variables of outer or stale ones",
          "[bootstrap][launch]") {
  SECTION("mpirun with a stale MASTER_ADDR and WORLD_SIZE in the environment") {
    LaunchEnv env({{"OMPI_COMM_WORLD_RANK", "1"},
                   {"OMPI_COMM_WORLD_SIZE", "6"},
                   {"WORLD_SIZE", "8"},
                   {"MASTER_ADDR", "10.0.0.1"},
                   {"WEFT_ROOT_ADDR", "127.0.0.1:4000"}});
    LaunchInfo info = readOk();
    CHECK(info.launcher == "openmpi");
    CHECK(info.rank == 1);
    CHECK(info.nranks == 6);
  }
  SECTION("torchrun workers inside an srun step") {
    LaunchEnv env({{"SLURM_PROCID", "0"},
                   {"SLURM_NTASKS", "2"},
                   {"SLURM_STEP_ID", "0"},
                   {"RANK", "5"},
                   {"WORLD_SIZE", "8"},
                   {"MASTER_ADDR", "127.0.0.1"},
                   {"MASTER_PORT", "29500"}});
    LaunchInfo info = readOk();
    CHECK(info.launcher == "torchrun");
    CHECK(info.rank == 5);
    CHECK(info.nranks == 8);
  }
  SECTION("mpirun inside an sbatch script") {
    LaunchEnv env({{"SLURM_PROCID", "0"},
                   {"SLURM_NTASKS", "4"},
                   {"OMPI_COMM_WORLD_RANK", "3"},
                   {"OMPI_COMM_WORLD_SIZE", "4"},
                   {"WEFT_ROOT_ADDR", "127.0.0.1:4000"}});
    CHECK(readOk().launcher == "openmpi");
  }
  SECTION("two launchers of the same depth that agree") {
    LaunchEnv env({{"OMPI_COMM_WORLD_RANK", "2"},
                   {"OMPI_COMM_WORLD_SIZE", "4"},
                   {"PMI_RANK", "2"},
                   {"PMI_SIZE", "4"},
                   {"WEFT_ROOT_ADDR", "127.0.0.1:4000"}});
    CHECK(readOk().launcher == "openmpi");
  }
  SECTION("two launchers of the same depth that disagree are a conflict naming both") {
    LaunchEnv env({{"OMPI_COMM_WORLD_RANK", "0"},
                   {"OMPI_COMM_WORLD_SIZE", "4"},
                   {"PMI_RANK", "1"},
                   {"PMI_SIZE", "2"},
                   {"WEFT_ROOT_ADDR", "127.0.0.1:4000"}});
    expectError({"conflicting", "OMPI_COMM_WORLD_RANK=0", "PMI_RANK=1 PMI_SIZE=2"});
  }
}

TEST_CASE("variables that claim several ranks never make a silent singleton",
          "[bootstrap][launch]") {
  SECTION("PMI-1 ranks without a rendezvous are refused, naming what is missing") {
    LaunchEnv env({{"PMI_RANK", "1"}, {"PMI_SIZE", "2"}});
    CHECK(weft::bootstrap::launcherDetected());
    expectError({"PMI_RANK=1 PMI_SIZE=2", "WEFT_ROOT_ADDR"});
    setenv("WEFT_ROOT_ADDR", "127.0.0.1:4000", 1);
    LaunchInfo info = readOk();
    CHECK(info.launcher == "pmi");
    CHECK(info.rank == 1);
    CHECK(info.nranks == 2);
  }
  SECTION("MVAPICH ranks") {
    LaunchEnv env({{"MV2_COMM_WORLD_RANK", "0"},
                   {"MV2_COMM_WORLD_SIZE", "3"},
                   {"MV2_COMM_WORLD_LOCAL_RANK", "0"},
                   {"MV2_COMM_WORLD_LOCAL_SIZE", "3"}});
    expectError({"MV2_COMM_WORLD_RANK=0 MV2_COMM_WORLD_SIZE=3", "WEFT_ROOT_ADDR"});
    setenv("WEFT_ROOT_ADDR", "127.0.0.1:4000", 1);
    LaunchInfo info = readOk();
    CHECK(info.launcher == "mvapich");
    CHECK(info.localNranks == 3);
  }
  SECTION("a size without a rank") {
    LaunchEnv env({{"WORLD_SIZE", "4"}});
    CHECK(weft::bootstrap::launcherDetected());
    expectError({"WORLD_SIZE=4", "RANK is not set"});
  }
  SECTION("a size of one without a rank is no launcher") {
    LaunchEnv env({{"WORLD_SIZE", "1"}, {"PMI_SIZE", "1"}});
    CHECK_FALSE(weft::bootstrap::launcherDetected());
  }
  SECTION("a PMIx rank alone, without its namespace") {
    LaunchEnv env({{"PMIX_RANK", "0"}});
    CHECK(weft::bootstrap::launcherDetected());
    expectError({"PMIX_RANK=0", "PMIx", "PMIX_NAMESPACE is not set"});
  }
  SECTION("a PMIx launcher whose library cannot be loaded") {
    LaunchEnv env({{"PMIX_RANK", "0"},
                   {"PMIX_NAMESPACE", "job.1"},
                   {"WEFT_PMIX_LIB", "/nonexistent/libpmix.so.2"}});
    expectError({"PMIX_RANK=0", "cannot load /nonexistent/libpmix.so.2", "WEFT_ROOT_ADDR"});
  }
  SECTION("a library that is not PMIx") {
    LaunchEnv env(
        {{"PMIX_RANK", "0"}, {"PMIX_NAMESPACE", "job.1"}, {"WEFT_PMIX_LIB", "libc.so.6"}});
    std::string why;
    CHECK_FALSE(weft::bootstrap::pmixAvailable(&why));
    CHECK_THAT(why, Catch::Contains("libc.so.6 lacks PMIx_Init") ||
                        Catch::Contains("without the PMIx headers"));
  }
  SECTION("Open MPI across hosts without PMIx names both ways out") {
    LaunchEnv env({{"OMPI_COMM_WORLD_RANK", "0"},
                   {"OMPI_COMM_WORLD_SIZE", "4"},
                   {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                   {"PMIX_RANK", "0"},
                   {"PMIX_NAMESPACE", "job.1"},
                   {"WEFT_PMIX_LIB", "/nonexistent/libpmix.so.2"}});
    expectError({"WEFT_ROOT_ADDR", "PMIx server", "cannot load /nonexistent/libpmix.so.2"});
  }
}

// Where this build speaks PMIx and Debian's libpmix2 is installed: which launchers' jobs
// rendezvous through it. No server is contacted here; cluster.mpi_job.openmpi does that.
TEST_CASE("PMIx launchers rendezvous through their store", "[launch]") {
  std::string why;
  {
    LaunchEnv env({});
    if (!weft::bootstrap::pmixAvailable(&why)) {
      WARN("skipped: no PMIx here: " + why);
      return;
    }
  }
  using weft::bootstrap::JobStoreKind;
  SECTION("Open MPI's mpirun, one host or many") {
    LaunchEnv env({{"OMPI_COMM_WORLD_RANK", "1"},
                   {"OMPI_COMM_WORLD_SIZE", "4"},
                   {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                   {"PMIX_RANK", "1"},
                   {"PMIX_NAMESPACE", "job.1"}});
    LaunchInfo info = readOk();
    CHECK(info.store == JobStoreKind::pmix);
    CHECK(info.launcher == "openmpi");
    CHECK(info.rank == 1);
    CHECK(info.nranks == 4);
  }
  SECTION("PMIx's variables alone") {
    LaunchEnv env({{"PMIX_RANK", "2"}, {"PMIX_NAMESPACE", "job.1"}});
    LaunchInfo info = readOk();
    CHECK(info.store == JobStoreKind::pmix);
    CHECK(info.launcher == "pmix");
    CHECK(info.nranks == 0);  // the store says
  }
  SECTION("WEFT_ROOT_ADDR wins over the store") {
    LaunchEnv env({{"OMPI_COMM_WORLD_RANK", "1"},
                   {"OMPI_COMM_WORLD_SIZE", "4"},
                   {"PMIX_RANK", "1"},
                   {"PMIX_NAMESPACE", "job.1"}});
    setenv("WEFT_ROOT_ADDR", "127.0.0.1:4000", 1);  // LaunchEnv restores it
    CHECK(readOk().store == JobStoreKind::none);
  }
  SECTION("torchrun under mpirun: the workers' PMIx variables are their agent's") {
    LaunchEnv env({{"RANK", "3"},
                   {"WORLD_SIZE", "4"},
                   {"MASTER_ADDR", "127.0.0.1"},
                   {"MASTER_PORT", "29500"},
                   {"OMPI_COMM_WORLD_RANK", "0"},
                   {"OMPI_COMM_WORLD_SIZE", "2"},
                   {"PMIX_RANK", "0"},
                   {"PMIX_NAMESPACE", "job.1"}});
    LaunchInfo info = readOk();
    CHECK(info.store == JobStoreKind::none);
    CHECK(info.launcher == "torchrun");
  }
  SECTION("a lone process in an sbatch script of several tasks") {
    LaunchEnv env({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "4"}, {"SLURM_JOB_ID", "9"}});
    expectError({"SLURM_NTASKS=4", "srun"});
    setenv("SLURM_NTASKS", "1", 1);
    CHECK(readOk().nranks == 1);
  }
}
