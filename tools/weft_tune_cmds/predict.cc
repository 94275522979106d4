// weft_tune predict (the default): the tuner's decision table (sizes x algorithms, predicted
// microseconds, the choice marked) for a described layout, so that choices on machines and
// scales other than this one can be studied. The numbers come from the same cost model and the
// same choosePlan that a communicator uses, so what it prints is what weft would do there.
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "tune/cost_model.h"
#include "tune/select.h"
#include "weft_tune_cmds/tune_tool.h"

namespace weft_tune {
namespace {

struct Options {
  int nodes = 4;
  int perNode = 2;
  bool interleave = false;
  std::string hosts;  // one letter per rank: its node (overrides nodes/ppn)
  std::string coll = "allreduce";
  int cores = 0;            // hardware threads per node (0: one per rank)
  bool oneMachine = false;  // every node on one machine sharing `cores` (emulated clusters)
  size_t minBytes = 8;
  size_t maxBytes = size_t{1} << 30;
  size_t factor = 4;
  size_t sliceBytes = 512 * 1024;
  weft::tune::CostParams params;
  std::map<int, std::string> nodeNet;  // --node-net: node -> its link, where it is not --net's
};

[[noreturn]] void usage(const char* problem) {
  std::fprintf(stderr,
               "weft_tune: %s\n"
               "usage: weft_tune [predict] [--nodes N] [--ppn P] [--interleave] [--hosts AABBC]\n"
               "                 [--net 100Gbit,5us] [--shm 4GB/s,2us]\n"
               "                 [--coll allreduce|broadcast|allgather|reducescatter|alltoall]\n"
               "                 [--min BYTES] [--max BYTES] [--factor F] [--slice BYTES]\n"
               "                 [--cores N] [--one-machine] [--node-net NODE:1Gbit,50us]...\n"
               "       weft_tune measure --help    (inside a job: times the candidates)\n"
               "       weft_tune explain --help    (why an algorithm wins)\n",
               problem);
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) usage((arg + " needs a value").c_str());
      return argv[++i];
    };
    if (arg == "--nodes") {
      options.nodes = std::atoi(value());
    } else if (arg == "--ppn") {
      options.perNode = std::atoi(value());
    } else if (arg == "--cores") {
      options.cores = std::atoi(value());
    } else if (arg == "--one-machine") {
      options.oneMachine = true;
    } else if (arg == "--interleave") {
      options.interleave = true;
    } else if (arg == "--hosts") {
      options.hosts = value();
    } else if (arg == "--coll") {
      options.coll = value();
    } else if (arg == "--min") {
      options.minBytes = parseBytes(value(), usage);
    } else if (arg == "--max") {
      options.maxBytes = parseBytes(value(), usage);
    } else if (arg == "--factor") {
      options.factor = parseBytes(value(), usage);
    } else if (arg == "--slice") {
      options.sliceBytes = parseBytes(value(), usage);
    } else if (arg == "--node-net") {
      std::string text = value();
      size_t colon = text.find(':');
      if (colon == 0 || colon == std::string::npos || text.find_first_not_of("0123456789") != colon)
        usage("--node-net needs NODE:LINK, e.g. 2:1Gbit,50us");
      options.nodeNet[std::atoi(text.c_str())] = text.substr(colon + 1);
    } else if (arg == "--net" || arg == "--shm") {
      weft::tune::LinkCost& link = arg == "--net" ? options.params.net : options.params.shm;
      weft::Status status = weft::tune::parseLink(value(), &link);
      if (!status.isOk()) usage(status.message().c_str());
    } else if (arg == "-h" || arg == "--help") {
      usage("prints the tuner's decision table");
    } else {
      usage(("unknown argument " + arg).c_str());
    }
  }
  if (options.nodes < 1 || options.perNode < 1) usage("--nodes and --ppn must be >= 1");
  if (options.factor < 2) usage("--factor must be >= 2");
  return options;
}

}  // namespace

