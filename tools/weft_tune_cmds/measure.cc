// weft_tune measure: run as every rank of a job (weftrun, mpirun, mpiexec, srun or torchrun:
// whatever weftCommInitFromEnv reads). On the job's own communicator it times every candidate
// algorithm for each collective across a size sweep, in alternating rounds, and writes the
// tuning table that later jobs of the same layout load at init (docs/TUNING.md).
//
// Every rank takes part in every timing and every figure is the slowest rank's mean, reduced
// across ranks, so all ranks hold the same numbers and would write the same table; rank 0
// writes it.
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <sstream>
#include <vector>

#include "core/comm.h"
#include "tune/contenders.h"
#include "tune/model_fit.h"
#include "tune/table_search.h"
#include "weft/weft.h"
#include "weft_tune_cmds/tune_tool.h"

namespace weft_tune {
namespace {

using weft::tune::AlgoChoice;
using weft::tune::TableMeasurement;

struct MeasureOptions {
  std::vector<CollType> colls = {CollType::kAllReduce,     CollType::kBroadcast,
                                 CollType::kReduce,        CollType::kAllGather,
                                 CollType::kReduceScatter, CollType::kAlltoAll};
  size_t minBytes = 16;
  size_t maxBytes = size_t{64} << 20;
  size_t factor = 4;
  int rounds = 3;
  double targetMillis = 20;  // per candidate and round
  double pruneFactor = 3;    // after the first round, drop candidates this much slower
  int settleRounds = 4;      // at most this many more rounds for candidates too close to call
  // Slices timed besides the communicator's own for the algorithms that pipeline, where they
  // cut the call differently (sliceVariants).
  std::vector<size_t> slices = {size_t{128} << 10, size_t{2} << 20};
  std::string out;  // "" = the user's tuning directory
};

[[noreturn]] void usage(const char* problem) {
  std::fprintf(
      stderr,
      "weft_tune measure: %s\n"
      "usage: <launcher> weft_tune measure [--colls allreduce,broadcast,...] [--min 16]\n"
      "           [--max 64M] [--factor 4] [--rounds 3] [--target-ms 20] [--prune 3]\n"
      "           [--settle 4] [--slices 128K,2M|none] [--out FILE]\n"
      "Run as every rank of the job whose layout should be measured. Sizes are the\n"
      "buffers nccl-tests would report (all-gather: the gathered buffer). Algorithms that\n"
      "pipeline are also timed with each --slices size where it cuts the call otherwise\n"
      "than WEFT_SLICE_BYTES does. The table goes to FILE or to the first directory of\n"
      "the default search path.\n",
      problem);
  std::exit(2);
}

MeasureOptions parseOptions(int argc, char** argv) {
  MeasureOptions options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) usage((arg + " needs a value").c_str());
      return argv[++i];
    };
    if (arg == "--colls") {
      options.colls.clear();
      std::stringstream names(value());
      std::string name;
      while (std::getline(names, name, ',')) {
        CollType coll;
        if (!collFromName(name, &coll) || coll == CollType::kGather || coll == CollType::kScatter ||
            coll == CollType::kBarrier || weft::isPointToPoint(coll)) {
          usage(("--colls: cannot measure '" + name + "'").c_str());
        }
        options.colls.push_back(coll);
      }
    } else if (arg == "--min") {
      options.minBytes = parseBytes(value(), usage);
    } else if (arg == "--max") {
      options.maxBytes = parseBytes(value(), usage);
    } else if (arg == "--factor") {
      options.factor = parseBytes(value(), usage);
    } else if (arg == "--rounds") {
      options.rounds = std::atoi(value());
    } else if (arg == "--target-ms") {
      options.targetMillis = std::atof(value());
    } else if (arg == "--prune") {
      options.pruneFactor = std::atof(value());
    } else if (arg == "--settle") {
      options.settleRounds = std::atoi(value());
    } else if (arg == "--slices") {
      options.slices.clear();
      const std::string list = value();
      std::stringstream sizes(list == "none" ? "" : list);
      std::string size;
      while (std::getline(sizes, size, ',')) {
        size_t bytes = 0;
        if (!weft::tune::parseSliceSize(size, &bytes)) {
          usage(("--slices: bad slice '" + size + "' (64 to 1G bytes, e.g. 128K)").c_str());
        }
        options.slices.push_back(bytes);
      }
    } else if (arg == "--out") {
      options.out = value();
    } else if (arg == "-h" || arg == "--help") {
      usage("times every candidate algorithm on this job's layout");
    } else {
      usage(("unknown argument " + arg).c_str());
    }
  }
  if (options.rounds < 1) usage("--rounds must be >= 1");
  if (options.factor < 2) usage("--factor must be >= 2");
  if (!(options.targetMillis > 0)) usage("--target-ms must be > 0");
  if (!(options.pruneFactor >= 1)) usage("--prune must be >= 1");
  if (options.settleRounds < 0) usage("--settle must be >= 0");
  if (options.minBytes < 4 || options.minBytes > options.maxBytes)
    usage("need 4 <= --min <= --max");
  return options;
}

