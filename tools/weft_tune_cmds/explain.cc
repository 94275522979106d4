// weft_tune explain: for one collective and size, the candidates with the model's prediction
// and (where a tuning table is given) the measured times, the choice, and why it won.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "tune/tuning_table.h"
#include "weft_tune_cmds/tune_tool.h"

namespace weft_tune {
namespace {

using weft::tune::AlgoChoice;
using weft::tune::TableMeasurement;

struct ExplainOptions {
  CollType coll = CollType::kAllReduce;
  size_t bytes = 0;
  std::string tableFile;
  std::string hosts;
  int nodes = 0;
  int perNode = 0;
  bool interleave = false;
  int cores = 0;
  bool oneMachine = false;
  weft::tune::CostParams params;
};

[[noreturn]] void usage(const char* problem) {
  std::fprintf(stderr,
               "weft_tune explain: %s\n"
               "usage: weft_tune explain --coll allreduce --bytes 256K [--table FILE]\n"
               "           [--nodes N --ppn P [--interleave] | --hosts AABBC]\n"
               "           [--net 1Gbit,50us] [--shm 4GB/s,2us] [--cores N] [--one-machine]\n"
               "--bytes is the call's count in bytes (as WEFT_ALGO's ranges). With --table the\n"
               "layout comes from the table unless given.\n",
               problem);
  std::exit(2);
}

ExplainOptions parseOptions(int argc, char** argv) {
  ExplainOptions options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) usage((arg + " needs a value").c_str());
      return argv[++i];
    };
    if (arg == "--coll") {
      if (!collFromName(value(), &options.coll)) usage("--coll: unknown collective");
    } else if (arg == "--bytes") {
      options.bytes = parseBytes(value(), usage);
    } else if (arg == "--table") {
      options.tableFile = value();
    } else if (arg == "--hosts") {
      options.hosts = value();
    } else if (arg == "--nodes") {
      options.nodes = std::atoi(value());
    } else if (arg == "--ppn") {
      options.perNode = std::atoi(value());
    } else if (arg == "--interleave") {
      options.interleave = true;
    } else if (arg == "--cores") {
      options.cores = std::atoi(value());
    } else if (arg == "--one-machine") {
      options.oneMachine = true;
    } else if (arg == "--net" || arg == "--shm") {
      weft::tune::LinkCost& link = arg == "--net" ? options.params.net : options.params.shm;
      weft::Status status = weft::tune::parseLink(value(), &link);
      if (!status.isOk()) usage(status.message().c_str());
    } else if (arg == "-h" || arg == "--help") {
      usage("why an algorithm wins");
    } else {
      usage(("unknown argument " + arg).c_str());
    }
  }
  if (options.bytes == 0) usage("--bytes is required");
  return options;
}

// The measured size nearest to `bytes` on a log scale, among the collective's measurements.
size_t nearestMeasured(const weft::tune::TuningTable& table, CollType coll, size_t bytes) {
  size_t nearest = 0;
  double distance = 0;
  for (const TableMeasurement& entry : table.measured) {
    if (entry.coll != coll) continue;
    const double d = std::fabs(std::log(static_cast<double>(entry.bytes) / bytes));
    if (nearest == 0 || d < distance) {
      nearest = entry.bytes;
      distance = d;
    }
  }
  return nearest;
}

const TableMeasurement* measuredFor(const std::vector<TableMeasurement>& cell,
                                    const AlgoChoice& choice) {
  for (const TableMeasurement& entry : cell) {
    if (entry.choice == choice) return &entry;
  }
  return nullptr;
}

}  // namespace

