// weft_tune fit: fits the cost model's links and reduction speed to the measured lines of
// tuning tables (src/tune/model_fit.h) and reports, before and after, how far the model's
// predictions are from the measured times and how good its picks are (the measured time of the
// candidate it would choose over the fastest measured one). With three tables or more it also
// fits on all but one and scores the one left out: would one set of parameters serve a layout
// it was not fitted on?
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "tune/model_fit.h"
#include "weft_tune_cmds/tune_tool.h"

namespace weft_tune {
namespace {

using weft::tune::CostParams;
using weft::tune::MeasuredLayout;
using weft::tune::ModelScore;
using weft::tune::TableMeasurement;

struct FitOptions {
  std::vector<std::string> tables;
  int cores = 0;
  bool oneMachine = false;
  bool cells = false;  // print the model's pick at every size
  CostParams start;
};

[[noreturn]] void usage(const char* problem) {
  std::fprintf(stderr,
               "weft_tune fit: %s\n"
               "usage: weft_tune fit TABLE... [--cores N] [--one-machine] [--cells]\n"
               "           [--net 10Gbit,25us] [--shm 4GB/s,2us]\n"
               "Fits the model's links and reduction speed to the tables' measured all-reduce,\n"
               "broadcast and all-gather times (tables of several nodes), and reports the\n"
               "model's error and picks before and after. --cores and --one-machine describe\n"
               "where the tables were measured (as for predict); --net and --shm are the\n"
               "parameters to start from (the defaults otherwise).\n",
               problem);
  std::exit(2);
}

FitOptions parseOptions(int argc, char** argv) {
  FitOptions options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) usage((arg + " needs a value").c_str());
      return argv[++i];
    };
    if (arg == "--cores") {
      options.cores = std::atoi(value());
      if (options.cores < 1) usage("--cores must be >= 1");
    } else if (arg == "--one-machine") {
      options.oneMachine = true;
    } else if (arg == "--cells") {
      options.cells = true;
    } else if (arg == "--net" || arg == "--shm") {
      weft::tune::LinkCost& link = arg == "--net" ? options.start.net : options.start.shm;
      weft::Status status = weft::tune::parseLink(value(), &link);
      if (!status.isOk()) usage((arg + ": " + status.message()).c_str());
    } else if (arg == "-h" || arg == "--help") {
      usage("fits the cost model to measured tuning tables");
    } else if (!arg.empty() && arg[0] == '-') {
      usage(("unknown argument " + arg).c_str());
    } else {
      options.tables.push_back(arg);
    }
  }
  if (options.tables.empty()) usage("name at least one tuning table");
  return options;
}

MeasuredLayout loadTable(const std::string& path, const FitOptions& options) {
  weft::tune::TuningTable table;
  if (weft::Status read = readTuningTable(path, &table); !read.isOk()) {
    usage(read.message().c_str());
  }
  weft::topo::NodeLayout nodes;
  bool intraShm = true;
  if (!weft::tune::layoutFromFingerprint(table.layout, &nodes, &intraShm)) {
    usage((path + ": malformed layout line '" + table.layout + "'").c_str());
  }
  MeasuredLayout measured = weft::tune::measuredLayout(
      path, describedLayout(nodes, intraShm, options.start, options.cores, options.oneMachine),
      table);
  if (measured.cells.empty()) {
    usage((path + ": no measurements the model prices (one node, or no all-reduce, broadcast "
                  "or all-gather lines)")
              .c_str());
  }
  return measured;
}

void printPicks(const MeasuredLayout& measured, const CostParams& params) {
  weft::Layout layout = measured.layout;
  layout.params = params;
  for (const std::vector<TableMeasurement>& cell : measured.cells) {
    const auto [fastest, pick, picked] = weft::tune::pickInCell(cell, layout);
    char ratio[32] = "not measured";
    if (picked)
      std::snprintf(ratio, sizeof(ratio), "%.2fx", picked->medianMicros / fastest->medianMicros);
    std::printf("    %-10s %9zu  fastest %-36s %10.1f us  model %-36s %s\n",
                weft::collName(cell.front().coll), cell.front().bytes,
                weft::tune::choiceName(fastest->choice).c_str(), fastest->medianMicros,
                weft::tune::choiceName(pick).c_str(), ratio);
  }
}

std::string describeParams(const CostParams& params) {
  char text[160];
  std::snprintf(text, sizeof(text),
                "WEFT_TUNE_SHM=%.3gGB/s,%.3gus WEFT_TUNE_NET=%.3gGB/s,%.3gus, reduction %.3g GB/s",
                1e-3 / params.shm.betaMicrosPerByte, params.shm.alphaMicros,
                1e-3 / params.net.betaMicrosPerByte, params.net.alphaMicros,
                1e-3 / params.gammaMicrosPerByte);
  return text;
}

}  // namespace

int runFit(int argc, char** argv) {
  const FitOptions options = parseOptions(argc, argv);
  std::vector<MeasuredLayout> tables;
  tables.reserve(options.tables.size());
  for (const std::string& path : options.tables) tables.push_back(loadTable(path, options));
  std::vector<const MeasuredLayout*> all;
  all.reserve(tables.size());
  for (const MeasuredLayout& table : tables) all.push_back(&table);

  const CostParams fitted = weft::tune::fitModel(all, options.start);
  std::printf("# start:  %s\n# fitted: %s\n", describeParams(options.start).c_str(),
              describeParams(fitted).c_str());
  std::printf(
      "# error: |predicted / measured - 1| per candidate and size; picks: the measured\n"
      "# time of the model's choice over the fastest candidate's, per size\n");
  for (const MeasuredLayout& table : tables) {
    std::printf("%s\n", table.name.c_str());
    ModelScore before, after;
    weft::tune::scoreModel(table, options.start, &before);
    weft::tune::scoreModel(table, fitted, &after);
    std::printf("  %-8s %s\n", "start", before.summary().c_str());
    if (options.cells) printPicks(table, options.start);
    std::printf("  %-8s %s\n", "fitted", after.summary().c_str());
    if (options.cells) printPicks(table, fitted);
    if (tables.size() >= 3) {
      std::vector<const MeasuredLayout*> others;
      for (const MeasuredLayout* other : all) {
        if (other != &table) others.push_back(other);
      }
      ModelScore heldOut;
      weft::tune::scoreModel(table, weft::tune::fitModel(others, options.start), &heldOut);
      std::printf("  %-8s %s\n", "held out", heldOut.summary().c_str());
    }
  }
  std::printf("all tables\n  %-8s %s\n  %-8s %s\n", "start",
              weft::tune::scoreModel(all, options.start).summary().c_str(), "fitted",
              weft::tune::scoreModel(all, fitted).summary().c_str());
  return 0;
}

}  // namespace weft_tune
