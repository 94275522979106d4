// Element-wise reduction kernels, one per (datatype, op), selected once per call.
#pragma once

#include <cstddef>

#include "base/datatype.h"
#include "weft/weft.h"

namespace weft::reduce {

// dst[i] = a[i] (op) b[i] for i < count. dst may alias a or b (exactly, not partially).
// weftAvg reduces as weftSum; finishAvg() completes it once all contributions are summed.
using ReduceFn = void (*)(void* dst, const void* a, const void* b, size_t count);

ReduceFn kernelFor(weftDataType_t type, weftRedOp_t op);

// Completes an average over nranks contributions in place: integers are divided (truncating
// toward zero, as C does), floating-point values are multiplied by 1/nranks computed in the
// element's accumulation type (double for float64, float otherwise) and rounded to nearest even.
void finishAvg(void* buf, size_t count, weftDataType_t type, int nranks);

// The instruction set the kernels dispatch to on this CPU ("avx512", "avx2", "baseline").
const char* isaName();

}  // namespace weft::reduce
