#include "bootstrap/slurm_hostlist.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

using weft::Status;
using weft::bootstrap::expandSlurmHostList;
using weft::bootstrap::expandSlurmTaskCounts;

namespace {

std::vector<std::string> hosts(const std::string& text) {
  std::vector<std::string> out;
  Status status = expandSlurmHostList(text, "SLURM_STEP_NODELIST", &out);
  INFO(status.message());
  REQUIRE(status.isOk());
  return out;
}

// The error must be weftInvalidArgument naming the variable, the whole text and each fragment.
void expectHostListError(const std::string& text, std::initializer_list<const char*> fragments) {
  std::vector<std::string> out = {"untouched"};
  Status status = expandSlurmHostList(text, "SLURM_JOB_NODELIST", &out);
  INFO(status.message());
  CHECK(status.code() == weftInvalidArgument);
  CHECK(status.message().find("SLURM_JOB_NODELIST='" + text + "'") != std::string::npos);
  for (const char* fragment : fragments) {
    CHECK(status.message().find(fragment) != std::string::npos);
  }
  CHECK(out == std::vector<std::string>{"untouched"});
}

std::vector<int> counts(const std::string& text) {
  std::vector<int> out;
  Status status = expandSlurmTaskCounts(text, "SLURM_TASKS_PER_NODE", &out);
  INFO(status.message());
  REQUIRE(status.isOk());
  return out;
}

void expectCountsError(const std::string& text, const char* fragment) {
  std::vector<int> out;
  Status status = expandSlurmTaskCounts(text, "SLURM_STEP_TASKS_PER_NODE", &out);
  INFO(status.message());
  CHECK(status.code() == weftInvalidArgument);
  CHECK(status.message().find("SLURM_STEP_TASKS_PER_NODE='" + text + "'") != std::string::npos);
  CHECK(status.message().find(fragment) != std::string::npos);
}

using Names = std::vector<std::string>;

}  // namespace

TEST_CASE("Slurm host lists expand in Slurm's order", "[bootstrap][slurm]") {
  CHECK(hosts("node0") == Names{"node0"});
  CHECK(hosts("node0,gpu5") == Names{"node0", "gpu5"});
  CHECK(hosts("node[0-2]") == Names{"node0", "node1", "node2"});
  CHECK(hosts("node[01-03,07],gpu5") == Names{"node01", "node02", "node03", "node07", "gpu5"});
  CHECK(hosts("n[3]") == Names{"n3"});
  CHECK(hosts("[1-2]") == Names{"1", "2"});
  // Fully qualified names and other punctuation stay as they are.
  CHECK(hosts("node1.cluster.example,node-2_b") == Names{"node1.cluster.example", "node-2_b"});
}

TEST_CASE("Slurm host lists keep the lower bound's padding", "[bootstrap][slurm]") {
  CHECK(hosts("n[08-11]") == Names{"n08", "n09", "n10", "n11"});
  CHECK(hosts("n[8-11]") == Names{"n8", "n9", "n10", "n11"});
  CHECK(hosts("n[098-101]") == Names{"n098", "n099", "n100", "n101"});
  CHECK(hosts("n[001,10]") == Names{"n001", "n10"});  // each range its own width
}

TEST_CASE("Slurm host lists with suffixes and several ranges", "[bootstrap][slurm]") {
  CHECK(hosts("node[1-2]-ib") == Names{"node1-ib", "node2-ib"});
  CHECK(hosts("a[1-2]b[3-4]") == Names{"a1b3", "a1b4", "a2b3", "a2b4"});
  CHECK(hosts("rack[1,3]n[0-1],login") ==
        Names{"rack1n0", "rack1n1", "rack3n0", "rack3n1", "login"});
  // Commas inside brackets never split items.
  CHECK(hosts("x[1,2],y[3,4-5]") == Names{"x1", "x2", "y3", "y4", "y5"});
}

TEST_CASE("malformed Slurm host lists name the variable and the text", "[bootstrap][slurm]") {
  expectHostListError("", {"empty"});
  expectHostListError("node[1-3", {"'[' without ']'"});
  expectHostListError("node1-3]", {"']' without '['"});
  expectHostListError("node[[1-3]]", {"nested"});
  expectHostListError("node[3-1]", {"'3-1'", "backwards"});
  expectHostListError("node[a-b]", {"'a-b'"});
  expectHostListError("node[1-]", {"'1-'"});
  expectHostListError("node[]", {"empty brackets"});
  expectHostListError("node[1,]", {"''"});
  expectHostListError("good,bad[x]", {"(in 'bad[x]')"});
  expectHostListError("a,,b", {"empty host name"});
  expectHostListError("a,", {"empty host name"});
  expectHostListError("a b", {"white space"});
  expectHostListError("n[0-99999999]", {"million"});
  expectHostListError("n[0-999]m[0-9999]", {"million"});
  expectHostListError("n[0-1999999999999999999]", {"'0-1999999999999999999'"});
}

TEST_CASE("Slurm task counts", "[bootstrap][slurm]") {
  CHECK(counts("4") == std::vector<int>{4});
  CHECK(counts("4(x2)") == std::vector<int>{4, 4});
  CHECK(counts("2(x3),1") == std::vector<int>{2, 2, 2, 1});
  CHECK(counts("1,3(x1),2") == std::vector<int>{1, 3, 2});
  expectCountsError("", "empty");
  expectCountsError("1,2(x3", "(in '2(x3')");
  expectCountsError("2(3)", "N(xM)");
  expectCountsError("2(x0)", "repeat");
  expectCountsError("0", "at least 1");
  expectCountsError("2,,1", "(in '')");
  expectCountsError("two", "N(xM)");
  expectCountsError("1(x99999999)", "million");
}
