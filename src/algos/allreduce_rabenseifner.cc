// Rabenseifner's all-reduce: a reduce-scatter by recursive halving, then an all-gather by
// recursive doubling, over p = the largest power of two <= n virtual ranks. Each step exchanges
// half of what the step before did, so the whole buffer crosses each rank's link about twice
// (like the ring) in 2 log2(p) steps (unlike the ring's 2(n-1)).
//
// Cost: 2 log2(p) alpha + 2 (p-1)/p S beta + (p-1)/p S gamma, plus for n != p the fold,
// 2 (alpha + S beta) + S gamma: of the first 2 rem ranks (rem = n - p), each even one hands its
// whole buffer to the odd one after it and receives the result at the end. Folding keeps every
// exchange a single contiguous message; the ranks left out are idle meanwhile.
//
// The halving's largest exchange goes to the partner at distance p/2; where ranks are numbered
// node by node that partner is on another node, so the Plan can ask for the nearest partner
// first (plan().nearestFirst): the algorithm then runs on bit-reversed virtual ranks, which
// turns distance 2^k into distance p/2^(k+1), and the network carries the smallest exchanges.
//
// Virtual rank v ends the reduce-scatter owning block v (ring::blockOf(count, p, v)), which it
// alone finishes for weftAvg; the all-gather copies that block everywhere, so every rank ends
// bit-identical. Blocks may be empty (count < p): both ends compute the same sizes and skip
// empty messages alike.
#include "algos/algorithms.h"
#include "algos/ring_math.h"

namespace weft {
namespace {

class Rabenseifner {
 public:
  explicit Rabenseifner(AlgoContext& ctx)
      : ctx_(ctx),
        rank_(ctx.rank()),
        count_(ctx.args().count),
        typeSize_(ctx.typeSize()),
        in_(static_cast<const char*>(ctx.args().send)),
        out_(static_cast<char*>(ctx.args().recv)),
        power_(ring::largestPowerOfTwoAtMost(ctx.nranks())),
        rem_(ctx.nranks() - power_),
        reversed_(ctx.plan().nearestFirst),
        incoming_(static_cast<char*>(ctx.scratch(count_ * typeSize_))) {}

  Status run() {
    int virtualRank = -1;
    WEFT_TRY(fold(&virtualRank));
    if (virtualRank >= 0) {
      const int v = relabel(virtualRank);
      WEFT_TRY(reduceScatter(v));
      const ring::Range own = blocks(v, v + 1);
      ctx_.finish(at(own), own.count);
      WEFT_TRY(allGather(v));
    }
    return unfold();
  }

 private:
  int realRank(int virtualRank) const { return ring::foldedRank(virtualRank, rem_); }
  // Bit reversal over log2(p) bits when the nearest partners go first; an involution.
  int relabel(int virtualRank) const {
    if (!reversed_) return virtualRank;
    int reversed = 0;
    for (int bit = 1, mirror = power_ / 2; bit < power_; bit <<= 1, mirror >>= 1) {
      if (virtualRank & bit) reversed |= mirror;
    }
    return reversed;
  }
  int peerOf(int label) const { return realRank(relabel(label)); }
  // Elements of blocks [first, last) of the p blocks (contiguous).
  ring::Range blocks(int first, int last) const {
    const size_t begin = ring::blockOf(count_, power_, first).offset;
    return ring::Range{begin, ring::blockOf(count_, power_, last).offset - begin};
  }
  char* at(const ring::Range& range) const { return out_ + range.offset * typeSize_; }
  size_t bytes(const ring::Range& range) const { return range.count * typeSize_; }

  // After the fold the running sums are in the output, except on ranks that have not reduced
  // anything yet, whose first halving step reads the input directly (saving a copy).
  Status fold(int* virtualRank) {
    const size_t all = count_ * typeSize_;
    if (rank_ >= 2 * rem_) {
      *virtualRank = rank_ - rem_;
      return Status::ok();
    }
    if (rank_ % 2 == 0) return ctx_.exchange(rank_ + 1, in_, all, nullptr, 0);
    WEFT_TRY(ctx_.exchange(rank_ - 1, nullptr, 0, incoming_, all));
    ctx_.reduce(out_, incoming_, in_, count_);  // (lower rank, higher rank), as everywhere
    reduced_ = true;
    *virtualRank = rank_ / 2;
    return Status::ok();
  }

  // Halving: at each step keep the half of the current blocks that holds block v, hand the
  // other half to the partner, and add the partner's copy of the kept half.
  Status reduceScatter(int v) {
    int first = 0;
    for (int mask = power_ / 2; mask >= 1; mask /= 2) {
      const int partner = v ^ mask;
      const int keepFirst = (v & mask) != 0 ? first + mask : first;
      const int giveFirst = (v & mask) != 0 ? first : first + mask;
      const ring::Range keep = blocks(keepFirst, keepFirst + mask);
      const ring::Range give = blocks(giveFirst, giveFirst + mask);
      const char* source = reduced_ ? out_ : in_;
      WEFT_TRY(ctx_.exchange(peerOf(partner), source + give.offset * typeSize_, bytes(give),
                             incoming_, bytes(keep)));
      const char* mine = source + keep.offset * typeSize_;
      // Partners combine (lower, higher) alike, so the result does not depend on who reduced.
      if (v < partner) {
        ctx_.reduce(at(keep), mine, incoming_, keep.count);
      } else {
        ctx_.reduce(at(keep), incoming_, mine, keep.count);
      }
      reduced_ = true;
      first = keepFirst;
    }
    return Status::ok();
  }

  // Doubling: the aligned run of `mask` blocks held so far is swapped for the partner's.
  Status allGather(int v) {
    for (int mask = 1; mask < power_; mask *= 2) {
      const int partner = v ^ mask;
      const int mineFirst = v & ~(mask - 1);
      const int theirsFirst = partner & ~(mask - 1);
      const ring::Range mine = blocks(mineFirst, mineFirst + mask);
      const ring::Range theirs = blocks(theirsFirst, theirsFirst + mask);
      WEFT_TRY(ctx_.exchange(peerOf(partner), at(mine), bytes(mine), at(theirs), bytes(theirs)));
    }
    return Status::ok();
  }

  Status unfold() {
    if (rank_ >= 2 * rem_) return Status::ok();
    const size_t all = count_ * typeSize_;
    if (rank_ % 2 == 1) return ctx_.exchange(rank_ - 1, out_, all, nullptr, 0);
    return ctx_.exchange(rank_ + 1, nullptr, 0, out_, all);
  }

  AlgoContext& ctx_;
  const int rank_;
  const size_t count_;
  const size_t typeSize_;
  const char* in_;
  char* out_;
  const int power_;
  const int rem_;
  const bool reversed_;
  char* incoming_;
  bool reduced_ = false;  // whether this rank's running sums are in out_ yet
};

}  // namespace

Status allreduceRabenseifner(AlgoContext& ctx) {
  if (ctx.nranks() == 1) {
    copyUnlessSame(ctx.args().recv, ctx.args().send, ctx.blockBytes());
    ctx.finish(ctx.args().recv, ctx.args().count);
    return Status::ok();
  }
  return Rabenseifner(ctx).run();
}

}  // namespace weft
