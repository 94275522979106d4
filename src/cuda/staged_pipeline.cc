#include "cuda/staged_pipeline.h"

#include <algorithm>
#include <string>

#include "reduce/reduce.h"

namespace weft::device {
namespace {

// A chunk of elements [first, first + count) of the call.
struct Chunk {
  size_t first;
  size_t count;
};

const void* offsetBy(const void* ptr, size_t bytes) {
  return ptr == nullptr ? nullptr : static_cast<const char*>(ptr) + bytes;
}

class Pipeline {
 public:
  Pipeline(DeviceScope& scope, const CollArgs& call, const CollArgs& host, const StagingPlan& plan,
           char* base, const CallExtents& extents)
      : scope_(scope), call_(call), host_(host), plan_(plan), base_(base), extents_(extents) {
    typeSize_ = typeSize(call.type);
    chunkElements_ = std::max<size_t>(1, tune::kStagingChunkBytes / typeSize_);
    chunks_ = (call.count + chunkElements_ - 1) / chunkElements_;
  }

  Status run(const HostRunner& runHost) {
    const std::string name = collName(call_.coll);
    // Two chunks in flight from the GPU ahead of the one being reduced.
    for (size_t k = 0; k < std::min<size_t>(2, chunks_); ++k) WEFT_TRY(copyIn(k));
    for (size_t k = 0; k < chunks_; ++k) {
      WEFT_TRY(scope_.waitMark(k % 2 + 1, name + ": copying chunk " + std::to_string(k) +
                                              " of the inputs from the GPU"));
      WEFT_TRY(runHost(Op::call(hostChunk(k))));
      WEFT_TRY(copyOut(k));
      if (k + 2 < chunks_) WEFT_TRY(copyIn(k + 2));
    }
    return scope_.finish(scope_.stream(), name + ": copying the results to the GPU");
  }

 private:
  Chunk chunk(size_t k) const {
    const size_t first = k * chunkElements_;
    return {first, std::min(chunkElements_, call_.count - first)};
  }

  // Queues chunk k's input copy, then marks it with event k % 2 + 1 (event 0 is finish()'s).
  Status copyIn(size_t k) {
    if (extents_.sendBytes > 0) {
      const Chunk c = chunk(k);
      const void* device = offsetBy(call_.send, c.first * typeSize_);
      WEFT_TRY(scope_.api()->memcpyAsync(plan_.staged(device, base_), device, c.count * typeSize_,
                                         scope_.stream()));
    }
    return scope_.mark(k % 2 + 1);
  }

  Status copyOut(size_t k) {
    if (extents_.recvBytes == 0) return Status::ok();
    const Chunk c = chunk(k);
    void* device = const_cast<void*>(offsetBy(call_.recv, c.first * typeSize_));
    return scope_.api()->memcpyAsync(device, plan_.staged(device, base_), c.count * typeSize_,
                                     scope_.stream());
  }

  CollArgs hostChunk(size_t k) const {
    const Chunk c = chunk(k);
    CollArgs part = host_;
    part.count = c.count;
    part.send = offsetBy(host_.send, c.first * typeSize_);
    part.recv = const_cast<void*>(offsetBy(host_.recv, c.first * typeSize_));
    return part;
  }

  DeviceScope& scope_;
  const CollArgs& call_;
  const CollArgs host_;
  const StagingPlan& plan_;
  char* base_;
  const CallExtents extents_;
  size_t typeSize_ = 1;
  size_t chunkElements_ = 1;
  size_t chunks_ = 0;
};

}  // namespace

Status runPipelined(weftComm* comm, DeviceScope& scope, const Op& op, const StagingPlan& plan,
                    const HostRunner& runHost) {
  char* base = nullptr;
  WEFT_TRY(scope.gpu()->staging(plan.bytes(), &base));
  const CollArgs& call = op.single;
  const CollArgs host = plan.hostOp(op, base).single;
  const CallExtents extents = callExtents(call, comm->nranks, comm->rank);
  return Pipeline(scope, call, host, plan, base, extents).run(runHost);
}

}  // namespace weft::device
