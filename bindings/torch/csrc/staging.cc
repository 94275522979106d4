#include "staging.h"

namespace weft_torch {

Staged stageInOut(const at::Tensor& tensor) {
  if (tensor.is_contiguous()) return {tensor, {}};
  at::Tensor copy = tensor.contiguous();
  at::Tensor target = tensor;
  return {copy, [copy, target]() mutable { target.copy_(copy); }};
}

Staged stageOutput(const at::Tensor& tensor) {
  if (tensor.is_contiguous()) return {tensor, {}};
  at::Tensor buffer = at::empty(tensor.sizes(), tensor.options());
  at::Tensor target = tensor;
  return {buffer, [buffer, target]() mutable { target.copy_(buffer); }};
}

Staged stageConcatenated(const std::vector<at::Tensor>& list, bool copyIn) {
  int64_t total = 0;
  for (const at::Tensor& tensor : list) total += tensor.numel();
  at::Tensor buffer = at::empty({total}, list.at(0).options().memory_format(c10::nullopt));
  if (copyIn) {
    int64_t offset = 0;
    for (const at::Tensor& tensor : list) {
      buffer.narrow(0, offset, tensor.numel()).view(tensor.sizes()).copy_(tensor);
      offset += tensor.numel();
    }
  }
  std::vector<at::Tensor> targets = list;
  return {buffer, [buffer, targets]() mutable {
            int64_t offset = 0;
            for (at::Tensor& target : targets) {
              target.copy_(buffer.narrow(0, offset, target.numel()).view(target.sizes()));
              offset += target.numel();
            }
          }};
}

}  // namespace weft_torch