void check(weftResult_t result, weftComm_t comm, const char* what) {
  if (result == weftSuccess) return;
  std::fprintf(stderr, "weft_tune measure: %s: %s (%s)\n", what, weftGetErrorString(result),
               comm ? weftGetLastError(comm) : "");
  std::exit(1);
}

// The element count of a call whose buffers nccl-tests would report as `bytes` (float32).
size_t countFor(CollType coll, size_t bytes, int nranks) {
  const size_t elements = bytes / sizeof(float);
  switch (coll) {
    case CollType::kAllGather:
    case CollType::kReduceScatter:
    case CollType::kAlltoAll:
      return elements / nranks;
    default:
      return elements;
  }
}

struct Job {
  weftComm_t comm = nullptr;
  int rank = 0;
  int nranks = 1;
  float* send = nullptr;
  float* recv = nullptr;
};

weftResult_t callOnce(const Job& job, CollType coll, size_t count) {
  switch (coll) {
    case CollType::kAllReduce:
      return weftAllReduce(job.send, job.recv, count, weftFloat32, weftSum, job.comm, nullptr);
    case CollType::kBroadcast:
      return weftBroadcast(job.send, job.recv, count, weftFloat32, 0, job.comm, nullptr);
    case CollType::kReduce:
      return weftReduce(job.send, job.recv, count, weftFloat32, weftSum, 0, job.comm, nullptr);
    case CollType::kAllGather:
      return weftAllGather(job.send, job.recv, count, weftFloat32, job.comm, nullptr);
    case CollType::kReduceScatter:
      return weftReduceScatter(job.send, job.recv, count, weftFloat32, weftSum, job.comm, nullptr);
    case CollType::kAlltoAll:
      return weftAlltoAll(job.send, job.recv, count, weftFloat32, job.comm, nullptr);
    default:
      return weftInvalidArgument;
  }
}

// The slowest rank's value, with the library's default choices (the overrides are cleared
// first, so the reduction itself never runs a candidate under test).
double slowest(const Job& job, double mine) {
  check(weft::replaceAlgoOverrides(job.comm, weft::AlgoOverrides{}).isOk() ? weftSuccess
                                                                           : weftInternalError,
        job.comm, "restoring the default choices");
  double all = 0;
  check(weftAllReduce(&mine, &all, 1, weftFloat64, weftMax, job.comm, nullptr), job.comm,
        "reducing a timing");
  return all;
}

// Mean microseconds per call over `iterations` calls, the slowest rank's.
double timeCalls(const Job& job, CollType coll, size_t count, int iterations,
                 const std::string& label) {
  check(weftBarrier(job.comm, nullptr), job.comm, "barrier");
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < iterations; ++i) check(callOnce(job, coll, count), job.comm, label.c_str());
  const std::chrono::duration<double, std::micro> elapsed =
      std::chrono::steady_clock::now() - start;
  return elapsed.count() / iterations;
}

void force(const Job& job, CollType coll, const AlgoChoice& choice) {
  weft::AlgoOverrides overrides;
  overrides.byColl[static_cast<int>(coll)] = choice;
  weft::Status status = weft::replaceAlgoOverrides(job.comm, overrides);
  if (!status.isOk()) {
    std::fprintf(stderr, "weft_tune measure: forcing %s: %s\n",
                 weft::tune::choiceName(choice).c_str(), status.message().c_str());
    std::exit(1);
  }
}

struct Timed {
  AlgoChoice choice;
  std::vector<double> samples;
};

using weft::tune::medianOf;

// One timing of each of `which` (indices into timed), in forward or reverse order.
void timeRound(const Job& job, CollType coll, size_t count, int iterations,
               std::vector<Timed>& timed, const std::vector<size_t>& which, bool reverse) {
  for (size_t k = 0; k < which.size(); ++k) {
    Timed& entry = timed[which[reverse ? which.size() - 1 - k : k]];
    const std::string label = weft::tune::choiceName(entry.choice);
    force(job, coll, entry.choice);
    check(callOnce(job, coll, count), job.comm, label.c_str());
    const double mine = timeCalls(job, coll, count, iterations, label);
    entry.samples.push_back(slowest(job, mine));
  }
}

// One size's measurements, and those that compete for its rule: all but the slice variants
// whose timings do not stand clear below their algorithm's own slice (a slice that measures the
// same within the noise keeps WEFT_SLICE_BYTES).
struct Cell {
  std::vector<TableMeasurement> measured;
  std::vector<TableMeasurement> contest;
};

