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
