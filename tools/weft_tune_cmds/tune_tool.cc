#include "weft_tune_cmds/tune_tool.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace weft_tune {

size_t parseBytes(const char* text, void (*fail)(const char*)) {
  char* end = nullptr;
  double value = std::strtod(text, &end);
  const std::string problem = std::string("bad size '") + text + "'";
  if (end == text || value < 0) fail(problem.c_str());
  switch (*end) {
    case 'K':
      value *= 1024;
      break;
    case 'M':
      value *= 1024 * 1024;
      break;
    case 'G':
      value *= 1024.0 * 1024 * 1024;
      break;
    case '\0':
      break;
    default:
      fail(problem.c_str());
  }
  return static_cast<size_t>(value);
}

std::string sizeText(size_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 3 && static_cast<size_t>(value) % 1024 == 0) {
    value /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof(text), "%g %s", value, units[unit]);
  return text;
}

bool collFromName(const std::string& name, CollType* out) {
  for (int i = 0; i < weft::kNumCollTypes; ++i) {
    if (name == weft::collName(static_cast<CollType>(i))) {
      *out = static_cast<CollType>(i);
      return true;
    }
  }
  return false;
}

weft::Layout describedLayout(const weft::topo::NodeLayout& nodes, bool intraShm,
                             const weft::tune::CostParams& params, int cores, bool oneMachine) {
  weft::Layout layout;
  layout.nodes = nodes;
  layout.nranks = nodes.nranks();
  layout.cost = weft::tune::buildCostLayout(layout.nodes, intraShm);
  layout.params = params;
  std::vector<uint64_t> machineOf;
  std::vector<int> coresOf;
  for (int r = 0; r < layout.nranks; ++r) {
    machineOf.push_back(oneMachine ? 0 : static_cast<uint64_t>(layout.nodes.nodeOf[r]));
    coresOf.push_back(cores > 0 ? cores : layout.nodes.maxPerNode());
  }
  weft::tune::setCpuSharing(layout.nodes, machineOf, coresOf, &layout.cost);
  // A single node keeps the measured shared-memory rules.
  layout.oneHostShm = layout.nodes.nodes() == 1 && intraShm;
  layout.windowAreaBytes = 4 << 20;
  return layout;
}

weft::Status readTuningTable(const std::string& path, weft::tune::TuningTable* out) {
  std::ifstream in(path);
  if (!in) return weft::invalidArgument("cannot read " + path);
  std::stringstream text;
  text << in.rdbuf();
  return weft::tune::parseTuningTable(text.str(), path, out);
}

}  // namespace weft_tune
