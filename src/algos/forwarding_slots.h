// Staging for pipelines that reduce a received slice in the slot it arrived in and forward it
// from there (chain reduce, ring reduce-scatter). A slot is reused only once its forward has
// left. Slices are numbered across the whole operation, so that wait always points to an earlier
// slice and the pipeline cannot deadlock, however many steps it spans.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>

#include "algos/algo_context.h"

namespace weft {

class ForwardingSlots {
 public:
  static constexpr size_t kMaxDepth = 16;

  ForwardingSlots(AlgoContext& ctx, size_t sliceBytes)
      : ctx_(ctx),
        depth_(static_cast<size_t>(std::clamp(ctx.plan().depth, 1, static_cast<int>(kMaxDepth)))),
        sliceBytes_(sliceBytes),
        memory_(static_cast<char*>(ctx.scratch(depth_ * sliceBytes))) {}

  size_t depth() const { return depth_; }
  char* slot(size_t slice) const { return memory_ + (slice % depth_) * sliceBytes_; }

  // Receives slice `slice` (of `bytes`) from `peer` into its slot, once the slot is free.
  Status receive(size_t slice, int peer, size_t bytes) {
    Xfer*& pending = forwarded_[slice % depth_];
    if (pending != nullptr) {
      Status sent = ctx_.wait(pending);
      pending = nullptr;
      WEFT_TRY(sent);
    }
    received_[slice % depth_] = ctx_.recv(peer, slot(slice), bytes);
    return Status::ok();
  }
  Status waitReceived(size_t slice) { return ctx_.wait(received_[slice % depth_]); }
  // Sends the slot's (reduced) contents on; the slot stays busy until that send has left.
  void forward(size_t slice, int peer, size_t bytes) {
    forwarded_[slice % depth_] = ctx_.send(peer, slot(slice), bytes);
  }

 private:
  AlgoContext& ctx_;
  size_t depth_;
  size_t sliceBytes_;
  char* memory_;
  std::array<Xfer*, kMaxDepth> received_{};
  std::array<Xfer*, kMaxDepth> forwarded_{};
};

}  // namespace weft
