// -J FILE: the results as nccl-tests 2.19 writes them (its JSON file version 3), so that tools
// reading nccl-tests' JSON read weft's: the same keys, nesting and value forms, including
// nccl-tests' quirks (booleans as the strings "true"/"false", the root as a padded string).
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "args.h"
#include "iteration_stats.h"
#include "report.h"

namespace weft::perf {

class JsonReport {
 public:
  JsonReport() = default;
  JsonReport(const JsonReport&) = delete;
  JsonReport& operator=(const JsonReport&) = delete;
  ~JsonReport();

  // Creates `path`, or path.0, path.1, ... when it exists (never overwrites), as nccl-tests does,
  // and prints which. False, with "# skipping json output" printed, when it cannot be created.
  bool open(const std::string& path);
  bool isOpen() const { return file_ != nullptr; }

  // The top-level fields before the preamble: version, start_time, args, env, nccl_version
  // (weft's library version in nccl-tests' field).
  void writeStart(const std::vector<std::string>& commandLine, int libraryVersion);
  // "config" with its "devices", then opens the "results" list.
  void writeConfig(const Options& options, const std::vector<RankInfo>& ranks);
  void beginRow(size_t bytes, size_t count, const char* typeName, const char* opName, int root);
  // wrong < 0: not checked (null).
  void writeVariant(bool outOfPlace, bool cpuTime, double timeUsec, double algBw, double busBw,
                    int64_t wrong);
  // -I 1: after a variant, "out_of_place_per_iter" or "in_place_per_iter": the summary (over the
  // iterations after `skipped`), every iteration's time and, with more than one process, each
  // process's (perProcess, empty otherwise), as nccl-tests writes them.
  void writeIterStats(bool outOfPlace, int skipped, const IterStats& stats,
                      const std::vector<double>& seconds,
                      const std::vector<std::vector<double>>& perProcess);
  void endRow(int iterations);
  // Closes "results", writes out_of_bounds, average_bus_bandwidth, errors, end_time; closes.
  void finish(int failedChecks, double avgBusBw, double minBw);

 private:
  void key(const char* name);
  void beforeValue();
  void beginObject();
  void endObject();
  void beginList();
  void endList();
  void string(const std::string& text);
  void writeQuoted(const std::string& text);  // no separator: for keys and string()
  void integer(long long value);
  void number(double value);
  void null();
  void microseconds(const std::vector<double>& seconds);  // a list, converted from seconds

  std::FILE* file_ = nullptr;
  // One entry per open object or list: whether it holds an element yet (a comma comes first).
  std::vector<bool> hasElement_;
  bool afterKey_ = false;
};

}  // namespace weft::perf
