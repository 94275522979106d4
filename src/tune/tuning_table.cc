#include "tune/tuning_table.h"

#include <algorithm>
#include <cctype>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>

#include "algos/algorithms.h"
#include "tune/cost_model.h"

namespace weft::tune {
namespace {

constexpr const char* kMagic = "weft-tuning";
constexpr int kVersion = 1;

bool collFromName(const std::string& name, CollType* out) {
  for (int i = 0; i < kNumCollTypes; ++i) {
    if (name == collName(static_cast<CollType>(i))) {
      *out = static_cast<CollType>(i);
      return true;
    }
  }
  return false;
}

bool parseCount(const std::string& text, size_t* out) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) return false;
  *out = static_cast<size_t>(std::strtoull(text.c_str(), nullptr, 10));
  return true;
}

bool parseNumber(const std::string& text, double* out) {
  char* end = nullptr;
  *out = std::strtod(text.c_str(), &end);
  return !text.empty() && *end == '\0' && std::isfinite(*out) && *out >= 0;
}

std::string bound(size_t bytes) {
  return bytes == SIZE_MAX ? std::string("-") : std::to_string(bytes);
}

// Round robin over the nodes that still have room: how launchers deal ranks out cyclically
// when nodes hold different numbers of them.
std::vector<int> roundRobinNodes(const std::vector<int>& perNode) {
  std::vector<int> room = perNode;
  std::vector<int> nodeOf;
  int total = 0;
  for (int count : perNode) total += count;
  for (int node = 0; static_cast<int>(nodeOf.size()) < total; node = (node + 1) % room.size()) {
    if (room[node] > 0) {
      nodeOf.push_back(node);
      --room[node];
    }
  }
  return nodeOf;
}

std::string joined(const std::vector<int>& values) {
  std::string text;
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) text += ",";
    text += std::to_string(values[i]);
  }
  return text;
}

bool splitInts(const std::string& text, std::vector<int>* out) {
  out->clear();
  std::stringstream items(text);
  std::string item;
  while (std::getline(items, item, ',')) {
    size_t value = 0;
    if (!parseCount(item, &value) || value > (1u << 24)) return false;
    out->push_back(static_cast<int>(value));
  }
  return !out->empty();
}

std::map<std::string, std::string> fingerprintFields(const std::string& fingerprint) {
  std::map<std::string, std::string> fields;
  std::stringstream words(fingerprint);
  std::string word;
  while (words >> word) {
    size_t equals = word.find('=');
    if (equals != std::string::npos) fields[word.substr(0, equals)] = word.substr(equals + 1);
  }
  return fields;
}

Status lineError(const std::string& source, int line, const std::string& what) {
  return invalidUsage("tuning table " + source + ":" + std::to_string(line) + ": " + what);
}

}  // namespace

std::string choiceName(const AlgoChoice& choice) {
  std::string name = algoName(choice.algo);
  if (choice.inner) name += std::string("/") + algoName(*choice.inner);
  if (choice.sliceBytes != 0) name.append("@").append(sizeName(choice.sliceBytes));
  return name;
}

bool parseSizeText(const std::string& text, size_t* out) {
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0]))) return false;
  char* end = nullptr;
  const unsigned long long value = std::strtoull(text.c_str(), &end, 10);
  const std::string suffix(end);
  const int shift = suffix.empty()  ? 0
                    : suffix == "K" ? 10
                    : suffix == "M" ? 20
                    : suffix == "G" ? 30
                                    : -1;
  if (shift < 0 || value > (SIZE_MAX >> shift)) return false;
  *out = static_cast<size_t>(value) << shift;
  return true;
}

bool parseSliceSize(const std::string& text, size_t* out) {
  size_t bytes = 0;
  if (!parseSizeText(text, &bytes) || bytes < kMinSliceBytes || bytes > kMaxSliceBytes) {
    return false;
  }
  *out = bytes;
  return true;
}

