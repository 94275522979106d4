// Contiguous buffers for weft to read and write, and the copies that put results back where
// torch wants them (non-contiguous tensors, lists of tensors).
#pragma once

#include <ATen/ATen.h>

#include <functional>
#include <vector>

namespace weft_torch {

struct Staged {
  at::Tensor buffer;               // contiguous; what weft reads and writes
  std::function<void()> finisher;  // copies buffer back into the user's tensors; empty if none
};

// `tensor` is read and written: a contiguous tensor is used as is, another one through a copy.
Staged stageInOut(const at::Tensor& tensor);
// `tensor` is only written.
Staged stageOutput(const at::Tensor& tensor);
// One flat buffer over the tensors of `list` (same dtype), holding their values when `copyIn`;
// the finisher copies each slice back into its tensor.
Staged stageConcatenated(const std::vector<at::Tensor>& list, bool copyIn);

}  // namespace weft_torch
