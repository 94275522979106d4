// The text the *_perf tools print, in nccl-tests' layout so that its users' scripts and eyes
// keep working: preamble, per-rank device lines, the results table and the summary.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "args.h"

namespace weft::perf {

// One rank's identity for the "# Using devices" lines.
struct RankInfo {
  int rank = 0;
  int pid = 0;
  int device = 0;  // index among the ranks on the same host
  std::string host;
};

// value printed in `width` columns: with 2 decimals if that fits, else 1, else 0, else in
// exponent form (1 digit after the point from width 7 up, none below), as nccl-tests does.
std::string formatValue(double value, int width);

// Everything up to and including the table header. Rank 0 prints it once.
// `device` names rank 0's GPU with -k device (empty otherwise).
void printPreamble(const char* programName, int libraryVersion, const Options& options,
                   const std::vector<RankInfo>& ranks, const std::string& device);

// One table row: the prefix, then one variant for out-of-place and one for in-place, then the end.
void printRowPrefix(size_t bytes, size_t count, const char* typeName, const char* opName, int root);
// wrong < 0 prints "N/A" (checking off, or not defined for this variant).
void printRowVariant(double timeUsec, double algBw, double busBw, int64_t wrong);
// -S: the wall-clock time, after the in-place variant.
void printTimestamp();
// Now, in local time, as nccl-tests prints it ("2026-12-01 23:04:12").
std::string localTimestamp();
void printRowEnd();

// "Out of bounds values", "Avg bus bandwidth" (checked against minBw when it is >= 0), and the
// closing lines.
void printSummary(const char* programName, int failedChecks, double avgBusBw, double minBw);

}  // namespace weft::perf
