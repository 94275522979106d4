#include "bootstrap/pmi1_wire.h"

#include <charconv>

namespace weft::bootstrap::pmi1 {
namespace {

int hexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

Status Message::parse(std::string_view line, Message* out) {
  std::vector<Field> fields;
  size_t at = 0;
  while (at < line.size()) {
    if (line[at] == ' ') {
      ++at;
      continue;
    }
    size_t end = line.find(' ', at);
    if (end == std::string_view::npos) end = line.size();
    std::string_view token = line.substr(at, end - at);
    size_t equals = token.find('=');
    if (equals == std::string_view::npos || equals == 0) {
      return invalidArgument("field '" + quoteLine(token, 40) + "' is not key=value");
    }
    fields.push_back({std::string(token.substr(0, equals)), std::string(token.substr(equals + 1))});
    at = end;
  }
  if (fields.empty()) return invalidArgument("the line is empty");
  if (fields.front().key != "cmd" || fields.front().value.empty()) {
    return invalidArgument("the line does not start with cmd=<name>");
  }
  out->fields_ = std::move(fields);
  return Status::ok();
}

const std::string* Message::find(std::string_view key) const {
  for (const Field& field : fields_) {
    if (field.key == key) return &field.value;
  }
  return nullptr;
}

std::string formatLine(
    std::string_view command,
    std::initializer_list<std::pair<std::string_view, std::string_view>> fields) {
  std::string line = "cmd=";
  line += command;
  for (const auto& [key, value] : fields) {
    line += ' ';
    line += key;
    line += '=';
    line += value;
  }
  line += '\n';
  return line;
}

bool isWireSafe(std::string_view text) {
  for (char c : text) {
    if (c <= ' ' || c > '~' || c == '=') return false;
  }
  return true;
}

std::string quoteLine(std::string_view line, size_t limit) {
  std::string out;
  for (size_t i = 0; i < line.size() && i < limit; ++i) {
    char c = line[i];
    out += c >= ' ' && c <= '~' ? c : '?';
  }
  if (line.size() > limit) out += "...";
  return out;
}

std::string toHex(std::span<const uint8_t> bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex(bytes.size() * 2, '0');
  for (size_t i = 0; i < bytes.size(); ++i) {
    hex[2 * i] = kDigits[bytes[i] >> 4];
    hex[2 * i + 1] = kDigits[bytes[i] & 0xf];
  }
  return hex;
}

bool fromHex(std::string_view hex, std::vector<uint8_t>* out) {
  if (hex.size() % 2 != 0) return false;
  std::vector<uint8_t> bytes(hex.size() / 2);
  for (size_t i = 0; i < bytes.size(); ++i) {
    int high = hexDigit(hex[2 * i]);
    int low = hexDigit(hex[2 * i + 1]);
    if (high < 0 || low < 0) return false;
    bytes[i] = static_cast<uint8_t>(high << 4 | low);
  }
  *out = std::move(bytes);
  return true;
}

size_t chunkHexChars(size_t maxValueChars) {
  if (maxValueChars <= kChunkHeaderChars + 1) return 0;
  return (maxValueChars - kChunkHeaderChars) & ~size_t{1};
}

std::string chunkKey(std::string_view key, size_t index) {
  std::string name(key);
  if (index > 0) name += kChunkSeparator + std::to_string(index);
  return name;
}

Status splitValue(std::string_view key, std::span<const uint8_t> bytes, size_t maxValueChars,
                  std::vector<std::string>* chunks) {
  size_t perChunk = chunkHexChars(maxValueChars);
  if (perChunk == 0) {
    return invalidArgument("PMI-1 values of at most " + std::to_string(maxValueChars) +
                           " characters leave no room for data");
  }
  std::string hex = toHex(bytes);
  size_t count = hex.empty() ? 1 : (hex.size() + perChunk - 1) / perChunk;
  if (count > kMaxChunks) {
    return invalidArgument("PMI-1 value of key '" + std::string(key) + "' is " +
                           std::to_string(bytes.size()) + " bytes; at most " +
                           std::to_string(kMaxChunks * perChunk / 2) +
                           " fit (the server's vallen_max allows " + std::to_string(perChunk / 2) +
                           " bytes per key, over at most " + std::to_string(kMaxChunks) + " keys)");
  }
  chunks->clear();
  for (size_t i = 0; i < count; ++i) {
    std::string chunk = i == 0 ? std::to_string(count) + "/" : std::string();
    chunk.append(hex, i * perChunk, perChunk);
    chunks->push_back(std::move(chunk));
  }
  return Status::ok();
}

Status parseFirstChunk(std::string_view key, std::string_view value, size_t* count,
                       std::string* hex) {
  size_t slash = value.find('/');
  size_t parsed = 0;
  auto result =
      std::from_chars(value.data(), value.data() + (slash == value.npos ? 0 : slash), parsed);
  if (slash == value.npos || slash == 0 || result.ec != std::errc() ||
      result.ptr != value.data() + slash || parsed < 1 || parsed > kMaxChunks) {
    return remoteError("PMI-1 value of key '" + std::string(key) +
                       "' is not weft's '<chunks>/<hex>' layout: '" + quoteLine(value, 60) + "'");
  }
  *count = parsed;
  *hex = std::string(value.substr(slash + 1));
  return Status::ok();
}

}  // namespace weft::bootstrap::pmi1
