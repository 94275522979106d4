#include "tensor_mapping.h"

#include <c10/util/Exception.h>

namespace weft_torch {

weftDataType_t weftTypeOf(const at::Tensor& tensor, const char* op) {
  switch (tensor.scalar_type()) {
    case at::kFloat:
      return weftFloat32;
    case at::kDouble:
      return weftFloat64;
    case at::kHalf:
      return weftFloat16;
    case at::kBFloat16:
      return weftBfloat16;
    case at::kChar:
      return weftInt8;
    case at::kByte:
      return weftUint8;
    // Booleans are bytes holding 0 or 1; weftOpOf keeps them so (sum is OR, product is AND).
    case at::kBool:
      return weftUint8;
    case at::kInt:
      return weftInt32;
    case at::kLong:
      return weftInt64;
    default:
      TORCH_CHECK(false, "weft: ", op, ": dtype ", tensor.scalar_type(),
                  " is not supported (supported: float32, float64, float16, bfloat16, int8, "
                  "uint8, bool, int32, int64)");
  }
}

bool isBitwise(const c10d::ReduceOp& op) {
  return op.op_ == c10d::ReduceOp::BAND || op.op_ == c10d::ReduceOp::BOR ||
         op.op_ == c10d::ReduceOp::BXOR;
}

weftRedOp_t weftOpOf(const c10d::ReduceOp& op, const at::Tensor& like, const char* opName) {
  // A sum or product of booleans must stay a boolean: as in torch's NCCL backend, sum is a
  // logical OR (max) and product a logical AND (min); an average has no boolean meaning.
  if (like.scalar_type() == at::kBool) {
    switch (op.op_) {
      case c10d::ReduceOp::SUM:
      case c10d::ReduceOp::MAX:
        return weftMax;
      case c10d::ReduceOp::PRODUCT:
      case c10d::ReduceOp::MIN:
        return weftMin;
      default:
        TORCH_CHECK(false, "weft: ", opName, ": reduce op ", static_cast<int>(op.op_),
                    " is not defined for bool tensors (SUM, PRODUCT, MIN, MAX and the bitwise "
                    "ops are)");
    }
  }
  switch (op.op_) {
    case c10d::ReduceOp::SUM:
      return weftSum;
    case c10d::ReduceOp::AVG:
      return weftAvg;
    case c10d::ReduceOp::PRODUCT:
      return weftProd;
    case c10d::ReduceOp::MIN:
      return weftMin;
    case c10d::ReduceOp::MAX:
      return weftMax;
    default:
      TORCH_CHECK(false, "weft: ", opName, ": reduce op ", static_cast<int>(op.op_),
                  " is not supported (supported: SUM, AVG, PRODUCT, MIN, MAX, BAND, BOR, BXOR)");
  }
}

void foldBitwise(const c10d::ReduceOp& op, const at::Tensor& gathered, at::Tensor& out) {
  at::Tensor acc = gathered[0].clone();
  for (int64_t block = 1; block < gathered.size(0); ++block) {
    if (op.op_ == c10d::ReduceOp::BAND) {
      acc.bitwise_and_(gathered[block]);
    } else if (op.op_ == c10d::ReduceOp::BOR) {
      acc.bitwise_or_(gathered[block]);
    } else {
      acc.bitwise_xor_(gathered[block]);
    }
  }
  out.copy_(acc.view(out.sizes()));
}

void checkCpuDense(const at::Tensor& tensor, const std::string& what) {
  TORCH_CHECK(tensor.defined(), "weft: ", what, " is undefined");
  TORCH_CHECK(tensor.device().is_cpu(), "weft: ", what, " is on ", tensor.device(),
              "; this build of the weft backend takes CPU tensors only");
  TORCH_CHECK(tensor.layout() == at::kStrided, "weft: ", what,
              " must be a dense (strided) tensor, not ", tensor.layout());
}

void checkSingle(const std::vector<at::Tensor>& tensors, const char* op, const char* what) {
  TORCH_CHECK(tensors.size() == 1, "weft: ", op, ": expects exactly one tensor in ", what,
              " (one device per process), got ", tensors.size());
}

void checkSameShape(const std::vector<at::Tensor>& list, const at::Tensor& like,
                    const std::string& what) {
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string name = what + "[" + std::to_string(i) + "]";
    checkCpuDense(list[i], name);
    TORCH_CHECK(list[i].scalar_type() == like.scalar_type(), "weft: ", name, " has dtype ",
                list[i].scalar_type(), " but the input has ", like.scalar_type());
    TORCH_CHECK(list[i].numel() == like.numel(), "weft: ", name, " has ", list[i].numel(),
                " elements but the input has ", like.numel());
  }
}

void checkRank(int64_t rank, int size, const char* op, const char* what) {
  TORCH_CHECK(rank >= 0 && rank < size, "weft: ", op, ": ", what, " ", rank,
              " is out of range for a group of ", size);
}

void checkRootedSingle(const std::vector<at::Tensor>& tensors, int64_t rootRank, int64_t rootTensor,
                       int size, const char* op) {
  checkSingle(tensors, op, "tensors");
  checkCpuDense(tensors[0], std::string(op) + ": tensors[0]");
  checkRank(rootRank, size, op, "rootRank");
  TORCH_CHECK(rootTensor == 0, "weft: ", op, ": rootTensor must be 0, got ", rootTensor);
}

at::Tensor contiguousInput(const at::Tensor& tensor) {
  return tensor.is_contiguous() ? tensor : tensor.contiguous();
}

}  // namespace weft_torch