namespace {

// Whether some stage among nodes that `coll`'s two-level algorithms can use cuts slices.
bool anyInnerCutsSlices(CollType coll, AlgoId twoLevel) {
  for (AlgoId inner : innerAlgos(coll)) {
    if (cutsIntoSlices(twoLevel, inner)) return true;
  }
  return false;
}

Status parseSlice(CollType coll, const AlgoChoice& choice, const std::string& text, size_t* out) {
  const std::string name = choiceName(choice);
  const bool cuts = choice.inner              ? cutsIntoSlices(choice.algo, *choice.inner)
                    : isTwoLevel(choice.algo) ? anyInnerCutsSlices(coll, choice.algo)
                                              : cutsIntoSlices(choice.algo, choice.algo);
  if (!cuts) {
    return invalidArgument("'" + name + "' does not cut its messages into slices ('@" + text +
                           "'); ring, chain, tree and two-level stages among nodes on them do");
  }
  if (!parseSliceSize(text, out)) {
    return invalidArgument("bad slice '" + text + "' for '" + name + "' (expected " +
                           std::to_string(kMinSliceBytes) + " to 1G bytes, e.g. 128K)");
  }
  return Status::ok();
}

}  // namespace

Status parseChoice(CollType coll, const std::string& text, AlgoChoice* out) {
  const size_t at = text.find('@');
  const std::string named = text.substr(0, at);
  const size_t slash = named.find('/');
  const std::string algoText = named.substr(0, slash);
  AlgoChoice choice;
  if (!algoFromName(algoText.c_str(), &choice.algo)) {
    return invalidArgument("unknown algorithm '" + algoText + "'");
  }
  if (findAlgorithm(coll, choice.algo) == nullptr) {
    return invalidArgument(std::string(collName(coll)) + " has no algorithm '" + algoText + "'");
  }
  if (slash != std::string::npos) {
    const std::string innerText = named.substr(slash + 1);
    AlgoId inner;
    const std::vector<AlgoId> usable = innerAlgos(coll);
    if (!isTwoLevel(choice.algo)) {
      return invalidArgument("'" + algoText + "' has no stage among nodes ('/" + innerText + "')");
    }
    if (!algoFromName(innerText.c_str(), &inner) ||
        std::find(usable.begin(), usable.end(), inner) == usable.end()) {
      return invalidArgument(std::string(collName(coll)) +
                             "'s two-level algorithms have no stage '" + innerText +
                             "' among nodes");
    }
    choice.inner = inner;
  }
  if (at != std::string::npos) {
    WEFT_TRY(parseSlice(coll, choice, text.substr(at + 1), &choice.sliceBytes));
  }
  *out = choice;
  return Status::ok();
}

uint64_t TuningTable::hash() const {
  // FNV-1a over the normalised lines that decide: comments and measurements do not.
  std::string text = std::string(kMagic) + " " + std::to_string(kVersion) + "\nlayout " + layout;
  for (const TableRule& rule : rules) {
    text += std::string("\nrule ") + collName(rule.coll) + " " + bound(rule.minBytes) + " " +
            bound(rule.maxBytes) + " " + choiceName(rule.choice);
  }
  uint64_t value = 14695981039346656037ull;
  for (unsigned char c : text) {
    value ^= c;
    value *= 1099511628211ull;
  }
  return value;
}

const TableRule* TuningTable::ruleFor(CollType coll, size_t callBytes) const {
  for (const TableRule& rule : rules) {
    if (rule.coll == coll && callBytes >= rule.minBytes && callBytes < rule.maxBytes) return &rule;
  }
  return nullptr;
}

