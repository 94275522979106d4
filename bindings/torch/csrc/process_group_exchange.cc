// The data-movement collectives: all-gather, gather, scatter, all-to-all and point to point.
#include <c10/util/Exception.h>

#include <cstring>

#include "process_group_weft.h"
#include "tensor_mapping.h"

namespace weft_torch {

namespace {

// Ends a weft group on every path out of the scope that started it, so a failed issue cannot
// leave this thread inside a group.
class GroupScope {
 public:
  GroupScope() { weftGroupStart(); }
  ~GroupScope() {
    if (open_) weftGroupEnd();
  }
  weftResult_t end() {
    open_ = false;
    return weftGroupEnd();
  }

 private:
  bool open_ = true;
};

}  // namespace

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::allGatherStaged(
    c10d::OpType type, const std::string& what, std::vector<at::Tensor> outputs,
    const at::Tensor& input, const Staged& output, weftDataType_t dtype) {
  void* send = input.data_ptr();
  void* recv = output.buffer.data_ptr();
  size_t count = input.numel();
  return launchCall(type, what, std::move(outputs), {input, output.buffer}, output.finisher,
                    [send, recv, count, dtype, comm = comm_](weftRequest_t* request) {
                      return weftAllGather(send, recv, count, dtype, comm, request);
                    });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::_allgather_base(
    at::Tensor& output, at::Tensor& input, const c10d::AllgatherOptions& /*opts*/) {
  checkCpuDense(output, "_allgather_base: output");
  checkCpuDense(input, "_allgather_base: input");
  TORCH_CHECK(input.scalar_type() == output.scalar_type(), "weft: _allgather_base: input has ",
              "dtype ", input.scalar_type(), ", output has ", output.scalar_type());
  TORCH_CHECK(output.numel() == input.numel() * getSize(), "weft: _allgather_base: output has ",
              output.numel(), " elements, expected input's ", input.numel(), " x ", getSize(),
              " ranks");
  weftDataType_t type = weftTypeOf(input, "_allgather_base");
  return allGatherStaged(c10d::OpType::_ALLGATHER_BASE, "_allgather_base", {output},
                         contiguousInput(input), stageOutput(output), type);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::allgather(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions& /*opts*/) {
  checkSingle(inputs, "allgather", "inputs");
  checkCpuDense(inputs[0], "allgather: inputs[0]");
  TORCH_CHECK(outputs.size() == 1, "weft: allgather: expects one output list, got ",
              outputs.size());
  TORCH_CHECK(static_cast<int>(outputs[0].size()) == getSize(), "weft: allgather: outputs[0] ",
              "holds ", outputs[0].size(), " tensors, expected one per rank (", getSize(), ")");
  checkSameShape(outputs[0], inputs[0], "allgather: outputs[0]");
  weftDataType_t type = weftTypeOf(inputs[0], "allgather");
  return allGatherStaged(c10d::OpType::ALLGATHER, "allgather", outputs[0],
                         contiguousInput(inputs[0]),
                         stageConcatenated(outputs[0], /*copyIn=*/false), type);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::allgather_coalesced(
    std::vector<std::vector<at::Tensor>>& outputLists, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions& /*opts*/) {
  TORCH_CHECK(!inputs.empty(), "weft: allgather_coalesced: inputs is empty");
  TORCH_CHECK(static_cast<int>(outputLists.size()) == getSize(),
              "weft: allgather_coalesced: ", "expects one output list per rank (", getSize(),
              "), got ", outputLists.size());
  for (size_t rank = 0; rank < outputLists.size(); ++rank) {
    TORCH_CHECK(outputLists[rank].size() == inputs.size(),
                "weft: allgather_coalesced: ", "output_tensor_lists[", rank, "] holds ",
                outputLists[rank].size(), " tensors, inputs holds ", inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      checkSameShape({outputLists[rank][i]}, inputs[i],
                     "allgather_coalesced: output_tensor_lists[" + std::to_string(rank) + "][" +
                         std::to_string(i) + "]");
    }
  }
  weftDataType_t type = weftTypeOf(inputs[0], "allgather_coalesced");
  for (size_t i = 1; i < inputs.size(); ++i) {
    TORCH_CHECK(inputs[i].scalar_type() == inputs[0].scalar_type(),
                "weft: allgather_coalesced: ", "inputs[", i, "] has dtype ",
                inputs[i].scalar_type(), ", inputs[0] has ", inputs[0].scalar_type());
  }
  at::Tensor in = stageConcatenated(inputs, /*copyIn=*/true).buffer;
  std::vector<at::Tensor> targets;
  for (const auto& list : outputLists) targets.insert(targets.end(), list.begin(), list.end());
  return allGatherStaged(c10d::OpType::ALLGATHER_COALESCED, "allgather_coalesced", targets, in,
                         stageConcatenated(targets, /*copyIn=*/false), type);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::gather(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::GatherOptions& opts) {
  checkSingle(inputs, "gather", "inputs");
  checkCpuDense(inputs[0], "gather: inputs[0]");
  checkRank(opts.rootRank, getSize(), "gather", "rootRank");
  const bool isRoot = getRank() == opts.rootRank;
  if (isRoot) {
    TORCH_CHECK(outputs.size() == 1 && static_cast<int>(outputs[0].size()) == getSize(),
                "weft: gather: the root needs one output list of ", getSize(), " tensors");
    checkSameShape(outputs[0], inputs[0], "gather: outputs[0]");
  } else {
    TORCH_CHECK(outputs.empty(), "weft: gather: only the root (rank ", opts.rootRank,
                ") passes output tensors");
  }
  weftDataType_t type = weftTypeOf(inputs[0], "gather");
  at::Tensor in = contiguousInput(inputs[0]);
  Staged out;
  if (isRoot) out = stageConcatenated(outputs[0], /*copyIn=*/false);
  std::vector<at::Tensor> results = isRoot ? outputs[0] : std::vector<at::Tensor>();
  void* send = in.data_ptr();
  void* recv = isRoot ? out.buffer.data_ptr() : nullptr;
  size_t count = in.numel();
  int root = static_cast<int>(opts.rootRank);
  return launchCall(c10d::OpType::GATHER, "gather", results, {in, out.buffer}, out.finisher,
                    [send, recv, count, type, root, comm = comm_](weftRequest_t* request) {
                      return weftGather(send, recv, count, type, root, comm, request);
                    });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::scatter(
    std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
    const c10d::ScatterOptions& opts) {
  checkSingle(outputs, "scatter", "outputs");
  checkCpuDense(outputs[0], "scatter: outputs[0]");
  checkRank(opts.rootRank, getSize(), "scatter", "rootRank");
  const bool isRoot = getRank() == opts.rootRank;
  at::Tensor in;
  if (isRoot) {
    TORCH_CHECK(inputs.size() == 1 && static_cast<int>(inputs[0].size()) == getSize(),
                "weft: scatter: the root needs one input list of ", getSize(), " tensors");
    checkSameShape(inputs[0], outputs[0], "scatter: inputs[0]");
    in = stageConcatenated(inputs[0], /*copyIn=*/true).buffer;
  } else {
    TORCH_CHECK(inputs.empty(), "weft: scatter: only the root (rank ", opts.rootRank,
                ") passes input tensors");
  }
  weftDataType_t type = weftTypeOf(outputs[0], "scatter");
  Staged out = stageOutput(outputs[0]);
  void* send = isRoot ? in.data_ptr() : nullptr;
  void* recv = out.buffer.data_ptr();
  size_t count = outputs[0].numel();
  int root = static_cast<int>(opts.rootRank);
  return launchCall(c10d::OpType::SCATTER, "scatter", outputs, {in, out.buffer}, out.finisher,
                    [send, recv, count, type, root, comm = comm_](weftRequest_t* request) {
                      return weftScatter(send, recv, count, type, root, comm, request);
                    });
}

void ProcessGroupWeft::exchangeBlocks(WeftWork& work, const at::Tensor& output,
                                      const at::Tensor& input,
                                      const std::vector<int64_t>& outputOffsets,
                                      const std::vector<int64_t>& outputCounts,
                                      const std::vector<int64_t>& inputOffsets,
                                      const std::vector<int64_t>& inputCounts,
                                      weftDataType_t type) {
  const int rank = getRank();
  const size_t elementSize = input.element_size();
  auto* in = static_cast<char*>(input.data_ptr());
  auto* out = static_cast<char*>(output.data_ptr());
  if (inputCounts[rank] > 0) {
    std::memcpy(out + outputOffsets[rank] * elementSize, in + inputOffsets[rank] * elementSize,
                inputCounts[rank] * elementSize);
  }
  // One group: every send and receive progresses together, whatever order the peers post in.
  GroupScope group;
  for (int peer = 0; peer < getSize(); ++peer) {
    if (peer == rank) continue;
    if (inputCounts[peer] > 0) {
      weftRequest_t request = nullptr;
      check(weftSend(in + inputOffsets[peer] * elementSize, inputCounts[peer], type, peer, comm_,
                     &request),
            "alltoall: send to rank " + std::to_string(peer));
      work.addRequest(request);
    }
    if (outputCounts[peer] > 0) {
      weftRequest_t request = nullptr;
      check(weftRecv(out + outputOffsets[peer] * elementSize, outputCounts[peer], type, peer, comm_,
                     &request),
            "alltoall: receive from rank " + std::to_string(peer));
      work.addRequest(request);
    }
  }
  check(group.end(), "alltoall");
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::alltoall_base(
    at::Tensor& output, at::Tensor& input, std::vector<int64_t>& outputSplits,
    std::vector<int64_t>& inputSplits, const c10d::AllToAllOptions& /*opts*/) {
  checkCpuDense(output, "alltoall_base: output");
  checkCpuDense(input, "alltoall_base: input");
  TORCH_CHECK(input.scalar_type() == output.scalar_type(), "weft: alltoall_base: input has ",
              "dtype ", input.scalar_type(), ", output has ", output.scalar_type());
  weftDataType_t type = weftTypeOf(input, "alltoall_base");
  const int size = getSize();
  at::Tensor in = contiguousInput(input);
  Staged out = stageOutput(output);
  if (outputSplits.empty() && inputSplits.empty()) {
    TORCH_CHECK(input.numel() == output.numel() && input.numel() % size == 0, "weft: ",
                "alltoall_base: input and output need the same element count, divisible by ", size,
                " ranks (got ", input.numel(), " and ", output.numel(), ")");
    void* send = in.data_ptr();
    void* recv = out.buffer.data_ptr();
    size_t count = in.numel() / size;
    return launchCall(c10d::OpType::ALLTOALL_BASE, "alltoall_base", {output}, {in, out.buffer},
                      out.finisher,
                      [send, recv, count, type, comm = comm_](weftRequest_t* request) {
                        return weftAlltoAll(send, recv, count, type, comm, request);
                      });
  }
  // Uneven splits are counted in rows of dimension 0; a missing list means even rows.
  auto blocks = [&](const at::Tensor& tensor, const std::vector<int64_t>& splits, const char* name,
                    std::vector<int64_t>& offsets, std::vector<int64_t>& counts) {
    const int64_t rows = tensor.dim() > 0 ? tensor.size(0) : 1;
    const int64_t rowElements = rows > 0 ? tensor.numel() / rows : 0;
    std::vector<int64_t> rowSplits = splits;
    if (rowSplits.empty()) {
      TORCH_CHECK(rows % size == 0, "weft: alltoall_base: ", name, " has ", rows,
                  " rows, not divisible by ", size, " ranks");
      rowSplits.assign(size, rows / size);
    }
    TORCH_CHECK(static_cast<int>(rowSplits.size()) == size, "weft: alltoall_base: ", name,
                "_split_sizes has ", rowSplits.size(), " entries, expected ", size);
    int64_t offset = 0;
    for (int64_t split : rowSplits) {
      TORCH_CHECK(split >= 0, "weft: alltoall_base: ", name, "_split_sizes has a negative entry");
      offsets.push_back(offset * rowElements);
      counts.push_back(split * rowElements);
      offset += split;
    }
    TORCH_CHECK(offset == rows, "weft: alltoall_base: ", name, "_split_sizes sum to ", offset,
                " but the tensor has ", rows, " rows");
  };
  std::vector<int64_t> outOffsets, outCounts, inOffsets, inCounts;
  blocks(output, outputSplits, "output", outOffsets, outCounts);
  blocks(input, inputSplits, "input", inOffsets, inCounts);
  return launch(c10d::OpType::ALLTOALL_BASE, "alltoall_base", {output}, {in, out.buffer},
                out.finisher, [&](WeftWork& work) {
                  exchangeBlocks(work, out.buffer, in, outOffsets, outCounts, inOffsets, inCounts,
                                 type);
                });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::alltoall(std::vector<at::Tensor>& outputs,
                                                          std::vector<at::Tensor>& inputs,
                                                          const c10d::AllToAllOptions& /*opts*/) {
  const int size = getSize();
  TORCH_CHECK(static_cast<int>(outputs.size()) == size && static_cast<int>(inputs.size()) == size,
              "weft: alltoall: expects one input and one output tensor per rank (", size, "), got ",
              inputs.size(), " and ", outputs.size());
  for (int i = 0; i < size; ++i) {
    checkCpuDense(inputs[i], "alltoall: inputs[" + std::to_string(i) + "]");
    checkCpuDense(outputs[i], "alltoall: outputs[" + std::to_string(i) + "]");
    TORCH_CHECK(inputs[i].scalar_type() == inputs[0].scalar_type() &&
                    outputs[i].scalar_type() == inputs[0].scalar_type(),
                "weft: alltoall: every tensor needs dtype ", inputs[0].scalar_type());
  }
  weftDataType_t type = weftTypeOf(inputs[0], "alltoall");
  at::Tensor in = stageConcatenated(inputs, /*copyIn=*/true).buffer;
  Staged out = stageConcatenated(outputs, /*copyIn=*/false);
  std::vector<int64_t> outOffsets, outCounts, inOffsets, inCounts;
  int64_t inOffset = 0, outOffset = 0;
  for (int i = 0; i < size; ++i) {
    inOffsets.push_back(inOffset);
    inCounts.push_back(inputs[i].numel());
    inOffset += inputs[i].numel();
    outOffsets.push_back(outOffset);
    outCounts.push_back(outputs[i].numel());
    outOffset += outputs[i].numel();
  }
  return launch(c10d::OpType::ALLTOALL, "alltoall", outputs, {in, out.buffer}, out.finisher,
                [&](WeftWork& work) {
                  exchangeBlocks(work, out.buffer, in, outOffsets, outCounts, inOffsets, inCounts,
                                 type);
                });
}

// Tags are not matched: weft delivers the messages between two ranks in the order they were
// posted, which is what code that pairs each send with one receive relies on. They travel on
// p2pComm_, apart from the collectives' messages.
c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::send(std::vector<at::Tensor>& tensors, int dstRank,
                                                      int /*tag*/) {
  checkSingle(tensors, "send", "tensors");
  checkCpuDense(tensors[0], "send: tensors[0]");
  checkRank(dstRank, getSize(), "send", "dst");
  weftDataType_t type = weftTypeOf(tensors[0], "send");
  at::Tensor in = contiguousInput(tensors[0]);
  void* send = in.data_ptr();
  size_t count = in.numel();
  return launchCall(c10d::OpType::SEND, "send to rank " + std::to_string(dstRank), tensors, {in},
                    Finisher(),
                    [send, count, type, dstRank, comm = p2pComm_](weftRequest_t* request) {
                      return weftSend(send, count, type, dstRank, comm, request);
                    });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::recv(std::vector<at::Tensor>& tensors, int srcRank,
                                                      int /*tag*/) {
  checkSingle(tensors, "recv", "tensors");
  checkCpuDense(tensors[0], "recv: tensors[0]");
  checkRank(srcRank, getSize(), "recv", "src");
  weftDataType_t type = weftTypeOf(tensors[0], "recv");
  Staged out = stageOutput(tensors[0]);
  void* recv = out.buffer.data_ptr();
  size_t count = out.buffer.numel();
  return launchCall(c10d::OpType::RECV, "receive from rank " + std::to_string(srcRank), tensors,
                    {out.buffer}, out.finisher,
                    [recv, count, type, srcRank, comm = p2pComm_](weftRequest_t* request) {
                      return weftRecv(recv, count, type, srcRank, comm, request);
                    });
}

}  // namespace weft_torch
