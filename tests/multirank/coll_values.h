// Typed access to untyped test buffers, and the exact reference semantics of each reduction.
#pragma once

#include <cstddef>
#include <cstdint>

#include "weft/weft.h"

namespace weft::test {

size_t elementSize(weftDataType_t type);
// Stores an integer-valued number into element i of a buffer of the given type (integers wrap
// to the type's width, floating types round to nearest even, exactly as a user's cast would).
void storeValue(weftDataType_t type, void* buf, size_t i, int64_t value);
// Compares element i of two buffers bit for bit.
bool sameElement(weftDataType_t type, const void* a, const void* b, size_t i);
// A printable element, for failure messages.
double loadValue(weftDataType_t type, const void* buf, size_t i);

// The input of `rank` at element `index` for a call with this op (or for data movement when
// `reduction` is false). Small integers: sums stay below 256, products are small powers of two.
int64_t inputValue(weftRedOp_t op, bool reduction, bool isSigned, int rank, size_t index);
bool isSignedType(weftDataType_t type);

// Writes into element i of `out` the reduction over nranks of inputValue(op, ..., r, index),
// with the library's semantics for the type (wrap, avg = sum then divide or scale).
void storeReduced(weftDataType_t type, weftRedOp_t op, int nranks, size_t index, void* out,
                  size_t i);

}  // namespace weft::test
