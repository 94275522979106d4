// Flow control of the rdma data path, kept free of verbs so that it can be tested on its own:
// the staging-slot credits of each direction of a pair, and the send queue's occupancy under
// selective signalling. Counters are free-running 32-bit numbers compared by difference, so
// they wrap around without harm.
#pragma once

#include <cstdint>

namespace weft::rdma {

// The sender's view of the peer's staging ring: a slot may be written only while fewer than
// `slots` writes are unacknowledged, so a sender never overruns its receiver.
class SlotCredits {
 public:
  explicit SlotCredits(uint32_t slots, uint32_t start = 0)
      : slots_(slots), written_(start), returned_(start) {}
  bool available() const { return written_ - returned_ < slots_; }
  uint32_t nextSlot() const { return written_ % slots_; }
  void wrote() { ++written_; }
  uint32_t inFlight() const { return written_ - returned_; }
  // False (and nothing changes) when the peer returns more than is in flight: a protocol error.
  bool returned(uint32_t count) {
    if (count > inFlight()) return false;
    returned_ += count;
    return true;
  }

 private:
  uint32_t slots_;
  uint32_t written_;
  uint32_t returned_;
};

// The receiver's view of its own staging ring for one peer: which slots arrived, which were
// consumed, and when to send the consumed ones back as credits. Returning them once half the
// ring is consumed can never stall the sender: while it waits, at least half the ring is
// consumed and unreturned, which triggers the return.
class SlotArrivals {
 public:
  explicit SlotArrivals(uint32_t slots, uint32_t start = 0)
      : slots_(slots), arrived_(start), consumed_(start), returned_(start) {}
  // The immediate of an arriving write names its slot; anything but the next one in order is a
  // protocol error (false).
  bool arrive(uint32_t slot) {
    if (slot != arrived_ % slots_ || arrived_ - returned_ >= slots_) return false;
    ++arrived_;
    return true;
  }
  bool pending() const { return arrived_ != consumed_; }
  uint32_t frontSlot() const { return consumed_ % slots_; }
  void consume() { ++consumed_; }
  // Slots to hand back now (0: not yet); the caller sends them and calls sentCredits().
  uint32_t creditsDue() const {
    uint32_t unreturned = consumed_ - returned_;
    return unreturned * 2 >= slots_ ? unreturned : 0;
  }
  uint32_t unreturned() const { return consumed_ - returned_; }
  void sentCredits(uint32_t count) { returned_ += count; }

 private:
  uint32_t slots_;
  uint32_t arrived_;
  uint32_t consumed_;
  uint32_t returned_;
};

// A queue pair's send queue with selective signalling: an unsignalled work request keeps its
// slot until a later signalled one completes, so the window signals every `depth / 4` requests
// and refuses to post beyond `depth` unretired ones.
class SendWindow {
 public:
  explicit SendWindow(uint32_t depth, uint32_t start = 0)
      : depth_(depth), posted_(start), retired_(start), lastSignalled_(start) {}
  bool room(uint32_t requests = 1) const { return depth_ - (posted_ - retired_) >= requests; }
  // Numbers the next request and says whether it must be signalled (`force`: the caller needs
  // its completion, e.g. the last write of a zero-copy send).
  uint32_t post(bool force, bool* signalled) {
    ++posted_;
    *signalled = force || posted_ - lastSignalled_ >= signalEvery();
    if (*signalled) lastSignalled_ = posted_;
    return posted_;
  }
  // A signalled request completed: it and everything posted before it left the queue. False
  // for a number that was never posted or is older than one already retired.
  bool completed(uint32_t request) {
    if (request - retired_ > posted_ - retired_) return false;
    retired_ = request;
    return true;
  }
  uint32_t outstanding() const { return posted_ - retired_; }
  uint32_t retired() const { return retired_; }

 private:
  uint32_t signalEvery() const { return depth_ / 4 > 0 ? depth_ / 4 : 1; }

  uint32_t depth_;
  uint32_t posted_;
  uint32_t retired_;
  uint32_t lastSignalled_;
};

}  // namespace weft::rdma