int runExplain(int argc, char** argv) {
  const ExplainOptions options = parseOptions(argc, argv);
  weft::tune::TuningTable table;
  bool haveTable = false;
  if (!options.tableFile.empty()) {
    weft::Status parsed = readTuningTable(options.tableFile, &table);
    if (!parsed.isOk()) usage(parsed.message().c_str());
    haveTable = true;
  }
  weft::topo::NodeLayout nodes;
  bool intraShm = true;
  if (!options.hosts.empty()) {
    std::vector<uint64_t> hostIds;
    for (char host : options.hosts) hostIds.push_back(static_cast<uint64_t>(host));
    nodes = weft::topo::buildNodeLayout(hostIds);
  } else if (options.nodes > 0 && options.perNode > 0) {
    nodes = weft::topo::describedNodeLayout(options.nodes, options.perNode, options.interleave);
  } else if (!haveTable || !weft::tune::layoutFromFingerprint(table.layout, &nodes, &intraShm)) {
    usage("describe the layout (--nodes/--ppn or --hosts) or give a --table");
  }
  weft::Layout layout =
      describedLayout(nodes, intraShm, options.params, options.cores, options.oneMachine);
  const std::string network =
      haveTable && table.layout.find("net=rdma") != std::string::npos ? "rdma" : "tcp";
  const std::string fingerprint = weft::tune::layoutFingerprint(nodes, intraShm, network);
  if (haveTable && table.layout != fingerprint) {
    std::printf("the table %s is for '%s', not '%s': a job of this layout refuses it.\n\n",
                options.tableFile.c_str(), table.layout.c_str(), fingerprint.c_str());
    haveTable = false;
  }

  weft::CollArgs args;
  args.coll = options.coll;
  args.type = weftUint8;
  args.count = options.bytes;
  const size_t modelBytes = weft::callSizes(args, layout.nranks).message;
  weft::Layout modelOnly = layout;
  const weft::Plan modelPlan = weft::choosePlan(args, modelOnly, weft::AlgoOverrides{}, 512 * 1024);
  if (haveTable) layout.table = std::make_shared<weft::tune::TuningTable>(table);
  const weft::Plan plan = weft::choosePlan(args, layout, weft::AlgoOverrides{}, 512 * 1024);

  const size_t measuredBytes = haveTable ? nearestMeasured(table, options.coll, options.bytes) : 0;
  std::vector<TableMeasurement> cell;
  for (const TableMeasurement& entry : table.measured) {
    if (haveTable && entry.coll == options.coll && entry.bytes == measuredBytes)
      cell.push_back(entry);
  }
  std::printf("%s of %s on '%s'\n", weft::collName(options.coll), sizeText(options.bytes).c_str(),
              fingerprint.c_str());
  std::printf("%-40s %14s %14s\n", "candidate", "predicted us",
              cell.empty() ? "measured us" : ("measured at " + sizeText(measuredBytes)).c_str());
  // Every runnable choice, and the slice variants the table measured.
  std::vector<AlgoChoice> listed = weft::runnableChoices(options.coll, options.bytes, layout);
  for (const TableMeasurement& entry : cell) {
    if (std::find(listed.begin(), listed.end(), entry.choice) == listed.end()) {
      listed.push_back(entry.choice);
    }
  }
  for (const AlgoChoice& choice : listed) {
    const size_t slice = choice.sliceBytes != 0 ? choice.sliceBytes : 512 * 1024;
    const double predicted =
        weft::tune::predictMicros(layout.params, layout.cost, options.coll, choice.algo,
                                  choice.inner.value_or(choice.algo), modelBytes, slice);
    const TableMeasurement* measured = measuredFor(cell, choice);
    char predictedText[32] = "-", measuredText[48] = "-";
    if (predicted >= 0 && layout.nodes.nodes() > 1) {
      std::snprintf(predictedText, sizeof(predictedText), "%.1f", predicted);
    }
    if (measured) {
      std::snprintf(measuredText, sizeof(measuredText), "%.1f (%.0f%%)", measured->medianMicros,
                    measured->spreadPercent);
    }
    std::printf("%-40s %14s %14s\n", weft::tune::choiceName(choice).c_str(), predictedText,
                measuredText);
  }

  AlgoChoice chosen{plan.algo, std::nullopt, plan.namedSliceBytes};
  if (isTwoLevel(plan.algo)) {
    chosen.inner = plan.inner;
  }
  std::printf("\nchoice: %s\n", weft::tune::choiceName(chosen).c_str());
  if (plan.fromTable) {
    const weft::tune::TableRule* rule = table.ruleFor(options.coll, options.bytes);
    std::printf("why: the table's rule for %s up to %s: it measured fastest",
                sizeText(rule->minBytes).c_str(),
                rule->maxBytes == SIZE_MAX ? "any size" : sizeText(rule->maxBytes).c_str());
    const TableMeasurement* winner = measuredFor(cell, rule->choice);
    // Slice variants faster than the winner by the median did not stand clear of their own
    // algorithm's slice (weft_tune measure keeps the communicator's slice then); named apart.
    const TableMeasurement* second = nullptr;
    std::vector<const TableMeasurement*> unproven;
    for (const TableMeasurement& entry : cell) {
      if (&entry == winner) continue;
      if (winner && entry.choice.sliceBytes != 0 && entry.medianMicros < winner->medianMicros) {
        unproven.push_back(&entry);
      } else if (!second || entry.medianMicros < second->medianMicros) {
        second = &entry;
      }
    }
    if (winner && second) {
      const double lead = 100 * (second->medianMicros / winner->medianMicros - 1);
      std::printf(" at %s, %.1f%% ahead of %s (spread over the rounds: %.1f%% and %.1f%%)",
                  sizeText(measuredBytes).c_str(), lead,
                  weft::tune::choiceName(second->choice).c_str(), winner->spreadPercent,
                  second->spreadPercent);
      if (lead < std::max(winner->spreadPercent, second->spreadPercent)) {
        std::printf(
            ";\n     the lead is within the run-to-run spread: the two are equally good here");
      }
    }
    std::printf(".\n");
    for (const TableMeasurement* variant : unproven) {
      std::printf(
          "     %s measured %.1f us (spread %.1f%%), but its rounds overlapped those "
          "with the communicator's slice, which stays.\n",
          weft::tune::choiceName(variant->choice).c_str(), variant->medianMicros,
          variant->spreadPercent);
    }
    if (!(modelPlan.algo == plan.algo && modelPlan.inner == plan.inner)) {
      const TableMeasurement* model = nullptr;
      for (const TableMeasurement& entry : cell) {
        if (entry.choice.algo == modelPlan.algo && entry.choice.sliceBytes == 0 &&
            (!entry.choice.inner || *entry.choice.inner == modelPlan.inner)) {
          model = &entry;
        }
      }
      AlgoChoice modelChoice{modelPlan.algo, std::nullopt};
      if (isTwoLevel(modelPlan.algo)) {
        modelChoice.inner = modelPlan.inner;
      }
      std::printf("without the table the model would choose %s",
                  weft::tune::choiceName(modelChoice).c_str());
      if (model && winner) {
        std::printf(", measured %.2fx the winner's time",
                    model->medianMicros / winner->medianMicros);
      }
      std::printf(".\n");
    }
  } else if (modelPlan.predictedMicros > 0) {
    std::printf(
        "why: no measured table for this layout; the cost model predicts it fastest (%.1f us).\n",
        modelPlan.predictedMicros);
  } else {
    std::printf(
        "why: no measured table for this layout; on one node the measured size rules decide "
        "(docs/ALGORITHMS.md).\n");
  }
  return 0;
}

}  // namespace weft_tune