// Every candidate for one collective and size, in alternating rounds.
Cell measureCell(const Job& job, const MeasureOptions& options, CollType coll, size_t count) {
  const weft::Layout& layout = job.comm->layout;
  const size_t callBytes = count * sizeof(float);
  std::vector<Timed> timed;
  weft::CollArgs args;
  args.coll = coll;
  args.type = weftFloat32;
  args.count = count;
  const size_t messageBytes = weft::callSizes(args, layout.nranks).message;
  for (const AlgoChoice& choice : weft::runnableChoices(coll, callBytes, layout)) {
    timed.push_back({choice, {}});
    for (const AlgoChoice& variant : weft::sliceVariants(
             choice, messageBytes, layout, job.comm->config.sliceBytes, options.slices)) {
      timed.push_back({variant, {}});
    }
  }
  // The iteration count: enough calls of the default choice to fill the target time.
  weft::replaceAlgoOverrides(job.comm, weft::AlgoOverrides{}).isOk();
  check(callOnce(job, coll, count), job.comm, "warm-up");
  const double probe = slowest(job, timeCalls(job, coll, count, 2, "probe"));
  const int iterations = static_cast<int>(
      std::clamp(options.targetMillis * 1000 / std::max(probe, 0.05), 1.0, 100000.0));

  for (int round = 0; round < options.rounds; ++round) {
    double best = 0;
    for (const Timed& entry : timed) {
      if (!entry.samples.empty() && (best == 0 || entry.samples.front() < best)) {
        best = entry.samples.front();
      }
    }
    std::vector<size_t> kept;
    for (size_t k = 0; k < timed.size(); ++k) {
      if (round == 0 || timed[k].samples.front() <= options.pruneFactor * best) kept.push_back(k);
    }
    // Alternate the order so that drift over a round does not favour one candidate.
    timeRound(job, coll, count, iterations, timed, kept, round % 2 != 0);
  }
  // Rivals whose timings still overlap the leader's get more rounds, alone, until one stands
  // clear. Every rank holds the same (slowest-rank) timings, so all make the same choices.
  for (int extra = 0; extra < options.settleRounds; ++extra) {
    std::vector<std::vector<double>> samples;
    for (const Timed& entry : timed) samples.push_back(entry.samples);
    const std::vector<size_t> close = weft::tune::closeContenders(samples);
    if (close.empty()) break;
    timeRound(job, coll, count, iterations, timed, close, (options.rounds + extra) % 2 != 0);
  }
  std::vector<AlgoChoice> choices;
  std::vector<std::vector<double>> samples;
  for (const Timed& entry : timed) {
    choices.push_back(entry.choice);
    samples.push_back(entry.samples);
  }
  const std::vector<bool> mayTakeRule = weft::tune::mayTakeRule(choices, samples);
  Cell cell;
  for (size_t k = 0; k < timed.size(); ++k) {
    const Timed& entry = timed[k];
    TableMeasurement measured;
    measured.coll = coll;
    measured.bytes = callBytes;
    measured.choice = entry.choice;
    measured.medianMicros = medianOf(entry.samples);
    const auto [low, high] = std::minmax_element(entry.samples.begin(), entry.samples.end());
    measured.spreadPercent = 100 * (*high - *low) / measured.medianMicros;
    measured.rounds = static_cast<int>(entry.samples.size());
    cell.measured.push_back(measured);
    if (mayTakeRule[k]) cell.contest.push_back(measured);
  }
  return cell;
}

std::string defaultOutput(const std::string& fingerprint) {
  uint64_t hash = 14695981039346656037ull;
  for (unsigned char c : fingerprint) hash = (hash ^ c) * 1099511628211ull;
  char name[48];
  std::snprintf(name, sizeof(name), "/layout-%016" PRIx64 ".txt", hash);
  return weft::tune::defaultTableDirectories().front() + name;
}

void makeParents(const std::string& path) {
  for (size_t slash = path.find('/', 1); slash != std::string::npos;
       slash = path.find('/', slash + 1)) {
    mkdir(path.substr(0, slash).c_str(), 0755);
  }
}

std::string nowText() {
  std::time_t now = std::time(nullptr);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  return text;
}

// Prediction errors (predicted / measured - 1) of the modelled candidates, for the summary.
struct ModelErrors {
  std::vector<double> relative;
  void add(const TableMeasurement& entry, const weft::Layout& layout) {
    const double micros = weft::tune::predictMeasured(entry, layout);
    if (micros > 0 && entry.medianMicros > 0) relative.push_back(micros / entry.medianMicros - 1);
  }
  void print() const {
    if (relative.empty()) {
      std::printf("# model: no modelled candidates here (one node keeps its size rules)\n");
      return;
    }
    std::vector<double> magnitude;
    size_t within = 0;
    for (double error : relative) {
      magnitude.push_back(std::fabs(error));
      within += std::fabs(error) <= 0.25;
    }
    std::printf(
        "# model error |predicted / measured - 1| over %zu modelled cells: median %.0f%%, "
        "within 25%% in %zu (%.0f%%), worst %.0f%%\n",
        relative.size(), 100 * medianOf(magnitude), within, 100.0 * within / relative.size(),
        100 * *std::max_element(magnitude.begin(), magnitude.end()));
  }
};

