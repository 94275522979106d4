// Tuning tables: the file format, the rules that measurements imply, layout fingerprints, the
// search for a communicator's table, and their place in choosePlan.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>

#include "scoped_env.h"
#include "tune/select.h"
#include "tune/table_search.h"
#include "tune/tuning_table.h"

namespace weft::tune {
namespace {

constexpr const char* kTable =
    "# weft tuning table\n"
    "weft-tuning 1\n"
    "layout ranks=4 nodes=2 per-node=2,2 numbering=block intra=shm net=tcp\n"
    "measured allreduce 1024 ring 50.00 3.0 3\n"
    "rule allreduce 0 4096 recursive_doubling\n"
    "rule allreduce 4096 - two_level_leader/ring\n"
    "rule broadcast 0 - chain\n";

TuningTable parsed(const std::string& text) {
  TuningTable table;
  Status status = parseTuningTable(text, "t.txt", &table);
  INFO(status.message());
  REQUIRE(status.isOk());
  return table;
}

std::string parseError(const std::string& text) {
  TuningTable table;
  Status status = parseTuningTable(text, "t.txt", &table);
  REQUIRE_FALSE(status.isOk());
  return status.message();
}

topo::NodeLayout nodesOf(std::vector<uint64_t> hosts) {
  return topo::buildNodeLayout(hosts);
}

// A fresh directory under /tmp, removed with its files at the end of the scope.
struct TempDir {
  std::string path;
  std::vector<std::string> files;
  TempDir() {
    char name[] = "/tmp/weft-tune-test-XXXXXX";
    path = mkdtemp(name);
  }
  std::string write(const std::string& relative, const std::string& text) {
    const std::string file = path + "/" + relative;
    for (size_t at = file.find('/', path.size() + 1); at != std::string::npos;
         at = file.find('/', at + 1)) {
      mkdir(file.substr(0, at).c_str(), 0755);
    }
    std::ofstream(file) << text;
    files.push_back(file);
    return file;
  }
  ~TempDir() {
    for (auto it = files.rbegin(); it != files.rend(); ++it) unlink(it->c_str());
    for (const char* sub : {"/weft/tuning", "/weft", "/dir"}) rmdir((path + sub).c_str());
    rmdir(path.c_str());
  }
};

}  // namespace

TEST_CASE("a tuning table survives formatting and its hash covers only what decides", "[tune]") {
  TuningTable table = parsed(kTable);
  CHECK(table.layout == "ranks=4 nodes=2 per-node=2,2 numbering=block intra=shm net=tcp");
  REQUIRE(table.rules.size() == 3);
  CHECK(table.rules[1].choice.algo == AlgoId::kTwoLevelLeader);
  CHECK(table.rules[1].choice.inner == AlgoId::kRing);
  CHECK(table.rules[1].maxBytes == SIZE_MAX);
  REQUIRE(table.measured.size() == 1);
  CHECK(table.measured[0].medianMicros == Approx(50.0));

  TuningTable again = parsed(formatTuningTable(table));
  CHECK(again.hash() == table.hash());
  CHECK(again.rules.size() == table.rules.size());
  CHECK(again.measured.size() == 1);

  TuningTable noEvidence = table;
  noEvidence.measured.clear();
  noEvidence.comments = {"# another header"};
  CHECK(noEvidence.hash() == table.hash());
  TuningTable otherRule = table;
  otherRule.rules[0].maxBytes = 8192;
  CHECK(otherRule.hash() != table.hash());
  TuningTable otherLayout = table;
  otherLayout.layout = "ranks=4 nodes=2 per-node=2,2 numbering=interleave intra=shm net=tcp";
  CHECK(otherLayout.hash() != table.hash());

  REQUIRE(table.ruleFor(CollType::kAllReduce, 4095) != nullptr);
  CHECK(table.ruleFor(CollType::kAllReduce, 4095)->choice.algo == AlgoId::kRecursiveDoubling);
  CHECK(table.ruleFor(CollType::kAllReduce, 4096)->choice.algo == AlgoId::kTwoLevelLeader);
  CHECK(table.ruleFor(CollType::kAllGather, 16) == nullptr);
}

TEST_CASE("a malformed tuning table is an error naming the file and line", "[tune]") {
  using Catch::Matchers::Contains;
  CHECK_THAT(parseError("layout ranks=1\n"), Contains("t.txt:1") && Contains("weft-tuning 1"));
  CHECK_THAT(parseError("weft-tuning 2\n"), Contains("version 2"));
  CHECK_THAT(parseError("weft-tuning 1\nrule allreduce 0 - ring\n"), Contains("no 'layout' line"));
  const std::string head =
      "weft-tuning 1\nlayout ranks=2 nodes=1 per-node=2 numbering=block intra=shm net=none\n";
  CHECK_THAT(parseError(head + "rule allsum 0 - ring\n"),
             Contains("t.txt:3") && Contains("'allsum'"));
  CHECK_THAT(parseError(head + "rule allreduce 10 5 ring\n"), Contains("bad size range"));
  CHECK_THAT(parseError(head + "rule broadcast 0 - rabenseifner\n"),
             Contains("broadcast has no algorithm 'rabenseifner'"));
  CHECK_THAT(parseError(head + "rule allreduce 0 - ring/tree\n"), Contains("no stage among nodes"));
  CHECK_THAT(parseError(head + "rule allreduce 0 - two_level_leader/chain\n"),
             Contains("no stage 'chain'"));
  CHECK_THAT(parseError(head + "rule allreduce 0 - ring extra\n"), Contains("unexpected 'extra'"));
  CHECK_THAT(parseError(head + "measured allreduce 16 ring fast 1 1\n"), Contains("MEDIAN_US"));
  CHECK_THAT(parseError(head + "banana\n"), Contains("unknown line 'banana'"));
  CHECK_THAT(parseError("weft-tuning 1\nlayout ranks=3 per-node=2\n"),
             Contains("malformed layout"));
}

TEST_CASE("measurements become rules: the fastest per size, ranges meeting halfway", "[tune]") {
  auto measured = [](size_t bytes, AlgoId algo, double micros) {
    TableMeasurement entry;
    entry.coll = CollType::kAllReduce;
    entry.bytes = bytes;
    entry.choice.algo = algo;
    entry.medianMicros = micros;
    entry.rounds = 3;
    return entry;
  };
  std::vector<TableMeasurement> cells = {
      measured(16, AlgoId::kRing, 90),    measured(16, AlgoId::kRecursiveDoubling, 40),
      measured(64, AlgoId::kRing, 95),    measured(64, AlgoId::kRecursiveDoubling, 45),
      measured(256, AlgoId::kRing, 100),  measured(256, AlgoId::kRecursiveDoubling, 120),
      measured(1024, AlgoId::kRing, 150), measured(1024, AlgoId::kRecursiveDoubling, 300),
  };
  std::vector<TableRule> rules = rulesFromMeasurements(cells);
  REQUIRE(rules.size() == 2);
  CHECK(rules[0].choice.algo == AlgoId::kRecursiveDoubling);
  CHECK(rules[0].minBytes == 0);
  CHECK(rules[0].maxBytes == 128);  // sqrt(64 * 256)
  CHECK(rules[1].choice.algo == AlgoId::kRing);
  CHECK(rules[1].minBytes == 128);
  CHECK(rules[1].maxBytes == SIZE_MAX);
}

TEST_CASE("layout fingerprints name the numbering and read back", "[tune]") {
  CHECK(layoutFingerprint(nodesOf({0, 0, 1, 1}), true, "tcp") ==
        "ranks=4 nodes=2 per-node=2,2 numbering=block intra=shm net=tcp");
  CHECK(layoutFingerprint(nodesOf({0, 1, 0, 1}), true, "tcp") ==
        "ranks=4 nodes=2 per-node=2,2 numbering=interleave intra=shm net=tcp");
  // 3+2+1 dealt round robin over the nodes that still have room.
  CHECK(layoutFingerprint(nodesOf({0, 1, 2, 0, 1, 0}), true, "rdma") ==
        "ranks=6 nodes=3 per-node=3,2,1 numbering=interleave intra=shm net=rdma");
  CHECK(layoutFingerprint(nodesOf({0, 1, 1, 0}), false, "tcp") ==
        "ranks=4 nodes=2 per-node=2,2 numbering=map:0,1,1,0 intra=net net=tcp");
  CHECK(layoutFingerprint(nodesOf({0, 0}), true, "tcp") ==
        "ranks=2 nodes=1 per-node=2 numbering=block intra=shm net=none");

  for (std::vector<uint64_t> hosts :
       {std::vector<uint64_t>{0, 0, 1, 1}, {0, 1, 2, 0, 1, 0}, {0, 1, 1, 0}, {5, 5, 5}}) {
    const topo::NodeLayout nodes = nodesOf(hosts);
    const std::string fingerprint = layoutFingerprint(nodes, true, "tcp");
    topo::NodeLayout back;
    bool intraShm = false;
    REQUIRE(layoutFromFingerprint(fingerprint, &back, &intraShm));
    CHECK(back.nodeOf == nodes.nodeOf);
    CHECK(intraShm);
    CHECK(fingerprintRanks(fingerprint) == static_cast<int>(hosts.size()));
  }
  CHECK(fingerprintRanks("ranks=5 nodes=2 per-node=2,2 numbering=block") == 0);
}

TEST_CASE("a table's rule chooses after the overrides and before the model", "[tune]") {
  Layout layout;
  layout.nodes = nodesOf({0, 0, 1, 1});
  layout.nranks = 4;
  layout.cost = buildCostLayout(layout.nodes, true);
  layout.table = std::make_shared<TuningTable>(parsed(kTable));
  CollArgs args;
  args.coll = CollType::kAllReduce;
  args.type = weftFloat32;
  args.count = 256;  // 1 KiB
  AlgoOverrides none;
  Plan small = choosePlan(args, layout, none, 512 * 1024);
  CHECK(small.algo == AlgoId::kRecursiveDoubling);
  CHECK(small.fromTable);
  args.count = 1 << 20;
  Plan large = choosePlan(args, layout, none, 512 * 1024);
  CHECK(large.algo == AlgoId::kTwoLevelLeader);
  CHECK(large.inner == AlgoId::kRing);

  AlgoOverrides forced;
  REQUIRE(parseAlgoOverrides("allreduce=two_level_split/tree", &forced).isOk());
  Plan overridden = choosePlan(args, layout, forced, 512 * 1024);
  CHECK(overridden.algo == AlgoId::kTwoLevelSplit);
  CHECK(overridden.inner == AlgoId::kTree);
  CHECK_FALSE(overridden.fromTable);

  // A collective the table does not cover is the model's.
  args.coll = CollType::kAllGather;
  args.count = 64;
  Plan modelled = choosePlan(args, layout, none, 512 * 1024);
  CHECK_FALSE(modelled.fromTable);
  CHECK(modelled.predictedMicros > 0);
}

TEST_CASE("WEFT_ALGO names a two-level algorithm's stage among nodes", "[tune]") {
  AlgoOverrides overrides;
  REQUIRE(
      parseAlgoOverrides("allreduce:0-4K=two_level_leader/recursive_doubling", &overrides).isOk());
  REQUIRE(overrides.bySize[static_cast<int>(CollType::kAllReduce)].size() == 1);
  CHECK(overrides.bySize[static_cast<int>(CollType::kAllReduce)][0].choice.inner ==
        AlgoId::kRecursiveDoubling);
  Status bad = parseAlgoOverrides("allreduce=ring/tree", &overrides);
  CHECK_THAT(bad.message(), Catch::Matchers::Contains("WEFT_ALGO") &&
                                Catch::Matchers::Contains("no stage among nodes"));
  bad = parseAlgoOverrides("broadcast=two_level_leader/ring", &overrides);
  CHECK_THAT(bad.message(), Catch::Matchers::Contains("no stage 'ring'"));
}

TEST_CASE("a table that needs shared windows is refused on several nodes", "[tune]") {
  TuningTable table = parsed(
      "weft-tuning 1\nlayout ranks=4 nodes=2 per-node=2,2 numbering=block intra=shm net=tcp\n"
      "rule allreduce 0 - shm_direct\n");
  Layout layout;
  layout.nranks = 4;
  Status status = checkTable(table, layout);
  CHECK_THAT(status.message(),
             Catch::Matchers::Contains("t.txt") && Catch::Matchers::Contains("shm_direct"));
  layout.oneHostShm = true;
  CHECK(checkTable(table, layout).isOk());
}

TEST_CASE("the table search takes the first table of the communicator's layout", "[tune]") {
  TempDir dir;
  const std::string block = "ranks=4 nodes=2 per-node=2,2 numbering=block intra=shm net=tcp";
  const std::string interleave =
      "ranks=4 nodes=2 per-node=2,2 numbering=interleave intra=shm net=tcp";
  const std::string small = "ranks=2 nodes=2 per-node=1,1 numbering=block intra=shm net=tcp";
  const std::string a = dir.write("dir/a.txt", std::string(kTable));
  const std::string b =
      dir.write("dir/b.txt", "weft-tuning 1\nlayout " + interleave + "\nrule allreduce 0 - ring\n");
  dir.write("dir/notes.md", "not a table");

  TableSearch search;
  REQUIRE(findTuningTable(dir.path + "/dir", interleave, &search).isOk());
  REQUIRE(search.table != nullptr);
  CHECK(search.table->source == b);
  REQUIRE(findTuningTable(b + ":" + a, block, &search).isOk());
  REQUIRE(search.table != nullptr);
  CHECK(search.table->source == a);

  // Named tables, none for this layout: refused, and a warning unless this is a smaller
  // communicator (a sub-group of the measured job).
  const std::string other = "ranks=8 nodes=4 per-node=2,2,2,2 numbering=block intra=shm net=tcp";
  REQUIRE(findTuningTable(a, other, &search).isOk());
  CHECK(search.table == nullptr);
  CHECK_THAT(search.refusal, Catch::Matchers::Contains(other) && Catch::Matchers::Contains(a) &&
                                 Catch::Matchers::Contains("weft_tune measure"));
  CHECK(search.warn);
  REQUIRE(findTuningTable(a, small, &search).isOk());
  CHECK(search.table == nullptr);
  CHECK_FALSE(search.warn);

  Status missing = findTuningTable(dir.path + "/absent.txt", block, &search);
  CHECK_THAT(missing.message(), Catch::Matchers::Contains("WEFT_TUNE_FILE") &&
                                    Catch::Matchers::Contains("absent.txt"));
  const std::string broken =
      dir.write("dir/c.txt", "weft-tuning 1\nlayout " + block + "\nrule x\n");
  CHECK_THAT(findTuningTable(broken, block, &search).message(),
             Catch::Matchers::Contains("c.txt:3"));

  // The default search path: $XDG_CONFIG_HOME/weft/tuning; a broken file there is skipped.
  test::ScopedEnv env({{"XDG_CONFIG_HOME", dir.path.c_str()}, {"WEFT_DEBUG", "NONE"}});
  dir.write("weft/tuning/0-broken.txt", "nonsense\n");
  const std::string found = dir.write("weft/tuning/1.txt", std::string(kTable));
  REQUIRE(findTuningTable("", block, &search).isOk());
  REQUIRE(search.table != nullptr);
  CHECK(search.table->source == found);
  REQUIRE(findTuningTable("", other, &search).isOk());
  CHECK(search.table == nullptr);
  CHECK(search.refusal.empty());
}

}  // namespace weft::tune