Status parseTuningTable(const std::string& text, const std::string& source, TuningTable* out) {
  TuningTable table;
  table.source = source;
  std::stringstream lines(text);
  std::string line;
  int number = 0;
  bool sawMagic = false;
  while (std::getline(lines, line)) {
    ++number;
    if (line.empty()) continue;
    if (line[0] == '#') {
      if (!sawMagic) table.comments.push_back(line);
      continue;
    }
    std::stringstream words(line);
    std::string keyword;
    words >> keyword;
    if (!sawMagic) {
      int version = 0;
      if (keyword != kMagic || !(words >> version)) {
        return lineError(source, number, std::string("expected '") + kMagic + " 1' first");
      }
      if (version != kVersion) {
        return lineError(source, number,
                         "version " + std::to_string(version) + " (this weft reads version " +
                             std::to_string(kVersion) + ")");
      }
      sawMagic = true;
      continue;
    }
    if (keyword == "layout") {
      std::getline(words >> std::ws, table.layout);
      if (fingerprintRanks(table.layout) <= 0) {
        return lineError(source, number, "malformed layout '" + table.layout + "'");
      }
      continue;
    }
    std::string collText;
    CollType coll;
    words >> collText;
    if ((keyword == "rule" || keyword == "measured") && !collFromName(collText, &coll)) {
      return lineError(source, number, "unknown collective '" + collText + "'");
    }
    if (keyword == "rule") {
      TableRule rule;
      rule.coll = coll;
      std::string from, to, choice, extra;
      words >> from >> to >> choice;
      if (!parseCount(from, &rule.minBytes) ||
          !(to == "-" || (parseCount(to, &rule.maxBytes) && rule.maxBytes > rule.minBytes))) {
        return lineError(source, number, "bad size range '" + from + " " + to + "'");
      }
      Status parsed = parseChoice(coll, choice, &rule.choice);
      if (!parsed.isOk()) return lineError(source, number, parsed.message());
      if (words >> extra) return lineError(source, number, "unexpected '" + extra + "'");
      table.rules.push_back(rule);
    } else if (keyword == "measured") {
      TableMeasurement entry;
      entry.coll = coll;
      std::string bytes, choice, median, spread;
      size_t rounds = 0;
      std::string roundsText;
      words >> bytes >> choice >> median >> spread >> roundsText;
      if (!parseCount(bytes, &entry.bytes) || !parseNumber(median, &entry.medianMicros) ||
          !parseNumber(spread, &entry.spreadPercent) || !parseCount(roundsText, &rounds)) {
        return lineError(source, number,
                         "expected 'measured COLL BYTES ALGO MEDIAN_US SPREAD_PCT ROUNDS'");
      }
      entry.rounds = static_cast<int>(rounds);
      Status parsed = parseChoice(coll, choice, &entry.choice);
      if (!parsed.isOk()) return lineError(source, number, parsed.message());
      table.measured.push_back(entry);
    } else {
      return lineError(source, number, "unknown line '" + keyword + "'");
    }
  }
  if (!sawMagic)
    return lineError(source, number, std::string("empty (no '") + kMagic + " 1' line)");
  if (table.layout.empty()) return lineError(source, number, "no 'layout' line");
  *out = std::move(table);
  return Status::ok();
}

std::string formatTuningTable(const TuningTable& table) {
  std::string text;
  for (const std::string& comment : table.comments) text += comment + "\n";
  text += std::string(kMagic) + " " + std::to_string(kVersion) + "\n";
  text += "layout " + table.layout + "\n";
  if (!table.measured.empty()) {
    text += "# measured COLL BYTES ALGO MEDIAN_US SPREAD_PCT ROUNDS\n";
    char line[256];
    for (const TableMeasurement& entry : table.measured) {
      std::snprintf(line, sizeof(line), "measured %s %zu %s %.2f %.1f %d\n", collName(entry.coll),
                    entry.bytes, choiceName(entry.choice).c_str(), entry.medianMicros,
                    entry.spreadPercent, entry.rounds);
      text += line;
    }
  }
  text +=
      "# rule COLL FROM_BYTES TO_BYTES ALGO (bytes of the call's count; TO exclusive, - = no "
      "bound)\n";
  for (const TableRule& rule : table.rules) {
    text += std::string("rule ") + collName(rule.coll) + " " + bound(rule.minBytes) + " " +
            bound(rule.maxBytes) + " " + choiceName(rule.choice) + "\n";
  }
  return text;
}

