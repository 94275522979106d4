// Double binary tree all-reduce (NCCL's): the buffer is split in two halves and half t is
// reduced up binary tree t to its root, then broadcast back down the same tree. The two trees
// (tree_math.h) have different roots, and a rank that forwards in one is a leaf in the other, so
// every rank sends and receives about the same amount. Each half is cut into chunks of
// WEFT_SLICE_BYTES that are pipelined through the tree.
//
// Cost, with H = floor(log2 n) the height and C = S / (2 slice) chunks per half: C + 2H
// iterations, in each of which a rank sends and receives at most 4 slices (3 in the tree it is
// interior in, 1 in the other) and reduces 2,
//   (C + 2H) (alpha + slice (4 beta + 2 gamma)) = (C + 2H) alpha + 2 S beta + S gamma + O(H slice)
// Latency logarithmic in n where the ring's is linear, at the price of about n/(n-1) times the
// ring's traffic.
//
// Schedule. The iterations are numbered alike on every rank, and a rank at depth d of a tree of
// height H handles in iteration i the up step of chunk i - (H - d) (receive the children's
// partial sums, add its own, pass the result to its parent) and the down step of chunk
// i - (H + d) (take the result from its parent and pass it to its children). The root does both
// steps of a chunk in the same iteration. So whatever a rank waits for in iteration i was sent in
// iteration i - 1, and every link carries one chunk per iteration in each direction. (Doing
// up(i) and down(i - lag) for every rank alike would be simpler, but then each iteration waits
// for a round trip through the whole tree: 2H hops per chunk instead of one.)
//
// Messages between two ranks match in posting order, so both ends post in the order of the
// iteration the message is sent in, tree 0 before tree 1; receives are posted one iteration
// ahead, when the sender posts its sends. The result comes down into the very range whose partial
// sum went up, so that receive is posted only once the up send has completed.
#include <algorithm>
#include <array>
#include <vector>

#include "algos/algorithms.h"
#include "algos/ring_math.h"
#include "algos/tree_math.h"

namespace weft {
namespace {

// One of the two trees, as seen from this rank.
struct Side {
  tree::Node node;
  int depth = 0;
  ring::Range half;
  size_t chunks = 0;
  std::array<std::array<Xfer*, 2>, 2> upRecvs{};  // [parity of the posting iteration][child]
  std::array<Xfer*, 2> downRecvs{};               // [parity of the posting iteration]
  std::vector<Xfer*> upSends;                     // by chunk, modulo its size
};

class DoubleTree {
 public:
  explicit DoubleTree(AlgoContext& ctx)
      : ctx_(ctx),
        typeSize_(ctx.typeSize()),
        in_(static_cast<const char*>(ctx.args().send)),
        out_(static_cast<char*>(ctx.args().recv)),
        sliceElems_(ring::sliceElements(ctx.plan().sliceBytes, typeSize_)),
        height_(tree::heightOf(ctx.nranks())) {
    for (int t = 0; t < 2; ++t) {
      Side& side = sides_[t];
      side.node = tree::nodeOf(ctx.rank(), ctx.nranks(), t);
      side.depth = tree::depthOf(ctx.rank(), ctx.nranks(), t);
      side.half = ring::blockOf(ctx.args().count, 2, t);
      side.chunks = ring::sliceCount(side.half.count, sliceElems_);
      // An up send is awaited at most 2H - 1 iterations (chunks) after it was posted.
      side.upSends.assign(2 * height_ + 2, nullptr);
    }
    staging_ = static_cast<char*>(ctx.scratch(8 * sliceElems_ * typeSize_));
  }

  Status run() {
    long long iterations = 0;
    for (const Side& side : sides_) {
      if (side.chunks > 0) {
        iterations = std::max(iterations, static_cast<long long>(side.chunks) + 2 * height_);
      }
    }
    for (long long i = 0; i < iterations; ++i) {
      for (int t = 0; t < 2; ++t) WEFT_TRY(postReceives(t, i));
      for (int t = 0; t < 2; ++t) WEFT_TRY(process(t, i));
    }
    return ctx_.waitAll();
  }

