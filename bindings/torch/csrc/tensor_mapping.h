// How torch's tensors, dtypes and reduce ops map onto weft's C API, and the checks that turn a
// wrong argument into an error naming it before anything reaches weft.
#pragma once

#include <ATen/ATen.h>
#include <weft/weft.h>
#include <torch/csrc/distributed/c10d/Types.hpp>

#include <string>
#include <vector>

namespace weft_torch {

// The weft datatype of a torch dtype; throws for dtypes weft cannot reduce or move (complex
// tensors reach the backend already viewed as real by torch.distributed).
weftDataType_t weftTypeOf(const at::Tensor& tensor, const char* op);

// torch's bitwise ops have no weft counterpart; they run as an all-gather and a local fold.
bool isBitwise(const c10d::ReduceOp& op);
// The weft op of an arithmetic torch op on tensors like `like`; throws for PREMUL_SUM, unknown
// ops, and AVG of booleans.
weftRedOp_t weftOpOf(const c10d::ReduceOp& op, const at::Tensor& like, const char* opName);
// Folds `gathered` (nranks blocks of out's shape, stacked in dim 0) into out with a bitwise op.
void foldBitwise(const c10d::ReduceOp& op, const at::Tensor& gathered, at::Tensor& out);

// Throws unless `tensor` is a dense CPU tensor; names `what` (e.g. "allreduce: tensors[0]").
void checkCpuDense(const at::Tensor& tensor, const std::string& what);
// Exactly one tensor per call (one device per process, as with NCCL).
void checkSingle(const std::vector<at::Tensor>& tensors, const char* op, const char* what);
// Every tensor of `list` has the dtype and element count of `like`.
void checkSameShape(const std::vector<at::Tensor>& list, const at::Tensor& like,
                    const std::string& what);
void checkRank(int64_t rank, int size, const char* op, const char* what);
// The arguments of a rooted call on one tensor (broadcast, reduce): one dense CPU tensor, a
// root rank in range, root tensor 0.
void checkRootedSingle(const std::vector<at::Tensor>& tensors, int64_t rootRank, int64_t rootTensor,
                       int size, const char* op);

// A contiguous tensor holding `tensor`'s values: the tensor itself when it is contiguous.
at::Tensor contiguousInput(const at::Tensor& tensor);

}  // namespace weft_torch
