// Logging: WEFT_DEBUG=NONE|WARN|INFO|TRACE, lines prefixed with host, pid and (when known) rank,
// written to stderr or WEFT_DEBUG_FILE. Cheap when disabled: the level check is one load.
#pragma once

#include <atomic>

namespace weft::log {

enum class Level : int { kNone = 0, kWarn = 1, kInfo = 2, kTrace = 3 };

// The effective level (read from the environment on first use).
Level level();
// Overrides the environment (tests use it).
void setLevel(Level level);
void write(Level level, const char* file, int line, const char* format, ...)
    __attribute__((format(printf, 4, 5)));

}  // namespace weft::log

#define WEFT_LOG_AT(lvl, ...)                                                                      \
  do {                                                                                             \
    if (::weft::log::level() >= (lvl)) ::weft::log::write((lvl), __FILE__, __LINE__, __VA_ARGS__); \
  } while (0)
#define WEFT_WARN(...) WEFT_LOG_AT(::weft::log::Level::kWarn, __VA_ARGS__)
#define WEFT_INFO(...) WEFT_LOG_AT(::weft::log::Level::kInfo, __VA_ARGS__)
#define WEFT_TRACE(...) WEFT_LOG_AT(::weft::log::Level::kTrace, __VA_ARGS__)
