// Pure index arithmetic shared by the algorithms: how a buffer is cut into blocks and slices,
// and which block a ring rank handles at each step. No I/O, so it is unit-tested directly.
#pragma once

#include <algorithm>
#include <cstddef>

namespace weft::ring {

struct Range {
  size_t offset = 0;  // in elements
  size_t count = 0;
};

inline int mod(int value, int n) {
  return ((value % n) + n) % n;
}

// Splits `count` elements into n blocks whose sizes differ by at most one (the first
// count % n blocks get the extra element) and returns block i.
inline Range blockOf(size_t count, int n, int i) {
  size_t base = count / n;
  size_t extra = count % n;
  size_t index = static_cast<size_t>(i);
  size_t offset = index * base + std::min(index, extra);
  return Range{offset, base + (index < extra ? 1 : 0)};
}

// Number of slices of at most sliceElems elements that cover `count` (0 for an empty range).
inline size_t sliceCount(size_t count, size_t sliceElems) {
  return (count + sliceElems - 1) / sliceElems;
}

// Slice j of a range cut into pieces of sliceElems elements.
inline Range sliceOf(const Range& range, size_t sliceElems, size_t j) {
  size_t offset = j * sliceElems;
  return Range{range.offset + offset, std::min(sliceElems, range.count - offset)};
}

// Ring all-reduce over 2(n-1) steps: reduce-scatter for t < n-1, then all-gather.
// At step t a rank receives block recvBlock(t) from its left neighbour; the block it sends at
// step t is the one it received at step t-1 (and its own block at step 0).
inline int allreduceRecvBlock(int rank, int n, int step) {
  return step < n - 1 ? mod(rank - step - 1, n) : mod(rank - (step - (n - 1)), n);
}
inline int allreduceSendBlock(int rank, int n, int step) {
  return step == 0 ? rank : allreduceRecvBlock(rank, n, step - 1);
}

// Ring reduce-scatter in which rank r ends up owning block r: at step s (0..n-2) it receives
// block (r - s - 2) and sends block (r - s - 1).
inline int reduceScatterRecvBlock(int rank, int n, int step) {
  return mod(rank - step - 2, n);
}
inline int reduceScatterSendBlock(int rank, int n, int step) {
  return mod(rank - step - 1, n);
}

// Ring all-gather: at step s (0..n-2) a rank sends block (r - s) and receives block (r - s - 1).
inline int allgatherRecvBlock(int rank, int n, int step) {
  return mod(rank - step - 1, n);
}
inline int allgatherSendBlock(int rank, int n, int step) {
  return mod(rank - step, n);
}

// The recursive-doubling family runs on p = the largest power of two <= n virtual ranks. The
// n - p extra ranks fold first: of the first 2(n - p) ranks each even one hands its data to the
// odd one after it, which then stands for both.
inline int largestPowerOfTwoAtMost(int n) {
  int power = 1;
  while (power * 2 <= n) power *= 2;
  return power;
}
// The rank behind virtual rank v when `rem` = n - p ranks folded away.
inline int foldedRank(int virtualRank, int rem) {
  return virtualRank < rem ? 2 * virtualRank + 1 : virtualRank + rem;
}

// Elements per pipelining slice for a Plan's slice size (at least one element).
inline size_t sliceElements(size_t sliceBytes, size_t typeSize) {
  return std::max<size_t>(1, sliceBytes / typeSize);
}

}  // namespace weft::ring
