// -M 1: nccl-tests' memory usage line. nccl-tests measures GPU memory (cudaMemGetInfo deltas) per
// GPU; a weft rank's buffers and the library's state live in host memory, so weft reports the
// process's resident memory at the same three points instead, and says so in the line's label.
#pragma once

#include <cstdint>
#include <string>

namespace weft::perf {

// The calling process's resident set (/proc/self/statm), in bytes; 0 where it cannot be read.
int64_t residentBytes();

// nccl-tests' form: B, KB, MB or GB (powers of 1024), 2 decimals below 10, 1 below 100, else 0.
std::string formatMemory(int64_t bytes);

// "# Host memory usage   : Initialization X | User-Allocated Y | Collective Z | Total  T"
void printMemoryReport(int64_t initialization, int64_t userAllocated, int64_t collective);

}  // namespace weft::perf
