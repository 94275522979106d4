// Recursive-doubling all-gather: log2(p) exchange rounds over p = the largest power of two <= n
// virtual ranks; in round k partners swap the 2^k blocks each has gathered so far.
//
// Cost: log2(p) alpha + (p-1)/p S beta for n = p; otherwise the fold adds 2 alpha + S beta.
//
// A non-power-of-two n is folded as in the recursive-doubling all-reduce: of the first 2 rem
// ranks (rem = n - p), each even one hands its block to the odd one after it and gets all the
// others back at the end. Why a fold rather than exchanging, per round, the several runs of
// blocks a virtual rank would hold otherwise: with the fold, virtual rank v holds real blocks
// [start(v), start(v+1)) (two blocks for v < rem, one after), consecutive virtual ranks hold
// consecutive runs, and so every round is still one contiguous message each way, received in
// place in the output. Non-power-of-two counts that cannot afford the extra S beta have Bruck,
// which needs ceil(log2 n) rounds for any n.
#include "algos/algorithms.h"
#include "algos/ring_math.h"

namespace weft {
namespace {

class RecursiveDoublingGather {
 public:
  explicit RecursiveDoublingGather(AlgoContext& ctx)
      : ctx_(ctx),
        n_(ctx.nranks()),
        rank_(ctx.rank()),
        blockBytes_(ctx.blockBytes()),
        out_(static_cast<char*>(ctx.args().recv)),
        power_(ring::largestPowerOfTwoAtMost(n_)),
        rem_(n_ - power_) {}

  Status run() {
    if (rank_ < 2 * rem_ && rank_ % 2 == 0) return runFolded();
    const int v = rank_ < 2 * rem_ ? rank_ / 2 : rank_ - rem_;
    if (rank_ < 2 * rem_) WEFT_TRY(ctx_.wait(ctx_.recv(rank_ - 1, block(rank_ - 1), blockBytes_)));
    for (int mask = 1; mask < power_; mask *= 2) WEFT_TRY(swap(v, mask));
    if (rank_ < 2 * rem_) {
      // Everything but the folded rank's own block, which it already has.
      ctx_.send(rank_ - 1, block(0), (rank_ - 1) * blockBytes_);
      ctx_.send(rank_ - 1, block(rank_), (n_ - rank_) * blockBytes_);
    }
    return ctx_.waitAll();
  }

 private:
  char* block(int index) const { return out_ + index * blockBytes_; }
  // First real block held by virtual rank v (n for v = p).
  int start(int v) const { return v < rem_ ? 2 * v : v + rem_; }
  int realRank(int v) const { return ring::foldedRank(v, rem_); }

  // The aligned run of `mask` virtual ranks' blocks gathered so far, for the partner's.
  Status swap(int v, int mask) {
    const int partner = v ^ mask;
    const int mine = v & ~(mask - 1);
    const int theirs = partner & ~(mask - 1);
    const size_t first = ctx_.postedCount();
    ctx_.send(realRank(partner), block(start(mine)),
              (start(mine + mask) - start(mine)) * blockBytes_);
    ctx_.recv(realRank(partner), block(start(theirs)),
              (start(theirs + mask) - start(theirs)) * blockBytes_);
    return ctx_.waitPosted(first, ctx_.postedCount());
  }

  // An even rank among the first 2 rem: hand over the own block, get the rest back.
  Status runFolded() {
    ctx_.send(rank_ + 1, block(rank_), blockBytes_);
    ctx_.recv(rank_ + 1, block(0), rank_ * blockBytes_);
    ctx_.recv(rank_ + 1, block(rank_ + 1), (n_ - rank_ - 1) * blockBytes_);
    return ctx_.waitAll();
  }

  AlgoContext& ctx_;
  const int n_;
  const int rank_;
  const size_t blockBytes_;
  char* out_;
  const int power_;
  const int rem_;
};

}  // namespace

Status allgatherRecursiveDoubling(AlgoContext& ctx) {
  const CollArgs& args = ctx.args();
  const size_t blockBytes = ctx.blockBytes();
  copyUnlessSame(static_cast<char*>(args.recv) + ctx.rank() * blockBytes, args.send, blockBytes);
  // Every rank has the same count, so all agree to send nothing.
  if (ctx.nranks() == 1 || blockBytes == 0) return Status::ok();
  return RecursiveDoublingGather(ctx).run();
}

}  // namespace weft
