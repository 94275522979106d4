// The ring schedules' index arithmetic: blocks tile the buffer, every rank receives every block
// it needs exactly once, and each step forwards what the previous step received.
#include <catch2/catch.hpp>

#include <set>

#include "algos/ring_math.h"

namespace weft::ring {

TEST_CASE("blocks tile the buffer with sizes differing by at most one", "[ring]") {
  for (size_t count : {0, 1, 2, 7, 8, 9, 1000, 1001}) {
    for (int n = 1; n <= 9; ++n) {
      size_t next = 0, smallest = SIZE_MAX, largest = 0;
      for (int i = 0; i < n; ++i) {
        Range block = blockOf(count, n, i);
        CHECK(block.offset == next);
        next += block.count;
        smallest = std::min(smallest, block.count);
        largest = std::max(largest, block.count);
      }
      CHECK(next == count);
      CHECK(largest - smallest <= 1);
    }
  }
}

TEST_CASE("slices cover a range exactly", "[ring]") {
  Range range{100, 1001};
  for (size_t sliceElems : {1, 7, 1000, 1001, 5000}) {
    size_t slices = sliceCount(range.count, sliceElems);
    size_t covered = 0;
    for (size_t j = 0; j < slices; ++j) {
      Range piece = sliceOf(range, sliceElems, j);
      CHECK(piece.offset == range.offset + covered);
      CHECK(piece.count > 0);
      covered += piece.count;
    }
    CHECK(covered == range.count);
  }
  CHECK(sliceCount(0, 16) == 0);
  CHECK(sliceElements(10, 4) == 2);
  CHECK(sliceElements(3, 8) == 1);
}

TEST_CASE("ring all-reduce: each rank reduces n-1 blocks then gathers the rest", "[ring]") {
  for (int n = 2; n <= 8; ++n) {
    for (int rank = 0; rank < n; ++rank) {
      const int left = mod(rank - 1, n);
      std::set<int> reduced, gathered;
      for (int step = 0; step < 2 * (n - 1); ++step) {
        int block = allreduceRecvBlock(rank, n, step);
        // What arrives from the left is what the left neighbour sends at the same step.
        CHECK(block == allreduceSendBlock(left, n, step));
        (step < n - 1 ? reduced : gathered).insert(block);
      }
      CHECK(reduced.size() == static_cast<size_t>(n - 1));
      CHECK(reduced.count(rank) == 0);
      CHECK(gathered.size() == static_cast<size_t>(n - 1));
      // The block finished last in the reduce-scatter is the one never gathered.
      CHECK(gathered.count(allreduceRecvBlock(rank, n, n - 2)) == 0);
    }
  }
}

TEST_CASE("ring reduce-scatter ends with rank r owning block r", "[ring]") {
  for (int n = 2; n <= 8; ++n) {
    for (int rank = 0; rank < n; ++rank) {
      const int left = mod(rank - 1, n);
      for (int step = 0; step < n - 1; ++step) {
        CHECK(reduceScatterRecvBlock(rank, n, step) == reduceScatterSendBlock(left, n, step));
        if (step > 0) {
          CHECK(reduceScatterSendBlock(rank, n, step) == reduceScatterRecvBlock(rank, n, step - 1));
        }
      }
      CHECK(reduceScatterRecvBlock(rank, n, n - 2) == rank);
    }
  }
}

TEST_CASE("ring all-gather delivers every other rank's block once", "[ring]") {
  for (int n = 2; n <= 8; ++n) {
    for (int rank = 0; rank < n; ++rank) {
      std::set<int> received;
      for (int step = 0; step < n - 1; ++step) {
        CHECK(allgatherRecvBlock(rank, n, step) == allgatherSendBlock(mod(rank - 1, n), n, step));
        received.insert(allgatherRecvBlock(rank, n, step));
      }
      CHECK(received.size() == static_cast<size_t>(n - 1));
      CHECK(received.count(rank) == 0);
    }
  }
}

}  // namespace weft::ring
