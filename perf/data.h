// Test data for the *_perf tools: inputs whose collective results are known exactly.
//
// Every value is a pure function of (seed, rank, element index, type, op, nranks), so each rank
// can write its own input and the result it expects without talking to the others, and any rank
// can be checked in isolation. Results are compared bit for bit, which only works because the
// values are chosen so that no rounding can happen however the library orders the reduction:
//   sum, avg: integers whose absolute values add up to at most the type's exact-integer limit
//             (127 for int8, 2048 for float16, 256 for bfloat16, ...), so every partial sum, in any
//             order, is exact and never wraps;
//   prod:     factors in {1, 2} (and -1, -2 for signed types) with at most a few factors of 2 per
//             element over all ranks, so every partial product is a small exact power of two;
//   max, min: any integer the type holds exactly;
//   avg:      the exact sum, then an integer division truncating toward zero, or a multiplication
//             by 1/nranks in float (double for float64) rounded to the type, which is what
//             weftAvg documents.
// Data-movement collectives get random bit patterns instead (normal, finite numbers for the
// floating-point types, so no NaN or subnormal is ever compared).
#pragma once

#include <cstddef>
#include <cstdint>

#include "weft/weft.h"

namespace weft::perf {

size_t typeSize(weftDataType_t type);

// Mixes two values into a seed: rank-specific or repetition-specific streams of data.
uint64_t mixSeed(uint64_t a, uint64_t b);

// Data movement: buf[i] = pattern(seed, firstIndex + i). Filling a gathered buffer at offset 0
// gives the same values as each rank filling its block at offset rank * count.
void fillPattern(void* buf, size_t count, weftDataType_t type, uint64_t seed, size_t firstIndex);

// Reductions: rank's contribution to elements firstIndex .. firstIndex + count - 1.
void fillReduceInput(void* buf, size_t count, weftDataType_t type, weftRedOp_t op, int nranks,
                     int rank, uint64_t seed, size_t firstIndex);
// The reduction of all nranks contributions to those elements.
void fillReduceExpected(void* buf, size_t count, weftDataType_t type, weftRedOp_t op, int nranks,
                        uint64_t seed, size_t firstIndex);

// Elements (of eltSize bytes) whose bits differ.
int64_t countMismatches(const void* got, const void* want, size_t count, size_t eltSize);

// ---- Building blocks, exposed for tests ---------------------------------------------------------

// The integer that rank contributes to element index (before conversion to the type).
int64_t reduceInputValue(weftDataType_t type, weftRedOp_t op, int nranks, int rank, uint64_t seed,
                         uint64_t index);
// Stores an integer the type holds exactly (integers wrap as a cast does).
void storeInteger(void* dst, weftDataType_t type, int64_t value);
// Stores the average of nranks contributions whose exact sum is `sum`, rounded as weftAvg does.
void storeAverage(void* dst, weftDataType_t type, int64_t sum, int nranks);

}  // namespace weft::perf
