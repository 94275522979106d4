// Set-up, the reductions and broadcast. The data-movement collectives (gathers, scatters,
// all-to-all, point to point) are in process_group_exchange.cc.
#include "process_group_weft.h"

#include <Python.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>

#include "tensor_mapping.h"

namespace weft_torch {

namespace {

// The store key under which rank 0 publishes the unique id (the store torch passes is already
// prefixed per group, so every group has its own).
constexpr const char* kUniqueIdKey = "weft_unique_id";

// Deferring pays where a call is mostly latency; DDP's first gradient bucket (1 MiB) is the
// largest call that still is on a host.
constexpr int64_t kDefaultDeferBytes = 1 << 20;

int64_t deferBytesFromEnv() {
  const char* value = std::getenv("WEFT_TORCH_DEFER_BYTES");
  if (value == nullptr || *value == '\0') return kDefaultDeferBytes;
  char* end = nullptr;
  long long bytes = std::strtoll(value, &end, 10);
  TORCH_CHECK(end != value && *end == '\0' && bytes >= 0, "weft: WEFT_TORCH_DEFER_BYTES='", value,
              "' is not a byte count (0 or more)");
  return bytes;
}

// WEFT_TORCH_P2P_COMM: 1 (the default) gives point-to-point calls a communicator of their own.
bool separateP2pFromEnv() {
  const char* value = std::getenv("WEFT_TORCH_P2P_COMM");
  if (value == nullptr || *value == '\0') return true;
  const std::string text(value);
  TORCH_CHECK(text == "0" || text == "1", "weft: WEFT_TORCH_P2P_COMM='", text,
              "' must be 1 (sends and receives on a communicator of their own) or 0 (on the "
              "group's)");
  return text == "1";
}

int deadlineMs(std::chrono::milliseconds timeout) {
  if (timeout.count() <= 0) return WEFT_CONFIG_UNDEF_INT;
  return static_cast<int>(std::min<int64_t>(timeout.count(), INT_MAX));
}

}  // namespace

ProcessGroupWeft::ProcessGroupWeft(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                   std::chrono::milliseconds timeout)
    : WeftBase(rank, size), deferBytes_(deferBytesFromEnv()) {
  TORCH_CHECK(store, "weft: the store is null");
  weftUniqueId id;
  if (rank == 0) {
    check(weftGetUniqueId(&id), "rendezvous: weftGetUniqueId");
    const auto* bytes = reinterpret_cast<const uint8_t*>(id.internal);
    store->set(kUniqueIdKey, std::vector<uint8_t>(bytes, bytes + sizeof(id.internal)));
  } else {
    std::vector<uint8_t> bytes = store->get(kUniqueIdKey);
    TORCH_CHECK(bytes.size() == sizeof(id.internal), "weft: rendezvous: the store's '",
                kUniqueIdKey, "' holds ", bytes.size(), " bytes, expected ", sizeof(id.internal),
                " (another backend's key?)");
    std::memcpy(id.internal, bytes.data(), bytes.size());
  }
  weftConfig_t config = WEFT_CONFIG_INITIALIZER;
  config.timeoutMs = deadlineMs(timeout);
  check(weftCommInitRankConfig(&comm_, size, id, rank, &config), "rendezvous");
  completer_ = std::make_shared<Completer>(comm_);
  p2pComm_ = comm_;
  p2pCompleter_ = completer_;
  if (separateP2pFromEnv()) {
    weftComm_t split = nullptr;
    weftResult_t result = weftCommSplit(comm_, 0, rank, &split, &config);
    if (result != weftSuccess) {
      // The destructor does not run for a constructor that throws.
      std::string detail = weftGetLastError(comm_);
      completer_.reset();
      weftCommDestroy(comm_);
      TORCH_CHECK(false, "weft: the point-to-point communicator: ", weftGetErrorString(result),
                  detail.empty() ? "" : ": ", detail,
                  " (WEFT_TORCH_P2P_COMM=0 keeps sends and receives on the group's)");
    }
    p2pComm_ = split;
    p2pCompleter_ = std::make_shared<Completer>(p2pComm_);
  }
}

ProcessGroupWeft::~ProcessGroupWeft() {
  const bool separate = p2pComm_ != comm_;
  if (!separate) p2pCompleter_.reset();
  // The last reference can go on a completer thread (a future's callback that held the group
  // is dropped with the call's Work): that thread cannot wait for itself, so each completer
  // finishes its queue and destroys its communicator on its own thread once this destructor
  // has returned.
  if ((completer_ && completer_->onItsThread()) ||
      (p2pCompleter_ && p2pCompleter_->onItsThread())) {
    Completer::retireOnItsThread(std::move(completer_), comm_);
    if (p2pCompleter_) Completer::retireOnItsThread(std::move(p2pCompleter_), p2pComm_);
    return;
  }
  // Python drops the group holding the GIL, and a completer may need the GIL to free the last
  // reference to a tensor Python owns: waiting for the completers with the GIL held would
  // deadlock, so the GIL is let go for the wait.
  PyThreadState* released = nullptr;
  if (Py_IsInitialized() && PyGILState_Check()) released = PyEval_SaveThread();
  // Every queued call completes (or fails at its communicator's deadline) before the
  // communicators go: nothing is left reading or writing a tensor.
  completer_.reset();
  p2pCompleter_.reset();
  weftCommDestroy(comm_);
  if (separate) weftCommDestroy(p2pComm_);
  if (released != nullptr) PyEval_RestoreThread(released);
}

void ProcessGroupWeft::check(weftResult_t result, const std::string& what, weftComm_t comm) const {
  if (result == weftSuccess) return;
  const char* detail = weftGetLastError(comm);
  TORCH_CHECK(false, "weft: ", what, ": ", weftGetErrorString(result),
              (detail && *detail) ? std::string(": ") + detail : std::string());
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::launch(
    c10d::OpType type, const std::string& what, std::vector<at::Tensor> outputs,
    std::vector<at::Tensor> keepAlive, Finisher finisher,
    const std::function<void(WeftWork&)>& issue) {
  // Issued here, so every call handed to its completer before must reach weft first.
  completerFor(type).waitUntilRun();
  auto work = c10::make_intrusive<WeftWork>(getRank(), type, what, std::move(outputs),
                                            std::move(keepAlive), std::move(finisher));
  issue(*work);
  // Inside a batch the requests belong to a weft group that is only issued at endCoalescing;
  // the completer gets the works then, so that it never waits on a group still being built.
  if (coalescingDepth_ > 0) {
    coalesced_.push_back(work);
  } else if (isPointToPoint(type)) {
    p2pCompleter_->addForWaiter(work);
  } else {
    completer_->add(work);
  }
  return work;
}

bool ProcessGroupWeft::defers(const std::vector<at::Tensor>& touched) const {
  if (coalescingDepth_ > 0 || !completer_->idle()) return false;
  int64_t bytes = 0;
  for (const at::Tensor& tensor : touched) {
    if (tensor.defined()) bytes += static_cast<int64_t>(tensor.nbytes());
  }
  return bytes <= deferBytes_;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::launchCall(c10d::OpType type,
                                                            const std::string& what,
                                                            std::vector<at::Tensor> outputs,
                                                            std::vector<at::Tensor> keepAlive,
                                                            Finisher finisher, WeftCall call) {
  const bool pointToPoint = isPointToPoint(type);
  if (coalescingDepth_ > 0 || pointToPoint) {
    // Part of a batch: issued with the batch's other calls, in one weft group on this thread.
    // A send or receive alone: issued here with a request, which weft leaves outstanding while
    // the calls after it run, so that sends and receives complete whatever order the two ranks
    // posted them in (as gloo's do); the completer only waits for it.
    return launch(type, what, std::move(outputs), std::move(keepAlive), std::move(finisher),
                  [&](WeftWork& work) {
                    weftRequest_t request = nullptr;
                    check(call(&request), what, pointToPoint ? p2pComm_ : comm_);
                    work.addRequest(request);
                  });
  }
  completer_->flushDeferred();  // an earlier held call goes first, in order
  const bool held = defers(keepAlive);
  auto work = c10::make_intrusive<WeftWork>(getRank(), type, what, std::move(outputs),
                                            std::move(keepAlive), std::move(finisher));
  if (held) {
    completer_->defer(work, std::move(call));
  } else {
    completer_->run(work, std::move(call));
  }
  return work;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::broadcast(std::vector<at::Tensor>& tensors,
                                                           const c10d::BroadcastOptions& opts) {
  checkRootedSingle(tensors, opts.rootRank, opts.rootTensor, getSize(), "broadcast");
  weftDataType_t type = weftTypeOf(tensors[0], "broadcast");
  Staged staged = stageInOut(tensors[0]);
  void* data = staged.buffer.data_ptr();
  size_t count = staged.buffer.numel();
  int root = static_cast<int>(opts.rootRank);
  return launchCall(c10d::OpType::BROADCAST, "broadcast", tensors, {staged.buffer}, staged.finisher,
                    [data, count, type, root, comm = comm_](weftRequest_t* request) {
                      return weftBroadcast(data, data, count, type, root, comm, request);
                    });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::allreduce(std::vector<at::Tensor>& tensors,
                                                           const c10d::AllreduceOptions& opts) {
  checkSingle(tensors, "allreduce", "tensors");
  checkCpuDense(tensors[0], "allreduce: tensors[0]");
  if (isBitwise(opts.reduceOp)) return bitwiseAllreduce(tensors[0], opts.reduceOp, "allreduce");
  weftRedOp_t op = weftOpOf(opts.reduceOp, tensors[0], "allreduce");
  weftDataType_t type = weftTypeOf(tensors[0], "allreduce");
  return allReduceStaged(c10d::OpType::ALLREDUCE, "allreduce", tensors, stageInOut(tensors[0]),
                         type, op);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::allReduceStaged(
    c10d::OpType type, const std::string& what, std::vector<at::Tensor> outputs,
    const Staged& staged, weftDataType_t dtype, weftRedOp_t op) {
  void* data = staged.buffer.data_ptr();
  size_t count = staged.buffer.numel();
  return launchCall(type, what, std::move(outputs), {staged.buffer}, staged.finisher,
                    [data, count, dtype, op, comm = comm_](weftRequest_t* request) {
                      return weftAllReduce(data, data, count, dtype, op, comm, request);
                    });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::bitwiseAllreduce(at::Tensor& tensor,
                                                                  const c10d::ReduceOp& op,
                                                                  const char* what) {
  TORCH_CHECK(!at::isFloatingType(tensor.scalar_type()), "weft: ", what,
              ": bitwise reduce ops need an integer or bool tensor, got ", tensor.scalar_type());
  weftDataType_t type = weftTypeOf(tensor, what);
  at::Tensor input = contiguousInput(tensor);
  at::Tensor gathered = at::empty({getSize(), input.numel()}, input.options());
  Finisher fold = [op, gathered, tensor]() mutable { foldBitwise(op, gathered, tensor); };
  void* in = input.data_ptr();
  void* out = gathered.data_ptr();
  size_t count = input.numel();
  return launchCall(c10d::OpType::ALLREDUCE, what, {tensor}, {input, gathered}, fold,
                    [in, out, count, type, comm = comm_](weftRequest_t* request) {
                      return weftAllGather(in, out, count, type, comm, request);
                    });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::allreduce_coalesced(
    std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) {
  TORCH_CHECK(!tensors.empty(), "weft: allreduce_coalesced: tensors is empty");
  checkCpuDense(tensors[0], "allreduce_coalesced: tensors[0]");
  for (size_t i = 1; i < tensors.size(); ++i) {
    const std::string name = "allreduce_coalesced: tensors[" + std::to_string(i) + "]";
    checkCpuDense(tensors[i], name);
    TORCH_CHECK(tensors[i].scalar_type() == tensors[0].scalar_type(), "weft: ", name, " has dtype ",
                tensors[i].scalar_type(), ", tensors[0] has ", tensors[0].scalar_type());
  }
  TORCH_CHECK(!isBitwise(opts.reduceOp),
              "weft: allreduce_coalesced: bitwise ops are supported by allreduce only");
  weftRedOp_t op = weftOpOf(opts.reduceOp, tensors[0], "allreduce_coalesced");
  weftDataType_t type = weftTypeOf(tensors[0], "allreduce_coalesced");
  return allReduceStaged(c10d::OpType::ALLREDUCE_COALESCED, "allreduce_coalesced", tensors,
                         stageConcatenated(tensors, /*copyIn=*/true), type, op);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::reduce(std::vector<at::Tensor>& tensors,
                                                        const c10d::ReduceOptions& opts) {
  checkRootedSingle(tensors, opts.rootRank, opts.rootTensor, getSize(), "reduce");
  // A bitwise reduce is a bitwise all-reduce whose result only the root keeps.
  if (isBitwise(opts.reduceOp)) {
    if (getRank() == opts.rootRank) return bitwiseAllreduce(tensors[0], opts.reduceOp, "reduce");
    at::Tensor scratch = tensors[0].clone();
    return bitwiseAllreduce(scratch, opts.reduceOp, "reduce");
  }
  weftRedOp_t op = weftOpOf(opts.reduceOp, tensors[0], "reduce");
  weftDataType_t type = weftTypeOf(tensors[0], "reduce");
  Staged staged = stageInOut(tensors[0]);
  // Only the root's tensor changes, as with gloo and NCCL.
  Finisher finisher = getRank() == opts.rootRank ? staged.finisher : Finisher();
  void* data = staged.buffer.data_ptr();
  size_t count = staged.buffer.numel();
  int root = static_cast<int>(opts.rootRank);
  return launchCall(c10d::OpType::REDUCE, "reduce", tensors, {staged.buffer}, finisher,
                    [data, count, type, op, root, comm = comm_](weftRequest_t* request) {
                      return weftReduce(data, data, count, type, op, root, comm, request);
                    });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::_reduce_scatter_base(
    at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) {
  checkCpuDense(output, "_reduce_scatter_base: output");
  checkCpuDense(input, "_reduce_scatter_base: input");
  TORCH_CHECK(input.scalar_type() == output.scalar_type(), "weft: _reduce_scatter_base: input ",
              "has dtype ", input.scalar_type(), ", output has ", output.scalar_type());
  TORCH_CHECK(input.numel() == output.numel() * getSize(), "weft: _reduce_scatter_base: input ",
              "has ", input.numel(), " elements, expected output's ", output.numel(), " x ",
              getSize(), " ranks");
  TORCH_CHECK(!isBitwise(opts.reduceOp), "weft: reduce_scatter: bitwise ops are not supported");
  weftRedOp_t op = weftOpOf(opts.reduceOp, input, "_reduce_scatter_base");
  weftDataType_t type = weftTypeOf(input, "_reduce_scatter_base");
  at::Tensor in = contiguousInput(input);
  Staged out = stageOutput(output);
  void* send = in.data_ptr();
  void* recv = out.buffer.data_ptr();
  size_t count = output.numel();
  return launchCall(c10d::OpType::_REDUCE_SCATTER_BASE, "_reduce_scatter_base", {output},
                    {in, out.buffer}, out.finisher,
                    [send, recv, count, type, op, comm = comm_](weftRequest_t* request) {
                      return weftReduceScatter(send, recv, count, type, op, comm, request);
                    });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::reduce_scatter(
    std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
    const c10d::ReduceScatterOptions& opts) {
  checkSingle(outputs, "reduce_scatter", "outputs");
  checkCpuDense(outputs[0], "reduce_scatter: outputs[0]");
  TORCH_CHECK(inputs.size() == 1, "weft: reduce_scatter: expects one input list, got ",
              inputs.size());
  TORCH_CHECK(static_cast<int>(inputs[0].size()) == getSize(),
              "weft: reduce_scatter: ", "inputs[0] holds ", inputs[0].size(),
              " tensors, expected one per rank (", getSize(), ")");
  checkSameShape(inputs[0], outputs[0], "reduce_scatter: inputs[0]");
  at::Tensor flat = stageConcatenated(inputs[0], /*copyIn=*/true).buffer;
  return _reduce_scatter_base(outputs[0], flat, opts);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::barrier(const c10d::BarrierOptions& /*opts*/) {
  return launchCall(c10d::OpType::BARRIER, "barrier", {}, {}, Finisher(),
                    [comm = comm_](weftRequest_t* request) { return weftBarrier(comm, request); });
}

#if TORCH_VERSION_MAJOR < 2
void ProcessGroupWeft::startCoalescing() {
  // The batch is issued on this thread, after the sends and receives that came before. torch
  // batches sends and receives only, so on a communicator of their own it need not wait for
  // the group's queued collectives (their peers may be inside this batch's counterpart); with
  // WEFT_TORCH_P2P_COMM=0 p2pCompleter_ is completer_, and it waits for them. (Anything else
  // in a batch waits for its own completer in launch().)
  p2pCompleter_->waitUntilRun();
  check(weftGroupStart(), "startCoalescing");
  ++coalescingDepth_;
}

void ProcessGroupWeft::endCoalescing(std::vector<c10::intrusive_ptr<c10d::Work>>& /*works*/) {
  TORCH_CHECK(coalescingDepth_ > 0, "weft: endCoalescing without startCoalescing");
  --coalescingDepth_;
  weftResult_t ended = weftGroupEnd();
  if (coalescingDepth_ == 0) {
    // Handed over even when the group failed: each work then completes with the failure.
    for (auto& work : coalesced_) completerFor(work->retrieveOpType()).add(std::move(work));
    coalesced_.clear();
  }
  check(ended, "endCoalescing");
}
#endif

c10::intrusive_ptr<WeftBase> createProcessGroupWeft(const c10::intrusive_ptr<c10d::Store>& store,
                                                    int rank, int size,
                                                    const std::chrono::duration<float>& timeout) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(timeout);
  return c10::make_intrusive<ProcessGroupWeft>(store, rank, size, ms);
}

}  // namespace weft_torch