int runPredict(int argc, char** argv) {
  Options options = parse(argc, argv);
  CollType coll = CollType::kAllReduce;
  bool known = false;
  for (CollType candidate : {CollType::kAllReduce, CollType::kBroadcast, CollType::kAllGather,
                             CollType::kReduceScatter, CollType::kAlltoAll}) {
    if (options.coll == weft::collName(candidate)) {
      coll = candidate;
      known = true;
    }
  }
  if (!known) usage("--coll must be allreduce, broadcast, allgather, reducescatter or alltoall");

  weft::topo::NodeLayout nodes;
  if (!options.hosts.empty()) {
    std::vector<uint64_t> hostIds;
    for (char host : options.hosts) hostIds.push_back(static_cast<uint64_t>(host));
    nodes = weft::topo::buildNodeLayout(hostIds);
  } else {
    nodes = weft::topo::describedNodeLayout(options.nodes, options.perNode, options.interleave);
  }
  if (!options.nodeNet.empty()) {
    std::vector<weft::tune::LinkCost> links(nodes.nodes(), options.params.net);
    for (const auto& [node, text] : options.nodeNet) {
      if (node >= nodes.nodes()) usage(("--node-net: no node " + std::to_string(node)).c_str());
      weft::Status status = weft::tune::parseLink(text, &links[node]);
      if (!status.isOk()) usage(("--node-net: " + status.message()).c_str());
    }
    weft::tune::useNodeLinks(std::move(links), &options.params);
  }
  const weft::Layout layout =
      describedLayout(nodes, true, options.params, options.cores, options.oneMachine);

  std::printf("# weft_tune: %s %s\n", weft::collName(coll), layout.nodes.summary().c_str());
  for (size_t node = 0; node < options.params.nodeNet.size(); ++node) {
    std::printf("# node %zu's network link %s\n", node,
                weft::tune::describeLink(options.params.nodeNet[node]).c_str());
  }
  std::printf("# network %s; shared memory %s; reduction %.3g GB/s; slices %zu bytes\n",
              weft::tune::describeLink(options.params.net).c_str(),
              weft::tune::describeLink(options.params.shm).c_str(),
              1e-3 / options.params.gammaMicrosPerByte, options.sliceBytes);
  std::printf(
      "# predicted microseconds per call; * marks the choice; two-level cells use the "
      "best stage among nodes, named in the last column\n");
  std::vector<AlgoId> algos = weft::tune::modelledAlgos(coll, layout.cost);
  std::printf("| size |");
  for (AlgoId algo : algos) std::printf(" %s |", weft::algoName(algo));
  std::printf(" choice |\n|---:|");
  for (size_t i = 0; i < algos.size(); ++i) std::printf("---:|");
  std::printf("---|\n");

  const weft::AlgoOverrides none;
  std::string previous;
  std::vector<std::string> crossovers;
  for (size_t bytes = options.minBytes; bytes <= options.maxBytes; bytes *= options.factor) {
    weft::CollArgs args;
    args.coll = coll;
    args.type = weftUint8;
    // Sizes are the whole buffer, as nccl-tests reports them; the gathering and scattering
    // family's count is one rank's block of it.
    const bool blocks = coll == CollType::kAllGather || coll == CollType::kReduceScatter ||
                        coll == CollType::kAlltoAll;
    args.count = blocks ? std::max<size_t>(1, bytes / layout.nranks) : bytes;
    weft::Plan plan = weft::choosePlan(args, layout, none, options.sliceBytes);
    std::vector<weft::Candidate> ranked =
        weft::rankCandidates(coll, bytes, layout, options.sliceBytes);
    std::printf("| %s |", sizeText(bytes).c_str());
    for (AlgoId algo : algos) {
      double micros = -1;
      for (const weft::Candidate& candidate : ranked) {
        if (candidate.algo == algo) micros = candidate.micros;
      }
      if (ranked.empty()) {
        micros = weft::tune::predictMicros(options.params, layout.cost, coll, algo, algo, bytes,
                                           options.sliceBytes);
      }
      std::printf(" %.1f%s |", micros, algo == plan.algo ? "*" : "");
    }
    std::string choice = weft::planName(plan);
    if (ranked.empty()) choice += " (one-node size rule)";
    std::printf(" %s |\n", choice.c_str());
    if (!previous.empty() && choice != previous) {
      crossovers.push_back(previous + " -> " + choice + " at " + sizeText(bytes));
    }
    previous = choice;
    if (bytes > SIZE_MAX / options.factor) break;
  }
  std::printf("\n# crossovers:%s\n", crossovers.empty() ? " none" : "");
  for (const std::string& crossover : crossovers) std::printf("#   %s\n", crossover.c_str());
  return 0;
}

}  // namespace weft_tune
