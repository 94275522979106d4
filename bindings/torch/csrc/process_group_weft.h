// ProcessGroupWeft: torch.distributed's collectives on a weft communicator.
//
// torch 1.x plugs third-party backends in as ProcessGroup subclasses; torch 2.x as Backend
// subclasses that a ProcessGroup dispatches to by device. The virtual methods we override are
// the same in both, so one class serves both through the base chosen below.
#pragma once

#include <torch/version.h>
#include <weft/weft.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/distributed/c10d/Backend.hpp>
#endif

#include "staging.h"
#include "weft_work.h"

namespace weft_torch {

#if TORCH_VERSION_MAJOR >= 2
using WeftBase = c10d::Backend;
#else
using WeftBase = c10d::ProcessGroup;
#endif

class ProcessGroupWeft : public WeftBase {
 public:
  // Rendezvous through torch's store: rank 0 creates weft's unique id and publishes it under a
  // key of this group's (prefixed) store; the others read it. `timeout` becomes the
  // communicator's deadline for every wait (WEFT_TIMEOUT, when set, wins). The point-to-point
  // communicator is split from the first one here (see p2pComm_).
  ProcessGroupWeft(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                   std::chrono::milliseconds timeout);
  ~ProcessGroupWeft() override;

  const std::string getBackendName() const override { return "weft"; }

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(
      std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors,
                                        const c10d::ReduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_coalesced(
      std::vector<std::vector<at::Tensor>>& outputLists, std::vector<at::Tensor>& inputs,
      const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs,
                                        std::vector<at::Tensor>& inputs,
                                        const c10d::GatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs,
                                         std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
      at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& outputSplits,
                                               std::vector<int64_t>& inputSplits,
                                               const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs,
                                          std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dstRank,
                                      int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int srcRank,
                                      int tag) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override;

#if TORCH_VERSION_MAJOR < 2
  // batch_isend_irecv brackets its calls with these: they become one weft group, so that the
  // sends and receives of a batch progress together whatever their order on each rank. (Their
  // signatures change across torch 2.x releases; there a batch is issued call by call.)
  void startCoalescing() override;
  void endCoalescing(std::vector<c10::intrusive_ptr<c10d::Work>>& works) override;
#endif

 private:
  using Finisher = std::function<void()>;
  // A call issued on this thread (a batch's, or several weft calls in a group): once every call
  // handed to the completer before has run, `issue` calls weft's non-blocking functions and
  // hands each request to the work; a failure at issue throws with weft's message.
  c10::intrusive_ptr<c10d::Work> launch(c10d::OpType type, const std::string& what,
                                        std::vector<at::Tensor> outputs,
                                        std::vector<at::Tensor> keepAlive, Finisher finisher,
                                        const std::function<void(WeftWork&)>& issue);
  // One weft call: handed to the completer to run in order (or held, see defers); inside a
  // batch, issued here with the batch, and a send or receive issued here with a request (weft
  // leaves it outstanding). `call` may run after the return, so it captures by value.
  c10::intrusive_ptr<c10d::Work> launchCall(c10d::OpType type, const std::string& what,
                                            std::vector<at::Tensor> outputs,
                                            std::vector<at::Tensor> keepAlive, Finisher finisher,
                                            WeftCall call);
  void check(weftResult_t result, const std::string& what) const {
    check(result, what, comm_);
  }
  // `comm` is the communicator whose last error explains the failure.
  void check(weftResult_t result, const std::string& what, weftComm_t comm) const;
  static bool isPointToPoint(c10d::OpType type) {
    return type == c10d::OpType::SEND || type == c10d::OpType::RECV;
  }
  // Point-to-point calls go to p2pCompleter_, the rest to completer_.
  Completer& completerFor(c10d::OpType type) const {
    return isPointToPoint(type) ? *p2pCompleter_ : *completer_;
  }
  // Whether a collective is deferred until waited on (weft_work.h): one of at most deferBytes_
  // through the tensors weft touches, outside a batch, with no earlier call still to complete
  // (it would run after them, holding up its waiter).
  bool defers(const std::vector<at::Tensor>& touched) const;
  // The reductions and all-gathers of several torch calls differ only in how they stage.
  c10::intrusive_ptr<c10d::Work> allReduceStaged(c10d::OpType type, const std::string& what,
                                                 std::vector<at::Tensor> outputs,
                                                 const Staged& staged, weftDataType_t dtype,
                                                 weftRedOp_t op);
  c10::intrusive_ptr<c10d::Work> allGatherStaged(c10d::OpType type, const std::string& what,
                                                 std::vector<at::Tensor> outputs,
                                                 const at::Tensor& input, const Staged& output,
                                                 weftDataType_t dtype);
  // An all-reduce with a bitwise op: all-gather, then a local fold (weft reduces arithmetic ops
  // only).
  c10::intrusive_ptr<c10d::Work> bitwiseAllreduce(at::Tensor& tensor, const c10d::ReduceOp& op,
                                                  const char* what);
  // Sends and receives blocks of `input`/`output` to and from every peer in one weft group.
  void exchangeBlocks(WeftWork& work, const at::Tensor& output, const at::Tensor& input,
                      const std::vector<int64_t>& outputOffsets,
                      const std::vector<int64_t>& outputCounts,
                      const std::vector<int64_t>& inputOffsets,
                      const std::vector<int64_t>& inputCounts, weftDataType_t type);

  weftComm_t comm_ = nullptr;
  // Sends and receives run on a communicator of their own, so that their messages never meet a
  // collective's: weft matches the messages between two ranks in posting order, and a receive
  // left pending on comm_ would catch the peer's next collective message. Apart, a pending
  // irecv waits for its send whatever collectives run meanwhile, as gloo's does.
  // WEFT_TORCH_P2P_COMM=0 keeps them on comm_ (one communicator per group, half the set-up).
  weftComm_t p2pComm_ = nullptr;
  int64_t deferBytes_ = 0;                // WEFT_TORCH_DEFER_BYTES
  std::shared_ptr<Completer> completer_;  // shared: see Completer::retireOnItsThread
  // Completes the point-to-point calls: a receive still waiting for its send must not hold up
  // the collectives queued on completer_. The same object as completer_ when p2pComm_ is comm_.
  std::shared_ptr<Completer> p2pCompleter_;
  int coalescingDepth_ = 0;
  std::vector<c10::intrusive_ptr<WeftWork>> coalesced_;  // issued inside the open batch
};

// The creator torch.distributed calls with (store, rank, size, timeout).
c10::intrusive_ptr<WeftBase> createProcessGroupWeft(const c10::intrusive_ptr<c10d::Store>& store,
                                                    int rank, int size,
                                                    const std::chrono::duration<float>& timeout);

}  // namespace weft_torch
