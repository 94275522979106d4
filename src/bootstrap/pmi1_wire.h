// The PMI-1 wire format that MPICH's Hydra launcher speaks: one command or reply per line, a
// newline at its end, space-separated key=value fields, cmd=<name> first. Nothing can escape a
// space, '=' or newline inside a value, so weft's bytes travel as hex; and since a value is
// bounded by the server's vallen_max, a long one is split over several keys (the chunk layout
// below). Pure functions, so the client and its tests share one definition of the format.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"

namespace weft::bootstrap::pmi1 {

struct Field {
  std::string key;
  std::string value;
};

// One parsed line. The first field is always cmd.
class Message {
 public:
  // A line without its newline. Errors say what is wrong (no cmd= first, a field without '=').
  static Status parse(std::string_view line, Message* out);

  const std::string& command() const { return fields_.front().value; }
  // The value of the first field named `key`, or nullptr.
  const std::string* find(std::string_view key) const;
  const std::vector<Field>& fields() const { return fields_; }

 private:
  std::vector<Field> fields_;
};

// "cmd=<command> k1=v1 k2=v2\n". The caller has checked the fields with isWireSafe.
std::string formatLine(std::string_view command,
                       std::initializer_list<std::pair<std::string_view, std::string_view>> fields);

// Whether text may stand as a key or value on the wire: printable ASCII other than space and '='.
bool isWireSafe(std::string_view text);

// A line as it may appear in an error message: at most `limit` characters (then "..."), anything
// unprintable shown as '?', so that a garbled reply cannot garble the message too.
std::string quoteLine(std::string_view line, size_t limit = 160);

std::string toHex(std::span<const uint8_t> bytes);
// False on an odd length or a character that is not a hex digit (either case).
bool fromHex(std::string_view hex, std::vector<uint8_t>* out);

// The chunk layout of one value. Chunk 0 lives at the caller's key and starts with the number of
// chunks and a '/'; chunk i > 0 lives at "<key>#<i>". '#' may not appear in callers' keys, so a
// chunk key never collides with another value's key.
inline constexpr size_t kMaxChunks = 999;
inline constexpr char kChunkSeparator = '#';
// The longest "#<i>" suffix and "<count>/" header, reserved whatever the value's size so that the
// limits a caller sees do not depend on it.
inline constexpr size_t kChunkSuffixChars = 4;
inline constexpr size_t kChunkHeaderChars = 4;

// Hex characters one chunk carries when a value may hold `maxValueChars` (even, so no byte is cut
// in two). 0 when maxValueChars leaves no room.
size_t chunkHexChars(size_t maxValueChars);
std::string chunkKey(std::string_view key, size_t index);
// The values of chunks 0..n-1 for `bytes`, each at most maxValueChars long; an error names the
// key when more than kMaxChunks would be needed.
Status splitValue(std::string_view key, std::span<const uint8_t> bytes, size_t maxValueChars,
                  std::vector<std::string>* chunks);
// Reads chunk 0: the chunk count and its hex. Errors name the key and quote the value.
Status parseFirstChunk(std::string_view key, std::string_view value, size_t* count,
                       std::string* hex);

}  // namespace weft::bootstrap::pmi1
