// The double binary tree's shape: both trees are trees (one parent each, relations agree, all
// ranks reachable from the root), shallow, and complementary (a rank forwards in one at most).
#include <catch2/catch.hpp>

#include <vector>

#include "algos/tree_math.h"

namespace weft::tree {
namespace {

int floorLog2(int n) {
  int log = 0;
  while ((2 << log) <= n) ++log;
  return log;
}

bool isLeaf(int rank, int n, int which) {
  return nodeOf(rank, n, which).childCount == 0;
}

}  // namespace

TEST_CASE("positions and ranks are inverse permutations", "[tree]") {
  for (int n = 1; n <= 64; ++n) {
    for (int which = 0; which < 2; ++which) {
      std::vector<int> seen(n + 1, 0);
      for (int rank = 0; rank < n; ++rank) {
        int v = positionOf(rank, n, which);
        REQUIRE(v >= 1);
        REQUIRE(v <= n);
        ++seen[v];
        CHECK(rankAt(v, n, which) == rank);
      }
      for (int v = 1; v <= n; ++v) CHECK(seen[v] == 1);
    }
  }
}

TEST_CASE("each of the two trees is a tree of height at most floor(log2 n)", "[tree]") {
  for (int n = 1; n <= 64; ++n) {
    for (int which = 0; which < 2; ++which) {
      CAPTURE(n, which);
      const int root = rootRank(n, which);
      std::vector<int> parentsClaimed(n, 0);
      for (int rank = 0; rank < n; ++rank) {
        Node node = nodeOf(rank, n, which);
        CHECK((node.parent < 0) == (rank == root));
        CHECK(node.childCount <= 2);
        for (int c = 0; c < node.childCount; ++c) {
          const int child = node.children[c];
          REQUIRE(child >= 0);
          REQUIRE(child < n);
          CHECK(nodeOf(child, n, which).parent == rank);
          ++parentsClaimed[child];
        }
        if (node.parent >= 0) {
          Node parent = nodeOf(node.parent, n, which);
          int matches = 0;
          for (int c = 0; c < parent.childCount; ++c) matches += parent.children[c] == rank;
          CHECK(matches == 1);
          CHECK(depthOf(rank, n, which) == depthOf(node.parent, n, which) + 1);
        }
      }
      for (int rank = 0; rank < n; ++rank) CHECK(parentsClaimed[rank] == (rank == root ? 0 : 1));

      // Everything is reachable from the root, each rank once.
      std::vector<int> reached(n, 0);
      std::vector<int> frontier{root};
      int deepest = 0;
      while (!frontier.empty()) {
        int rank = frontier.back();
        frontier.pop_back();
        ++reached[rank];
        deepest = std::max(deepest, depthOf(rank, n, which));
        Node node = nodeOf(rank, n, which);
        for (int c = 0; c < node.childCount; ++c) frontier.push_back(node.children[c]);
      }
      for (int rank = 0; rank < n; ++rank) CHECK(reached[rank] == 1);
      CHECK(deepest == heightOf(n));
      CHECK(heightOf(n) <= floorLog2(n));
    }
  }
}

TEST_CASE("the two trees have different roots and complementary interiors", "[tree]") {
  for (int n = 2; n <= 64; ++n) {
    CAPTURE(n);
    CHECK(rootRank(n, 0) != rootRank(n, 1));
    for (int rank = 0; rank < n; ++rank) {
      CAPTURE(rank);
      const bool leaf0 = isLeaf(rank, n, 0);
      const bool leaf1 = isLeaf(rank, n, 1);
      // No rank forwards in both trees...
      CHECK((leaf0 || leaf1));
      // ...and every rank forwards in one, except rank 0 for odd n: the shift puts it at
      // position n, odd, so it is a leaf in both.
      if (n % 2 == 0 || rank != 0) {
        CHECK(leaf0 != leaf1);
      } else {
        CHECK((leaf0 && leaf1));
      }
    }
  }
}

TEST_CASE("small trees match the in-order construction", "[tree]") {
  // n = 6, tree 0 over positions 1..6: 4 is the root with children 2 and 6, 6 has child 5.
  Node root = nodeOf(3, 6, 0);
  CHECK(root.parent == -1);
  REQUIRE(root.childCount == 2);
  CHECK(root.children[0] == 1);
  CHECK(root.children[1] == 5);
  Node six = nodeOf(5, 6, 0);
  REQUIRE(six.childCount == 1);
  CHECK(six.children[0] == 4);
  // n = 5: 4's right child 6 does not exist, so its left child 5 takes its place.
  Node four = nodeOf(3, 5, 0);
  REQUIRE(four.childCount == 2);
  CHECK(four.children[1] == 4);
  CHECK(nodeOf(4, 5, 0).parent == 3);
  // Tree 1 mirrors for even n: rank r sits where rank n-1-r sits in tree 0.
  CHECK(rootRank(6, 1) == 2);
}

}  // namespace weft::tree
