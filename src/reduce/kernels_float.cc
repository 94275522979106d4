// float32 and float64 kernels. IEEE arithmetic as compiled without -ffast-math, so every variant
// rounds identically; max and min propagate NaN (see combine()).
#include "reduce/kernels.h"

namespace weft::reduce::detail {

void addFloatKernels(Isa isa, KernelTable& table) {
  fillGenericRow<PlainCodec<float>>(isa, weftFloat32, table);
  fillGenericRow<PlainCodec<double>>(isa, weftFloat64, table);
}

}  // namespace weft::reduce::detail
