// Integer kernels: int8, uint8, int32, uint32, int64, uint64. Sum and product wrap modulo 2^bits
// (computed in the unsigned type, see combine()); averages truncate toward zero.
#include <cstdint>

#include "reduce/kernels.h"

namespace weft::reduce::detail {

void addIntKernels(Isa isa, KernelTable& table) {
  fillGenericRow<PlainCodec<int8_t>>(isa, weftInt8, table);
  fillGenericRow<PlainCodec<uint8_t>>(isa, weftUint8, table);
  fillGenericRow<PlainCodec<int32_t>>(isa, weftInt32, table);
  fillGenericRow<PlainCodec<uint32_t>>(isa, weftUint32, table);
  fillGenericRow<PlainCodec<int64_t>>(isa, weftInt64, table);
  fillGenericRow<PlainCodec<uint64_t>>(isa, weftUint64, table);
}

}  // namespace weft::reduce::detail
