// Reduce-scatter by recursive halving: log2(p) steps over p = the largest power of two <= n
// virtual ranks, each step handing the partner half of what is still being reduced and adding
// the partner's copy of the half that is kept. Where the ring takes n-1 dependent steps, this
// takes log2(p) (+2 for n != p), so it is the choice for small and mid-size blocks.
//
// Cost: log2(p) alpha + (p-1)/p S beta + (p-1)/p S gamma (S: the whole input, n blocks), plus
// for n != p the fold, alpha + S beta + S gamma before and alpha + S/n beta after: of the first
// 2 rem ranks (rem = n - p), each even one hands its whole input to the odd one after it, which
// reduces for both and returns the even one's block at the end.
//
// The partner at distance p/2 goes first, which keeps every kept half contiguous: virtual rank
// v owns the blocks of the real ranks behind it (two blocks for a rank that folded its
// neighbour in, one otherwise), and those runs lie in rank order. Blocks may be empty (count 0):
// both ends compute the same sizes and skip empty messages alike.
#include <algorithm>

#include "algos/algorithms.h"
#include "algos/ring_math.h"

namespace weft {
namespace {

class RecursiveHalving {
 public:
  explicit RecursiveHalving(AlgoContext& ctx)
      : ctx_(ctx),
        rank_(ctx.rank()),
        nranks_(ctx.nranks()),
        count_(ctx.args().count),
        typeSize_(ctx.typeSize()),
        in_(static_cast<const char*>(ctx.args().send)),
        out_(static_cast<char*>(ctx.args().recv)),
        power_(ring::largestPowerOfTwoAtMost(ctx.nranks())),
        rem_(ctx.nranks() - power_) {
    const size_t all = allBytes();
    // Running sums for every block, then what a partner sends (at most the whole input, in
    // the fold).
    work_ = static_cast<char*>(ctx.scratch(2 * all));
    incoming_ = work_ + all;
  }

  Status run() {
    int virtualRank = -1;
    WEFT_TRY(fold(&virtualRank));
    if (virtualRank < 0) return Status::ok();  // an even folded rank already has its block
    WEFT_TRY(halve(virtualRank));
    return deliver(virtualRank);
  }

 private:
  size_t allBytes() const { return static_cast<size_t>(nranks_) * count_ * typeSize_; }
  // The first real block of virtual rank v (v = p gives n: the end).
  int firstBlock(int v) const { return v < rem_ ? 2 * v : v + rem_; }
  // Bytes from the start of the input to virtual rank v's first block.
  size_t offsetOf(int v) const { return static_cast<size_t>(firstBlock(v)) * count_ * typeSize_; }
  size_t blockBytes() const { return count_ * typeSize_; }

  // The first 2 rem ranks pair up: the even one hands its whole input over and gets its
  // finished block back at the end; the odd one goes on as virtual rank rank/2.
  Status fold(int* virtualRank) {
    if (rank_ >= 2 * rem_) {
      *virtualRank = rank_ - rem_;
      return Status::ok();
    }
    if (rank_ % 2 == 0) {
      // In place the output lies inside the input: the input must have left first.
      WEFT_TRY(ctx_.exchange(rank_ + 1, in_, allBytes(), nullptr, 0));
      return ctx_.exchange(rank_ + 1, nullptr, 0, out_, blockBytes());
    }
    WEFT_TRY(ctx_.exchange(rank_ - 1, nullptr, 0, incoming_, allBytes()));
    ctx_.reduce(work_, incoming_, in_, nranks_ * count_);  // (lower rank, higher rank)
    reduced_ = true;
    *virtualRank = rank_ / 2;
    return Status::ok();
  }

  // Virtual ranks [first, first + 2 mask) share the blocks being reduced; v keeps the half of
  // them that holds its own and hands the other half to its partner v ^ mask.
  Status halve(int v) {
    int first = 0;
    for (int mask = power_ / 2; mask >= 1; mask /= 2) {
      const int partner = v ^ mask;
      const int keepFirst = (v & mask) != 0 ? first + mask : first;
      const int giveFirst = (v & mask) != 0 ? first : first + mask;
      const size_t keepOffset = offsetOf(keepFirst);
      const size_t keepBytes = offsetOf(keepFirst + mask) - keepOffset;
      const size_t giveOffset = offsetOf(giveFirst);
      const size_t giveBytes = offsetOf(giveFirst + mask) - giveOffset;
      const char* source = reduced_ ? work_ : in_;
      WEFT_TRY(ctx_.exchange(ring::foldedRank(partner, rem_), source + giveOffset, giveBytes,
                             incoming_, keepBytes));
      const char* mine = source + keepOffset;
      const size_t elements = keepBytes / typeSize_;
      // Partners combine (lower, higher) alike, as the other reducing algorithms do.
      if (v < partner) {
        ctx_.reduce(work_ + keepOffset, mine, incoming_, elements);
      } else {
        ctx_.reduce(work_ + keepOffset, incoming_, mine, elements);
      }
      reduced_ = true;
      first = keepFirst;
    }
    return Status::ok();
  }

  // The reduced blocks of v's real ranks are in the work area: this rank's goes to the output,
  // a folded neighbour's back to it.
  Status deliver(int v) {
    char* own = work_ + static_cast<size_t>(rank_) * blockBytes();
    ctx_.finish(own, count_);
    copyUnlessSame(out_, own, blockBytes());
    if (v >= rem_) return Status::ok();
    char* neighbours = own - blockBytes();
    ctx_.finish(neighbours, count_);
    return ctx_.exchange(rank_ - 1, neighbours, blockBytes(), nullptr, 0);
  }

  AlgoContext& ctx_;
  const int rank_;
  const int nranks_;
  const size_t count_;
  const size_t typeSize_;
  const char* in_;
  char* out_;
  const int power_;
  const int rem_;
  char* work_ = nullptr;
  char* incoming_ = nullptr;
  bool reduced_ = false;  // whether this rank's running sums are in work_ yet
};

}  // namespace

Status reduceScatterRecursiveHalving(AlgoContext& ctx) {
  if (ctx.nranks() == 1) {
    copyUnlessSame(ctx.args().recv, ctx.args().send, ctx.blockBytes());
    ctx.finish(ctx.args().recv, ctx.args().count);
    return Status::ok();
  }
  return RecursiveHalving(ctx).run();
}

}  // namespace weft
