// Where the device buffers of an operation are staged in pinned host memory, and the host form
// of its calls that the host algorithms run on (device_op.h).
#pragma once

#include <algorithm>
#include <vector>

#include "base/call.h"
#include "core/executor.h"

namespace weft::device {

// Where each device range of an operation lies in the staging memory. Ranges of one call that
// overlap (in-place calls) share one staged range, so the algorithms see the same aliasing.
class StagingPlan {
 public:
  StagingPlan(const Op& op, int nranks, int rank) {
    for (const CollArgs& call : op.calls()) {
      CollArgs staged = call;
      if (call.deviceBuffers) stage(call, nranks, rank, &staged);
      hostCalls_.push_back(staged);
    }
  }

  size_t bytes() const { return bytes_; }
  bool empty() const { return ranges_.empty(); }

  // The host form of op's calls, once the staging memory is at `base`.
  Op hostOp(const Op& op, char* base) const {
    Op host;
    std::vector<CollArgs> calls = hostCalls_;
    for (CollArgs& call : calls) {
      if (!call.deviceBuffers) continue;
      call.send = relocate(call.send, base);
      call.recv = const_cast<void*>(relocate(call.recv, base));
      call.deviceBuffers = false;
    }
    if (op.group.empty()) {
      host.single = calls.front();
    } else {
      host.group = std::move(calls);
    }
    return host;
  }

  struct Copy {
    const char* device;
    size_t bytes;
  };
  const std::vector<Copy>& copiesIn() const { return copiesIn_; }
  const std::vector<Copy>& copiesOut() const { return copiesOut_; }
  // The staged address of a device address inside a staged range.
  char* staged(const void* device, char* base) const {
    return const_cast<char*>(static_cast<const char*>(relocate(device, base)));
  }

 private:
  struct Range {
    const char* device;
    size_t bytes;
    size_t offset;  // in the staging memory
  };

  void stage(const CollArgs& call, int nranks, int rank, CollArgs* staged) {
    const CallExtents extents = callExtents(call, nranks, rank);
    const char* send = static_cast<const char*>(call.send);
    const char* recv = static_cast<const char*>(call.recv);
    const bool sends = extents.sendBytes > 0;
    const bool receives = extents.recvBytes > 0;
    if (sends && receives && send < recv + extents.recvBytes && recv < send + extents.sendBytes) {
      const char* low = std::min(send, recv);
      const char* high = std::max(send + extents.sendBytes, recv + extents.recvBytes);
      addRange(low, static_cast<size_t>(high - low));
      copiesIn_.push_back({low, static_cast<size_t>(high - low)});
      copiesOut_.push_back({recv, extents.recvBytes});
      return;
    }
    if (sends) {
      addRange(send, extents.sendBytes);
      copiesIn_.push_back({send, extents.sendBytes});
    }
    if (receives) {
      addRange(recv, extents.recvBytes);
      copiesOut_.push_back({recv, extents.recvBytes});
    }
    // A buffer the call does not use on this rank is never read; one that names the other
    // buffer keeps doing so, so that an algorithm's in-place test still holds.
    if (!sends) staged->send = send == recv ? call.recv : nullptr;
    if (!receives) staged->recv = recv == send ? const_cast<void*>(call.send) : nullptr;
  }

  void addRange(const char* device, size_t bytes) {
    constexpr size_t kAlign = 256;
    ranges_.push_back({device, bytes, bytes_});
    bytes_ += (bytes + kAlign - 1) / kAlign * kAlign;
  }

  const void* relocate(const void* device, char* base) const {
    if (device == nullptr) return nullptr;
    const char* address = static_cast<const char*>(device);
    for (const Range& range : ranges_) {
      if (address >= range.device && address < range.device + range.bytes) {
        return base + range.offset + (address - range.device);
      }
    }
    return device;  // a pointer staged as another call's buffer is not relocated twice
  }

  std::vector<CollArgs> hostCalls_;
  std::vector<Range> ranges_;
  std::vector<Copy> copiesIn_;
  std::vector<Copy> copiesOut_;
  size_t bytes_ = 0;
};

}  // namespace weft::device
