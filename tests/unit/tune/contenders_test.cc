#include "tune/contenders.h"

#include <catch2/catch.hpp>

using weft::tune::closeContenders;

TEST_CASE("closeContenders names the leader and the candidates whose timings overlap it",
          "[tune][contenders]") {
  SECTION("a clear winner decides the cell") {
    CHECK(closeContenders({{10, 11, 12}, {20, 21, 22}, {13, 14, 15}}).empty());
  }
  SECTION("overlapping ranges keep the cell open, the leader (lowest median) first") {
    // Candidate 1 has the lowest median; candidate 0's quiet round overlaps it, 2 stands clear.
    CHECK(closeContenders({{9, 14, 15}, {10, 11, 12}, {30, 31, 32}}) == std::vector<size_t>{1, 0});
  }
  SECTION("a pruned candidate (one slow timing) does not contend") {
    CHECK(closeContenders({{10, 11, 12}, {40}, {11.5, 13, 14}}) == std::vector<size_t>{0, 2});
  }
  SECTION("untimed candidates are left out, and nothing timed decides nothing") {
    CHECK(closeContenders({{}, {5, 6, 7}}).empty());
    CHECK(closeContenders({{}, {}}).empty());
  }
}

TEST_CASE("medianOf takes the middle, or the mean of the two middles", "[tune][contenders]") {
  CHECK(weft::tune::medianOf({3, 1, 2}) == 2);
  CHECK(weft::tune::medianOf({4, 1, 3, 2}) == 2.5);
  CHECK(weft::tune::medianOf({}) == 0);
}

TEST_CASE("clearlyFaster needs every timing below the other's fastest", "[tune][contenders]") {
  using weft::tune::clearlyFaster;
  CHECK(clearlyFaster({10, 11, 12}, {13, 14}));
  CHECK_FALSE(clearlyFaster({10, 11, 13}, {13, 14}));  // a lower median is not enough
  CHECK_FALSE(clearlyFaster({13, 14}, {10, 11, 12}));
  CHECK_FALSE(clearlyFaster({}, {10}));
  CHECK_FALSE(clearlyFaster({10}, {}));
}

TEST_CASE("a slice variant takes the rule only when clearly faster than its own slice",
          "[tune][contenders]") {
  using weft::AlgoId;
  using weft::tune::AlgoChoice;
  const AlgoChoice ring{AlgoId::kRing, std::nullopt, 0};
  const AlgoChoice small{AlgoId::kRing, std::nullopt, 128 * 1024};
  const AlgoChoice large{AlgoId::kRing, std::nullopt, 2 << 20};
  const AlgoChoice tree{AlgoId::kTree, std::nullopt, 128 * 1024};  // tree itself not timed
  const std::vector<bool> may = weft::tune::mayTakeRule(
      {ring, small, large, tree}, {{100, 104, 110}, {90, 95, 101}, {80, 85, 99}, {50, 60, 70}});
  // 128K overlaps the ring's 100-110 (its 101); 2M's slowest round, 99, is below 100.
  CHECK(may == std::vector<bool>{true, false, true, true});
}
