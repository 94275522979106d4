// Slice sizes as variants of an algorithm: "ring@128K" in tuning tables and WEFT_ALGO, the Plan
// it gives, and which variants weft_tune measure times for a call.
#include <catch2/catch.hpp>

#include "tune/select.h"
#include "tune/tuning_table.h"

namespace weft::tune {
namespace {

using Catch::Matchers::Contains;

AlgoChoice parsedChoice(CollType coll, const std::string& text) {
  AlgoChoice choice;
  Status status = parseChoice(coll, text, &choice);
  INFO(text << ": " << status.message());
  REQUIRE(status.isOk());
  return choice;
}

std::string choiceError(CollType coll, const std::string& text) {
  AlgoChoice choice;
  Status status = parseChoice(coll, text, &choice);
  REQUIRE_FALSE(status.isOk());
  return status.message();
}

Layout twoByTwo() {
  Layout layout;
  layout.nodes = topo::buildNodeLayout({0, 0, 1, 1});
  layout.nranks = 4;
  layout.cost = buildCostLayout(layout.nodes, true);
  return layout;
}

CollArgs allReduce(size_t bytes) {
  CollArgs args;
  args.coll = CollType::kAllReduce;
  args.type = weftFloat32;
  args.count = bytes / 4;
  return args;
}

std::vector<std::string> variantNames(const AlgoChoice& choice, size_t messageBytes) {
  std::vector<std::string> names;
  for (const AlgoChoice& variant : sliceVariants(choice, messageBytes, twoByTwo(), 512 * 1024,
                                                 {128 * 1024, 512 * 1024, 2 << 20})) {
    names.push_back(choiceName(variant));
  }
  return names;
}

}  // namespace

TEST_CASE("a named slice reads back and names sizes as ranges do", "[tune]") {
  const AlgoChoice ring = parsedChoice(CollType::kAllReduce, "ring@128K");
  CHECK(ring.algo == AlgoId::kRing);
  CHECK(ring.sliceBytes == 128 * 1024);
  CHECK(choiceName(ring) == "ring@128K");
  const AlgoChoice twoLevel = parsedChoice(CollType::kAllReduce, "two_level_leader/tree@2M");
  CHECK(twoLevel.inner == AlgoId::kTree);
  CHECK(twoLevel.sliceBytes == size_t{2} << 20);
  CHECK(choiceName(twoLevel) == "two_level_leader/tree@2M");
  // Without its stage among nodes a two-level all-reduce may still name a slice for it.
  CHECK(parsedChoice(CollType::kAllReduce, "two_level_shm@1536").sliceBytes == 1536);
  CHECK(parsedChoice(CollType::kBroadcast, "chain@64").sliceBytes == 64);
  CHECK(choiceName(parsedChoice(CollType::kAllReduce, "ring@1G")) == "ring@1G");
  CHECK(choiceName(parsedChoice(CollType::kAllReduce, "ring@1536")) == "ring@1536");
  CHECK_FALSE(parsedChoice(CollType::kAllReduce, "ring") == ring);
}

TEST_CASE("a slice on an algorithm that cuts none, or out of range, is an error", "[tune]") {
  CHECK_THAT(choiceError(CollType::kAllReduce, "recursive_doubling@128K"),
             Contains("'recursive_doubling' does not cut its messages into slices"));
  CHECK_THAT(choiceError(CollType::kAllReduce, "two_level_leader/recursive_doubling@128K"),
             Contains("does not cut"));
  // All-gather's two-level algorithm has no stage among nodes to cut.
  CHECK_THAT(choiceError(CollType::kAllGather, "two_level_leader@128K"), Contains("does not cut"));
  CHECK_THAT(choiceError(CollType::kAllReduce, "ring@32"), Contains("bad slice '32'"));
  CHECK_THAT(choiceError(CollType::kAllReduce, "ring@2G"), Contains("bad slice '2G'"));
  CHECK_THAT(choiceError(CollType::kAllReduce, "ring@12Q"), Contains("bad slice '12Q'"));
  CHECK_THAT(choiceError(CollType::kAllReduce, "ring@"), Contains("bad slice ''"));
  CHECK_THAT(choiceError(CollType::kAllReduce, "ring@-4K"), Contains("bad slice"));
}

TEST_CASE("a table's named slice cuts the call and shows in the plan's name", "[tune]") {
  TuningTable table;
  REQUIRE(parseTuningTable("weft-tuning 1\n"
                           "layout ranks=4 nodes=2 per-node=2,2 numbering=block intra=shm net=tcp\n"
                           "rule allreduce 0 1048576 ring@128K\n"
                           "rule allreduce 1048576 - tree@32K\n",
                           "t.txt", &table)
              .isOk());
  TuningTable unnamed;
  REQUIRE(parseTuningTable("weft-tuning 1\n"
                           "layout ranks=4 nodes=2 per-node=2,2 numbering=block intra=shm net=tcp\n"
                           "rule allreduce 0 1048576 ring\n"
                           "rule allreduce 1048576 - tree\n",
                           "t.txt", &unnamed)
              .isOk());
  CHECK(table.hash() != unnamed.hash());
  CHECK(parsedChoice(CollType::kAllReduce, "ring@128K") == table.rules[0].choice);

  Layout layout = twoByTwo();
  layout.table = std::make_shared<TuningTable>(table);
  const Plan ring = choosePlan(allReduce(256 * 1024), layout, AlgoOverrides{}, 512 * 1024);
  CHECK(ring.algo == AlgoId::kRing);
  CHECK(ring.sliceBytes == 128 * 1024);
  CHECK(ring.namedSliceBytes == 128 * 1024);
  CHECK(planName(ring) == "ring@128K");
  // The tree's chunk is capped by the named slice instead of the communicator's.
  const Plan tree = choosePlan(allReduce(4 << 20), layout, AlgoOverrides{}, 512 * 1024);
  CHECK(tree.sliceBytes == 32 * 1024);
  CHECK(planName(tree) == "tree@32K");

  layout.table = std::make_shared<TuningTable>(unnamed);
  const Plan plain = choosePlan(allReduce(4 << 20), layout, AlgoOverrides{}, 512 * 1024);
  CHECK(plain.sliceBytes == treeChunkBytes(4 << 20, 512 * 1024));
  CHECK(plain.namedSliceBytes == 0);
  CHECK(planName(plain) == "tree");
}

TEST_CASE("WEFT_ALGO names a slice, and its errors name the token", "[tune]") {
  AlgoOverrides overrides;
  REQUIRE(
      parseAlgoOverrides("allreduce:1M-=two_level_leader/ring@256K,broadcast=chain@64K", &overrides)
          .isOk());
  const Plan large = choosePlan(allReduce(4 << 20), twoByTwo(), overrides, 512 * 1024);
  CHECK(planName(large) == "two_level_leader/ring@256K");
  CHECK(large.sliceBytes == 256 * 1024);
  CHECK(large.forced);
  // Sizes the range does not cover keep the communicator's slice.
  const Plan small = choosePlan(allReduce(1024), twoByTwo(), overrides, 512 * 1024);
  CHECK(small.sliceBytes == 512 * 1024);
  CHECK(small.namedSliceBytes == 0);

  Status bad = parseAlgoOverrides("allreduce=recursive_doubling@4K", &overrides);
  CHECK_THAT(bad.message(), Contains("WEFT_ALGO") && Contains("does not cut"));
  bad = parseAlgoOverrides("allreduce=ring@tiny", &overrides);
  CHECK_THAT(bad.message(), Contains("WEFT_ALGO") && Contains("bad slice 'tiny'"));
}

TEST_CASE("measure times a slice only where it cuts the call otherwise", "[tune]") {
  const AlgoChoice ring{AlgoId::kRing, std::nullopt, 0};
  // A 1 MiB ring on 4 ranks carries 256 KiB blocks: 128 KiB slices cut them, 2 MiB ones do not
  // differ from 512 KiB; the communicator's own slice is never a variant.
  CHECK(variantNames(ring, 1 << 20) == std::vector<std::string>{"ring@128K"});
  CHECK(variantNames(ring, 4 << 20) == std::vector<std::string>{"ring@128K", "ring@2M"});
  CHECK(variantNames(ring, 128 * 1024).empty());
  // A chain carries the whole message.
  CHECK(variantNames({AlgoId::kChain, std::nullopt, 0}, 256 * 1024) ==
        std::vector<std::string>{"chain@128K"});
  // The tree's chunk at 4 MiB is 256 KiB: 2 MiB slices do not change it, 128 KiB ones do.
  CHECK(variantNames({AlgoId::kTree, std::nullopt, 0}, 4 << 20) ==
        std::vector<std::string>{"tree@128K"});
  // A two-level stage among 2 nodes carries half the message per block.
  CHECK(variantNames({AlgoId::kTwoLevelLeader, AlgoId::kRing, 0}, 512 * 1024) ==
        std::vector<std::string>{"two_level_leader/ring@128K"});
  CHECK(variantNames({AlgoId::kTwoLevelLeader, AlgoId::kRecursiveDoubling, 0}, 64 << 20).empty());
  CHECK(variantNames({AlgoId::kRecursiveDoubling, std::nullopt, 0}, 64 << 20).empty());
  CHECK(variantNames({AlgoId::kTwoLevelLeader, std::nullopt, 0}, 64 << 20).empty());
}

}  // namespace weft::tune
