// The -h text of the *_perf tools: nccl-tests' usage lines, with what weft does with each flag.
#pragma once

namespace weft::perf {

void printUsage(const char* programName);

}  // namespace weft::perf
