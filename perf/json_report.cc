#include "json_report.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <ctime>
#include <utility>

extern char** environ;

#include "report.h"

namespace weft::perf {
namespace {

// Exclusive creation, as fopen "wx": a second run must not overwrite the first one's results.
std::FILE* createNew(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return nullptr;
  std::FILE* file = fdopen(fd, "w");
  if (file == nullptr) ::close(fd);
  return file;
}

}  // namespace

JsonReport::~JsonReport() {
  if (file_ != nullptr) std::fclose(file_);
}

bool JsonReport::open(const std::string& path) {
  std::string tryPath = path;
  for (int suffix = 0; (file_ = createNew(tryPath)) == nullptr; ++suffix) {
    if (errno != EEXIST) {
      std::printf("# skipping json output; %s not accessible\n", tryPath.c_str());
      return false;
    }
    tryPath = path + "." + std::to_string(suffix);
  }
  std::printf("# Writing JSON output to %s\n", tryPath.c_str());
  return true;
}

void JsonReport::writeStart(const std::vector<std::string>& commandLine, int libraryVersion) {
  beginObject();  // the top level, closed by finish()
  key("version");
  integer(3);
  key("start_time");
  string(localTimestamp());
  key("args");
  beginList();
  for (const std::string& arg : commandLine) string(arg);
  endList();
  key("env");
  beginList();
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) string(*entry);
  endList();
  key("nccl_version");
  integer(libraryVersion);
}

void JsonReport::writeConfig(const Options& o, const std::vector<RankInfo>& ranks) {
  key("config");
  beginObject();
  key("nthreads");
  integer(o.nThreads);
  key("ngpus");
  integer(o.nGpus);
  key("minimum_bytes");
  integer(static_cast<long long>(o.minBytes));
  key("maximum_bytes");
  integer(static_cast<long long>(o.maxBytes));
  if (o.stepFactor > 1) {
    key("step_factor");
    integer(static_cast<long long>(o.stepFactor));
  } else {
    key("step_bytes");
    integer(static_cast<long long>(o.stepBytes));
  }
  key("warmup_iters");
  integer(o.warmupIters);
  key("iterations");
  integer(o.iters);
  key("aggregated_iterations");
  integer(o.aggIters);
  key("validation");
  integer(o.check);
  key("graph");
  integer(0);
  // nccl-tests writes its booleans as strings.
  key("blocking_collectives");
  string(o.blocking ? "true" : "false");
  key("per_iter_timing");
  string(o.perIterTiming ? "true" : "false");
  key("per_iter_skip");
  integer(o.perIterSkip);
  key("parallel_init");
  string(o.parallelInit ? "true" : "false");
  key("devices");
  beginList();
  for (const RankInfo& r : ranks) {
    beginObject();
    key("rank");
    integer(r.rank);
    key("group");
    integer(0);
    key("pid");
    integer(r.pid);
    key("hostname");
    string(r.host);
    key("device");
    integer(r.device);
    // What the text report shows between the brackets and after them: a weft rank is a thread.
    key("device_hex");
    string("cpu");
    key("device_info");
    string("CPU");
    endObject();
  }
  endList();
  endObject();
  key("results");
  beginList();
}

void JsonReport::beginRow(size_t bytes, size_t count, const char* typeName, const char* opName,
                          int root) {
  beginObject();
  key("size");
  integer(static_cast<long long>(bytes));
  key("count");
  integer(static_cast<long long>(count));
  key("type");
  string(typeName);
  key("redop");
  string(opName);
  // The root as the text column shows it, padded to 6, as nccl-tests writes it.
  char rootText[16];
  std::snprintf(rootText, sizeof(rootText), "%6d", root);
  key("root");
  string(rootText);
}

void JsonReport::writeVariant(bool outOfPlace, bool cpuTime, double timeUsec, double algBw,
                              double busBw, int64_t wrong) {
  key(outOfPlace ? "out_of_place" : "in_place");
  beginObject();
  key(cpuTime ? "cpu_time" : "time");
  number(timeUsec);
  key("alg_bw");
  number(algBw);
  key("bus_bw");
  number(busBw);
  key("nwrong");
  if (wrong >= 0) {
    number(double(wrong));
  } else {
    null();
  }
  endObject();
}

