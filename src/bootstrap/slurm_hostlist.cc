// A host list item is split into literal text and bracketed range sets, then expanded as their
// product. Slurm's own parser accepts more (ranges of several dimensions written "[0-1x2-3]" on
// Cray-style systems); weft needs no more than the forms sinfo and srun print for ordinary
// clusters, and refuses the rest with the text at fault rather than guessing.
#include "bootstrap/slurm_hostlist.h"

#include <cctype>
#include <cstdint>
#include <optional>

namespace weft::bootstrap {
namespace {

constexpr size_t kMaxHosts = size_t{1} << 20;
constexpr size_t kMaxDigits = 18;  // fits int64_t, far past any node number

// One part of an item: literal text, or the numbers of a bracketed range set, already padded.
struct Part {
  std::string literal;
  std::vector<std::string> choices;  // empty for a literal
};

Status bad(const char* variable, const std::string& text, const std::string& item,
           const std::string& why) {
  std::string where = item == text ? "" : " (in '" + item + "')";
  return invalidArgument(std::string(variable) + "='" + text + "' is not a Slurm host list" +
                         where + ": " + why);
}

std::optional<int64_t> parseNumber(const std::string& digits) {
  if (digits.empty() || digits.size() > kMaxDigits) return std::nullopt;
  int64_t value = 0;
  for (char c : digits) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
    value = value * 10 + (c - '0');
  }
  return value;
}

std::string padded(int64_t value, size_t width) {
  std::string digits = std::to_string(value);
  if (digits.size() < width) digits.insert(0, width - digits.size(), '0');
  return digits;
}

// "01-03,7" -> 01 02 03 7. The lower bound's width is the padding of the whole range.
Status expandRangeSet(const std::string& set, const char* variable, const std::string& text,
                      const std::string& item, std::vector<std::string>* out) {
  if (set.empty()) return bad(variable, text, item, "empty brackets");
  size_t start = 0;
  while (start <= set.size()) {
    size_t comma = set.find(',', start);
    if (comma == std::string::npos) comma = set.size();
    std::string range = set.substr(start, comma - start);
    size_t dash = range.find('-');
    std::string low = range.substr(0, dash);
    std::string high = dash == std::string::npos ? low : range.substr(dash + 1);
    std::optional<int64_t> lo = parseNumber(low);
    std::optional<int64_t> hi = parseNumber(high);
    if (!lo || !hi) return bad(variable, text, item, "'" + range + "' is not a number or range");
    if (*hi < *lo) return bad(variable, text, item, "range '" + range + "' runs backwards");
    if (static_cast<uint64_t>(*hi - *lo) >= kMaxHosts - out->size()) {
      return bad(variable, text, item, "range '" + range + "' has more than a million hosts");
    }
    for (int64_t n = *lo; n <= *hi; ++n) out->push_back(padded(n, low.size()));
    start = comma + 1;
  }
  return Status::ok();
}

Status splitItem(const std::string& item, const char* variable, const std::string& text,
                 std::vector<Part>* parts) {
  if (item.empty()) return bad(variable, text, item, "empty host name");
  size_t pos = 0;
  while (pos < item.size()) {
    size_t open = item.find('[', pos);
    size_t stray = item.find(']', pos);
    if (stray < open) return bad(variable, text, item, "']' without '['");
    if (open > pos) parts->push_back({item.substr(pos, open - pos), {}});
    if (open == std::string::npos) break;
    size_t close = item.find(']', open);
    if (close == std::string::npos) return bad(variable, text, item, "'[' without ']'");
    Part range;
    WEFT_TRY(expandRangeSet(item.substr(open + 1, close - open - 1), variable, text, item,
                            &range.choices));
    parts->push_back(std::move(range));
    pos = close + 1;
  }
  return Status::ok();
}

// The product of the parts, leftmost slowest, appended to out.
Status expandParts(const std::vector<Part>& parts, const char* variable, const std::string& text,
                   const std::string& item, std::vector<std::string>* out) {
  std::vector<std::string> names = {""};
  for (const Part& part : parts) {
    if (part.choices.empty()) {
      for (std::string& name : names) name += part.literal;
      continue;
    }
    if (names.size() * part.choices.size() > kMaxHosts - out->size()) {
      return bad(variable, text, item, "more than a million hosts");
    }
    std::vector<std::string> longer;
    longer.reserve(names.size() * part.choices.size());
    for (const std::string& name : names) {
      for (const std::string& choice : part.choices) longer.push_back(name + choice);
    }
    names = std::move(longer);
  }
  out->insert(out->end(), names.begin(), names.end());
  return Status::ok();
}

}  // namespace

Status expandSlurmHostList(const std::string& text, const char* variable,
                           std::vector<std::string>* out) {
  std::vector<std::string> hosts;
  if (text.empty()) return bad(variable, text, text, "it is empty");
  size_t start = 0;
  int depth = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    char c = i < text.size() ? text[i] : ',';
    if (std::isspace(static_cast<unsigned char>(c))) {
      return bad(variable, text, text, "it contains white space");
    }
    if (c == '[' && ++depth > 1) return bad(variable, text, text, "nested '['");
    if (c == ']') depth = depth > 0 ? depth - 1 : 0;  // a stray one is reported with its item
    if (c != ',' || (depth > 0 && i < text.size())) continue;
    std::string item = text.substr(start, i - start);
    std::vector<Part> parts;
    WEFT_TRY(splitItem(item, variable, text, &parts));
    WEFT_TRY(expandParts(parts, variable, text, item, &hosts));
    start = i + 1;
  }
  *out = std::move(hosts);
  return Status::ok();
}

Status expandSlurmTaskCounts(const std::string& text, const char* variable, std::vector<int>* out) {
  auto refuse = [&](const std::string& item, const std::string& why) {
    std::string where = item == text ? "" : " (in '" + item + "')";
    return invalidArgument(std::string(variable) + "='" + text +
                           "' is not a Slurm task-count list" + where + ": " + why);
  };
  if (text.empty()) return refuse(text, "it is empty");
  std::vector<int> counts;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    std::string item = text.substr(start, comma - start);
    size_t paren = item.find('(');
    std::optional<int64_t> count = parseNumber(item.substr(0, paren));
    std::optional<int64_t> repeat = 1;
    if (paren != std::string::npos) {
      if (item.size() < paren + 4 || item.compare(paren, 2, "(x") != 0 || item.back() != ')') {
        return refuse(item, "expected N or N(xM)");
      }
      repeat = parseNumber(item.substr(paren + 2, item.size() - paren - 3));
    }
    if (!count || !repeat) return refuse(item, "expected N or N(xM)");
    if (*count < 1 || *count > INT32_MAX) return refuse(item, "a count must be at least 1");
    if (*repeat < 1 || static_cast<uint64_t>(*repeat) > kMaxHosts - counts.size()) {
      return refuse(item, "a repeat must be between 1 and a million");
    }
    counts.insert(counts.end(), static_cast<size_t>(*repeat), static_cast<int>(*count));
    start = comma + 1;
  }
  *out = std::move(counts);
  return Status::ok();
}

}  // namespace weft::bootstrap
