// The double binary tree's shape (NCCL's construction), pure arithmetic so it is unit-tested
// without I/O.
//
// Tree 0 is the in-order binary tree over positions v = rank + 1: the root is the largest power
// of two <= n, and a node whose lowest set bit is b > 1 has children v - b/2 and v + b/2. A right
// child beyond n is replaced by its left child, repeatedly, until it fits (or there is none), so
// the tree is never deeper than floor(log2 n) edges. Odd positions are exactly its leaves.
//
// Tree 1 is the same shape over another numbering: mirrored (v = n - rank) for even n, shifted
// by one (v = rank, with rank 0 at v = n) for odd n. Either way the ranks at odd positions in
// tree 0 (the leaves) land on even positions (interior) in tree 1 and vice versa, so no rank is
// interior in both trees and, except rank 0 for odd n, every rank is interior in exactly one.
// Each rank therefore forwards for one tree only, which is what balances the two halves' work.
#pragma once

namespace weft::tree {

struct Node {
  int parent = -1;  // -1 at the root
  int children[2] = {-1, -1};
  int childCount = 0;  // the valid entries of children come first
};

inline int lowestBit(int v) {
  return v & -v;
}

// 1-based position of `rank` in tree `which` (0 or 1) over n ranks, and its inverse.
inline int positionOf(int rank, int n, int which) {
  if (which == 0) return rank + 1;
  return n % 2 == 0 ? n - rank : (rank == 0 ? n : rank);
}
inline int rankAt(int position, int n, int which) {
  if (which == 0) return position - 1;
  return n % 2 == 0 ? n - position : position % n;
}

inline int rootPosition(int n) {
  int power = 1;
  while (power * 2 <= n) power *= 2;
  return power;
}

// Parent in the unbounded in-order tree: v = k*b with k odd is the left child of v + b when
// k = 1 mod 4 and the right child of v - b when k = 3 mod 4.
inline int unboundedParent(int v) {
  int b = lowestBit(v);
  return (v & (2 * b)) != 0 ? v - b : v + b;
}

// Positions beyond n are skipped on the way up: such a node was a right child that got replaced
// by its chain of left descendants, so v hangs off the first ancestor that exists.
inline int parentPosition(int v, int n) {
  if (v == rootPosition(n)) return 0;
  int p = unboundedParent(v);
  while (p > n) p = unboundedParent(p);
  return p;
}

// 0 where there is none.
inline int leftChildPosition(int v) {
  int b = lowestBit(v);
  return b > 1 ? v - b / 2 : 0;
}
inline int rightChildPosition(int v, int n) {
  int b = lowestBit(v);
  if (b == 1) return 0;
  int c = v + b / 2;
  while (c > n) {
    c = leftChildPosition(c);
    if (c == 0) return 0;
  }
  return c;
}

inline Node nodeOf(int rank, int n, int which) {
  Node node;
  const int v = positionOf(rank, n, which);
  const int p = parentPosition(v, n);
  node.parent = p == 0 ? -1 : rankAt(p, n, which);
  for (int c : {leftChildPosition(v), rightChildPosition(v, n)}) {
    if (c != 0) node.children[node.childCount++] = rankAt(c, n, which);
  }
  return node;
}

inline int rootRank(int n, int which) {
  return rankAt(rootPosition(n), n, which);
}

// Edges from the root.
inline int depthOf(int rank, int n, int which) {
  int depth = 0;
  for (int v = positionOf(rank, n, which); v != rootPosition(n); v = parentPosition(v, n)) {
    ++depth;
  }
  return depth;
}

// Largest depth of any rank (the same for both trees, which share a shape).
inline int heightOf(int n) {
  int height = 0;
  for (int rank = 0; rank < n; ++rank) {
    int depth = depthOf(rank, n, 0);
    if (depth > height) height = depth;
  }
  return height;
}

}  // namespace weft::tree