void printCell(const std::vector<TableMeasurement>& cell, const weft::Layout& layout) {
  const weft::tune::CellPick cellPick = weft::tune::pickInCell(cell, layout);
  const TableMeasurement* best = cellPick.fastest;
  std::printf("%-14s %10zu  %-40s %10.1f us (spread %.1f%%)", weft::collName(best->coll),
              best->bytes, weft::tune::choiceName(best->choice).c_str(), best->medianMicros,
              best->spreadPercent);
  const double bestPredicted = weft::tune::predictMeasured(*best, layout);
  if (bestPredicted > 0) std::printf(" predicted %.1f", bestPredicted);
  // The model's pick for comparison, where it was measured.
  if (const TableMeasurement* picked = cellPick.picked) {
    std::printf("  model: %s %.2fx", weft::tune::choiceName(picked->choice).c_str(),
                picked->medianMicros / best->medianMicros);
  }
  std::printf("\n");
  std::fflush(stdout);
}

}  // namespace

int runMeasure(int argc, char** argv) {
  const MeasureOptions options = parseOptions(argc, argv);
  Job job;
  check(weftCommInitFromEnv(&job.comm, nullptr), nullptr, "weftCommInitFromEnv");
  check(weftCommUserRank(job.comm, &job.rank), job.comm, "rank");
  check(weftCommCount(job.comm, &job.nranks), job.comm, "size");
  std::vector<float> send(options.maxBytes / sizeof(float) + 1, 1.0f);
  std::vector<float> recv(options.maxBytes / sizeof(float) + 1, 0.0f);
  job.send = send.data();
  job.recv = recv.data();
  const std::string fingerprint = job.comm->tuneFingerprint;
  if (job.rank == 0) {
    std::string slices;
    for (size_t slice : options.slices)
      slices += (slices.empty() ? "" : ",") + weft::sizeName(slice);
    std::printf(
        "# weft_tune measure: layout '%s'; %d rounds, %.0f ms per candidate and round; slices "
        "%s besides %s\n",
        fingerprint.c_str(), options.rounds, options.targetMillis,
        slices.empty() ? "none" : slices.c_str(),
        weft::sizeName(job.comm->config.sliceBytes).c_str());
    std::printf("# %-12s %10s  %-40s %10s\n", "collective", "bytes", "fastest", "median");
  }

  weft::tune::TuningTable table;
  table.layout = fingerprint;
  ModelErrors errors;
  std::vector<TableMeasurement> contest;
  for (CollType coll : options.colls) {
    for (size_t bytes = options.minBytes; bytes <= options.maxBytes; bytes *= options.factor) {
      const size_t count = countFor(coll, bytes, job.nranks);
      if (count > 0) {
        const Cell cell = measureCell(job, options, coll, count);
        if (job.rank == 0) printCell(cell.contest, job.comm->layout);
        for (const TableMeasurement& entry : cell.measured) errors.add(entry, job.comm->layout);
        table.measured.insert(table.measured.end(), cell.measured.begin(), cell.measured.end());
        contest.insert(contest.end(), cell.contest.begin(), cell.contest.end());
      }
      if (bytes > options.maxBytes / options.factor) break;
    }
  }
  table.rules = weft::tune::rulesFromMeasurements(contest);
  if (job.rank == 0) errors.print();
  table.comments = {"# weft tuning table (docs/TUNING.md \"Tuning tables\")",
                    "# measured by weft_tune measure on " + nowText() + ", " +
                        std::to_string(options.rounds) + " rounds of " +
                        std::to_string(static_cast<int>(options.targetMillis)) +
                        " ms per candidate; host of rank 0: " + job.comm->peers[0].hostName};

  int status = 0;
  if (job.rank == 0) {
    const std::string path = options.out.empty() ? defaultOutput(fingerprint) : options.out;
    makeParents(path);
    std::ofstream file(path);
    file << weft::tune::formatTuningTable(table);
    file.close();
    if (!file) {
      std::fprintf(stderr, "weft_tune measure: cannot write %s\n", path.c_str());
      status = 1;
    } else {
      std::printf("# wrote %s (%zu rules, table hash %016" PRIx64 ")\n", path.c_str(),
                  table.rules.size(), table.hash());
    }
  }
  check(weftCommDestroy(job.comm), nullptr, "weftCommDestroy");
  return status;
}

}  // namespace weft_tune
