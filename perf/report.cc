#include "report.h"

#include <cstdio>
#include <ctime>

#include "weft/weft.h"

namespace weft::perf {
namespace {

constexpr const char* kTestsVersion = WEFT_VERSION_STRING;
// -S: nccl-tests' timestamp form (local time).
constexpr const char* kTimestampFormat = "%Y-%m-%d %H:%M:%S";

// Partial lines are flushed at once so that a slow size shows its progress, as nccl-tests does.
void flushOut() {
  std::fflush(stdout);
}

// -I 1: the table header with the four summary columns after each variant, as nccl-tests.
void printIterHeader(const char* time, int stampWidth, const char* stampLabel,
                     const char* stampFormat) {
  std::printf(
      "# %10s  %12s  %8s  %6s  %6s              out-of-place (+ per-iteration)"
      "                                in-place (+ per-iteration)\n",
      "", "", "", "", "");
  const char* row =
      "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %7s  %7s  %7s"
      "  %7s  %6s  %6s  %6s  %7s  %7s  %7s  %7s %*s\n";
  std::printf(row, "size", "count", "type", "redop", "root", time, "algbw", "busbw", "#wrong",
              "i_min", "i_max", "i_p99", "i_cv%", time, "algbw", "busbw", "#wrong", "i_min",
              "i_max", "i_p99", "i_cv%", stampWidth, stampLabel);
  std::printf(row, "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(us)",
              "(us)", "(%)", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(us)", "(us)", "(%)",
              stampWidth, stampFormat);
}

}  // namespace

std::string formatValue(double value, int width) {
  char text[64];
  for (int decimals = 2; decimals >= 0; --decimals) {
    if (std::snprintf(text, sizeof(text), "%*.*f", width, decimals, value) <= width) return text;
  }
  std::snprintf(text, sizeof(text), width >= 7 ? "%*.1e" : "%*.0e", width, value);
  return text;
}

void printPreamble(const char* programName, int libraryVersion, const Options& o,
                   const std::vector<RankInfo>& ranks, const std::string& device) {
  std::printf("# weft-tests version %s weft-headers=%d weft-library=%d\n", kTestsVersion,
              WEFT_VERSION_CODE, libraryVersion);
  std::printf("# Collective test starting: %s\n", programName);
  const bool geometric = o.stepFactor > 1;
  std::printf(
      "# nThread %d nGpus %d minBytes %zu maxBytes %zu step: %zu(%s) warmup iters: %d iters: %d "
      "agg iters: %d validation: %d graph: 0 unalign: %d\n",
      o.nThreads, o.nGpus, o.minBytes, o.maxBytes, geometric ? o.stepFactor : o.stepBytes,
      geometric ? "factor" : "bytes", o.warmupIters, o.iters, o.aggIters, o.check, o.unalign);
  if (o.blocking == 1) {
    std::printf("# Blocking Enabled: wait and barrier after each inner iteration (-m) \n");
  } else if (o.blocking == 2) {
    std::printf("# Blocking Enabled: wait after each inner iteration (-m), no barrier \n");
  } else if (o.blocking == 3) {
    std::printf(
        "# Blocking Enabled: wait and barrier after each outer iteration (-n); time excludes "
        "barrier \n");
  }
  if (o.localRegister == 1) {
    std::printf(
        "# Local Registration Enabled (-R 1): send/recv buffers from weftMemAlloc, registered "
        "with weftCommRegister \n");
  } else if (o.localRegister == 2) {
    std::printf(
        "# Symmetric Registration Enabled (-R 2): send/recv buffers from weftMemAlloc, "
        "registered with weftCommWindowRegister(WEFT_WIN_COLL_SYMMETRIC) \n");
  }
  if (o.perIterTiming) {
    // nccl-tests' line, with weft's clock in place of its CUDA events.
    std::printf("# Per-Iteration Report: host clock timing; i_* uses max over process rows");
    if (o.perIterSkip) std::printf("; summary skips first %d iterations", o.perIterSkip);
    std::printf(" \n");
  }
  std::printf("#\n# Using devices\n");
  for (const RankInfo& r : ranks) {
    std::printf("#  Rank %2d Group %2d Pid %6d on %10s device %2d [cpu] CPU\n", r.rank, 0, r.pid,
                r.host.c_str(), r.device);
  }
  if (o.deviceMemory) {
    std::printf("#  Buffers in device memory, rank 0 on %s (rank r on GPU r %% count), %s calls\n",
                device.c_str(), o.onStream ? "stream-ordered" : "blocking/request");
  }

  const char* time = o.reportCpuTime ? "cputime" : "time";
  // -S: a last column, its label over the timestamp format, as nccl-tests heads it.
  const int stampWidth = o.reportTimestamps ? 19 : 0;
  const char* stampLabel = o.reportTimestamps ? "timestamp" : "";
  const char* stampFormat = o.reportTimestamps ? kTimestampFormat : "";
  std::printf("#\n");
  if (o.perIterTiming) {
    printIterHeader(time, stampWidth, stampLabel, stampFormat);
    flushOut();
    return;
  }
  std::printf(
      "# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place"
      "          \n",
      "", "", "", "", "");
  std::printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s %*s\n", "size",
              "count", "type", "redop", "root", time, "algbw", "busbw", "#wrong", time, "algbw",
              "busbw", "#wrong", stampWidth, stampLabel);
  std::printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s %*s\n", "(B)",
              "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)",
              "", stampWidth, stampFormat);
  flushOut();
}

void printRowPrefix(size_t bytes, size_t count, const char* typeName, const char* opName,
                    int root) {
  std::printf("%12zu  %12zu  %8s  %6s  %6d", bytes, count, typeName, opName, root);
  flushOut();
}

void printRowVariant(double timeUsec, double algBw, double busBw, int64_t wrong) {
  const std::string time = formatValue(timeUsec, 7);
  const std::string alg = formatValue(algBw, 6);
  const std::string bus = formatValue(busBw, 6);
  if (wrong >= 0) {
    std::printf("  %7s  %6s  %6s  %6g", time.c_str(), alg.c_str(), bus.c_str(), double(wrong));
  } else {
    std::printf("  %7s  %6s  %6s    N/A", time.c_str(), alg.c_str(), bus.c_str());
  }
  flushOut();
}

std::string localTimestamp() {
  char text[64];
  const std::time_t seconds = std::time(nullptr);
  std::tm local{};
  localtime_r(&seconds, &local);
  std::strftime(text, sizeof(text), kTimestampFormat, &local);
  return text;
}

void printTimestamp() {
  std::printf("%21s", localTimestamp().c_str());
}

void printRowEnd() {
  std::printf("\n");
  flushOut();
}

void printSummary(const char* programName, int failedChecks, double avgBusBw, double minBw) {
  std::printf("# %-20s : %d %s\n", "Out of bounds values", failedChecks,
              failedChecks ? "FAILED" : "OK");
  const char* verdict = minBw < 0 ? "" : (avgBusBw < 0.9 * minBw ? "FAILED" : "OK");
  std::printf("# %-20s : %g %s\n", "Avg bus bandwidth", avgBusBw, verdict);
  std::printf("#\n");
  std::printf("# Collective test concluded: %s\n", programName);
  flushOut();
}

}  // namespace weft::perf