 private:
  // Chunk `index` of a side, if it exists.
  static bool chunkAt(const Side& side, long long index, size_t* chunk) {
    if (index < 0 || index >= static_cast<long long>(side.chunks)) return false;
    *chunk = static_cast<size_t>(index);
    return true;
  }
  ring::Range rangeOf(const Side& side, size_t chunk) const {
    return ring::sliceOf(side.half, sliceElems_, chunk);
  }
  char* slot(long long iteration, int t, int child) const {
    return staging_ + ((iteration % 2) * 4 + t * 2 + child) * sliceElems_ * typeSize_;
  }

  // The receives for what the neighbours send in iteration i: children's partial sums of chunk
  // i - (H - d - 1) and the parent's result for chunk i - (H + d - 1).
  Status postReceives(int t, long long i) {
    Side& side = sides_[t];
    const int parity = static_cast<int>(i % 2);
    size_t chunk;
    if (chunkAt(side, i - (height_ - side.depth - 1), &chunk)) {
      const size_t bytes = rangeOf(side, chunk).count * typeSize_;
      for (int c = 0; c < side.node.childCount; ++c) {
        side.upRecvs[parity][c] = ctx_.recv(side.node.children[c], slot(i, t, c), bytes);
      }
    }
    if (side.node.parent >= 0 && chunkAt(side, i - (height_ + side.depth - 1), &chunk)) {
      WEFT_TRY(ctx_.wait(side.upSends[chunk % side.upSends.size()]));
      const ring::Range range = rangeOf(side, chunk);
      side.downRecvs[parity] =
          ctx_.recv(side.node.parent, out_ + range.offset * typeSize_, range.count * typeSize_);
    }
    return Status::ok();
  }

  Status process(int t, long long i) {
    const Side& side = sides_[t];
    size_t chunk;
    if (chunkAt(side, i - (height_ - side.depth), &chunk)) WEFT_TRY(up(t, chunk, i - 1));
    if (chunkAt(side, i - (height_ + side.depth), &chunk)) WEFT_TRY(down(t, chunk, i - 1));
    return Status::ok();
  }

  // Partial sums of chunk from the children (received into the slots of iteration `posted`),
  // plus this rank's input, go to the parent; at the root they are the result.
  Status up(int t, size_t chunk, long long posted) {
    Side& side = sides_[t];
    const ring::Range range = rangeOf(side, chunk);
    char* result = out_ + range.offset * typeSize_;
    const char* partial = in_ + range.offset * typeSize_;
    for (int c = 0; c < side.node.childCount; ++c) {
      WEFT_TRY(ctx_.wait(side.upRecvs[posted % 2][c]));
      ctx_.reduce(result, partial, slot(posted, t, c), range.count);
      partial = result;
    }
    if (side.node.parent < 0) {
      ctx_.finish(result, range.count);
    } else {
      // A leaf sends its input as it is, without copying it into the output first.
      side.upSends[chunk % side.upSends.size()] =
          ctx_.send(side.node.parent, partial, range.count * typeSize_);
    }
    return Status::ok();
  }

  // The result of chunk (from the parent, or just finished at the root) goes to the children.
  Status down(int t, size_t chunk, long long posted) {
    const Side& side = sides_[t];
    if (side.node.parent >= 0) WEFT_TRY(ctx_.wait(side.downRecvs[posted % 2]));
    const ring::Range range = rangeOf(side, chunk);
    for (int c = 0; c < side.node.childCount; ++c) {
      ctx_.send(side.node.children[c], out_ + range.offset * typeSize_, range.count * typeSize_);
    }
    return Status::ok();
  }

  AlgoContext& ctx_;
  const size_t typeSize_;
  const char* in_;
  char* out_;
  const size_t sliceElems_;
  const int height_;
  std::array<Side, 2> sides_;
  char* staging_ = nullptr;  // children's partial sums: [iteration parity][tree][child] slots
};

}  // namespace

Status allreduceTree(AlgoContext& ctx) {
  if (ctx.nranks() == 1) {
    copyUnlessSame(ctx.args().recv, ctx.args().send, ctx.blockBytes());
    ctx.finish(ctx.args().recv, ctx.args().count);
    return Status::ok();
  }
  return DoubleTree(ctx).run();
}

}  // namespace weft