std::vector<TableRule> rulesFromMeasurements(const std::vector<TableMeasurement>& measured) {
  // Per collective, per size: the fastest median (ties to the one measured first).
  std::map<CollType, std::map<size_t, const TableMeasurement*>> best;
  for (const TableMeasurement& entry : measured) {
    const TableMeasurement*& winner = best[entry.coll][entry.bytes];
    if (winner == nullptr || entry.medianMicros < winner->medianMicros) winner = &entry;
  }
  std::vector<TableRule> rules;
  for (const auto& [coll, bySize] : best) {
    std::vector<std::pair<size_t, AlgoChoice>> points;
    for (const auto& [bytes, winner] : bySize) points.emplace_back(bytes, winner->choice);
    for (size_t i = 0; i < points.size(); ++i) {
      TableRule rule;
      rule.coll = coll;
      rule.choice = points[i].second;
      rule.minBytes = i == 0 ? 0
                             : static_cast<size_t>(std::ceil(std::sqrt(
                                   static_cast<double>(points[i - 1].first) * points[i].first)));
      rule.maxBytes = i + 1 == points.size()
                          ? SIZE_MAX
                          : static_cast<size_t>(std::ceil(std::sqrt(
                                static_cast<double>(points[i].first) * points[i + 1].first)));
      if (!rules.empty() && rules.back().coll == coll && rules.back().choice == rule.choice) {
        rules.back().maxBytes = rule.maxBytes;
      } else {
        rules.push_back(rule);
      }
    }
  }
  return rules;
}

std::string layoutFingerprint(const topo::NodeLayout& nodes, bool intraShm,
                              const std::string& network) {
  std::vector<int> perNode;
  for (const auto& members : nodes.nodeRanks) perNode.push_back(static_cast<int>(members.size()));
  std::string numbering = "block";
  if (!nodes.numberedByNode()) {
    numbering =
        roundRobinNodes(perNode) == nodes.nodeOf ? "interleave" : "map:" + joined(nodes.nodeOf);
  }
  return "ranks=" + std::to_string(nodes.nranks()) + " nodes=" + std::to_string(nodes.nodes()) +
         " per-node=" + joined(perNode) + " numbering=" + numbering +
         " intra=" + (intraShm ? "shm" : "net") + " net=" + (nodes.nodes() > 1 ? network : "none");
}

bool layoutFromFingerprint(const std::string& fingerprint, topo::NodeLayout* nodes,
                           bool* intraShm) {
  auto fields = fingerprintFields(fingerprint);
  std::vector<int> perNode;
  size_t ranks = 0;
  if (!parseCount(fields["ranks"], &ranks) || !splitInts(fields["per-node"], &perNode))
    return false;
  int total = 0;
  for (int count : perNode) {
    if (count <= 0) return false;
    total += count;
  }
  if (static_cast<size_t>(total) != ranks) return false;
  const std::string numbering = fields["numbering"];
  std::vector<int> nodeOf;
  if (numbering == "block") {
    for (size_t node = 0; node < perNode.size(); ++node)
      nodeOf.insert(nodeOf.end(), perNode[node], static_cast<int>(node));
  } else if (numbering == "interleave") {
    nodeOf = roundRobinNodes(perNode);
  } else if (numbering.rfind("map:", 0) == 0) {
    if (!splitInts(numbering.substr(4), &nodeOf) || nodeOf.size() != ranks) return false;
  } else {
    return false;
  }
  std::vector<uint64_t> hostIds(nodeOf.begin(), nodeOf.end());
  *nodes = topo::buildNodeLayout(hostIds);
  *intraShm = fields["intra"] != "net";
  return true;
}

int fingerprintRanks(const std::string& fingerprint) {
  topo::NodeLayout nodes;
  bool intraShm = true;
  return layoutFromFingerprint(fingerprint, &nodes, &intraShm) ? nodes.nranks() : 0;
}

}  // namespace weft::tune