void JsonReport::writeIterStats(bool outOfPlace, int skipped, const IterStats& stats,
                                const std::vector<double>& seconds,
                                const std::vector<std::vector<double>>& perProcess) {
  key(outOfPlace ? "out_of_place_per_iter" : "in_place_per_iter");
  beginObject();
  key("skipped_iterations");
  integer(skipped);
  const std::pair<const char*, double> summary[] = {
      {"min_us", stats.min * 1e6},     {"max_us", stats.max * 1e6},  {"avg_us", stats.avg * 1e6},
      {"p50_us", stats.p50 * 1e6},     {"p95_us", stats.p95 * 1e6},  {"p99_us", stats.p99 * 1e6},
      {"stdev_us", stats.stdev * 1e6}, {"cv_pct", stats.cvPercent()}};
  for (const auto& [name, value] : summary) {
    key(name);
    number(value);
  }
  key("times_us");
  microseconds(seconds);
  if (!perProcess.empty()) {
    key("per_process_max_times_us");
    beginList();
    for (const std::vector<double>& row : perProcess) microseconds(row);
    endList();
  }
  endObject();
}

void JsonReport::microseconds(const std::vector<double>& seconds) {
  beginList();
  for (double s : seconds) number(s * 1e6);
  endList();
}

void JsonReport::endRow(int iterations) {
  key("actual_iterations");
  integer(iterations);
  key("experiment_name");
  string("");
  endObject();
}

void JsonReport::finish(int failedChecks, double avgBusBw, double minBw) {
  endList();  // results
  key("out_of_bounds");
  beginObject();
  key("count");
  integer(failedChecks);
  key("okay");
  string(failedChecks == 0 ? "true" : "false");
  endObject();
  key("average_bus_bandwidth");
  beginObject();
  key("bandwidth");
  number(avgBusBw);
  key("okay");
  string(minBw < 0 ? "unchecked" : (avgBusBw >= 0.9 * minBw ? "true" : "false"));
  endObject();
  // A weft failure exits the tool before this point, so a finished run has no error to list.
  key("errors");
  beginList();
  endList();
  key("end_time");
  string(localTimestamp());
  endObject();
  std::fputc('\n', file_);
  std::fclose(file_);
  file_ = nullptr;
}

void JsonReport::key(const char* name) {
  beforeValue();
  writeQuoted(name);
  std::fputc(':', file_);
  afterKey_ = true;
}

void JsonReport::beforeValue() {
  if (afterKey_) {
    afterKey_ = false;
    return;
  }
  if (!hasElement_.empty()) {
    if (hasElement_.back()) std::fputc(',', file_);
    hasElement_.back() = true;
  }
}

void JsonReport::beginObject() {
  beforeValue();
  std::fputc('{', file_);
  hasElement_.push_back(false);
}

void JsonReport::endObject() {
  hasElement_.pop_back();
  std::fputc('}', file_);
}

void JsonReport::beginList() {
  beforeValue();
  std::fputc('[', file_);
  hasElement_.push_back(false);
}

void JsonReport::endList() {
  hasElement_.pop_back();
  std::fputc(']', file_);
}

void JsonReport::string(const std::string& text) {
  beforeValue();
  writeQuoted(text);
}

void JsonReport::writeQuoted(const std::string& text) {
  std::fputc('"', file_);
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      std::fputc('\\', file_);
      std::fputc(c, file_);
    } else if (c < 0x20) {
      std::fprintf(file_, "\\u%04x", c);
    } else {
      std::fputc(c, file_);
    }
  }
  std::fputc('"', file_);
}

void JsonReport::integer(long long value) {
  beforeValue();
  std::fprintf(file_, "%lld", value);
}

void JsonReport::number(double value) {
  beforeValue();
  // JSON has no NaN or infinity; nccl-tests writes NaN as a string, and so does weft for both.
  if (!std::isfinite(value)) {
    std::fprintf(file_, "\"%s\"", std::isnan(value) ? "nan" : (value > 0 ? "inf" : "-inf"));
  } else {
    std::fprintf(file_, "%f", value);
  }
}

void JsonReport::null() {
  beforeValue();
  std::fputs("null", file_);
}

}  // namespace weft::perf
