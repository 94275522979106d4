// Logging: WEFT_DEBUG=NONE|WARN|INFO|TRACE, lines prefixed with host, pid and (when known) rank,
// written to stderr or WEFT_DEBUG_FILE. Cheap when disabled: the level check is one load.
#pragma once

#include <atomic>
#include <functional>
#include <string>

namespace weft::log {

enum class Level : int { kNone = 0, kWarn = 1, kInfo = 2, kTrace = 3 };

// The effective level (read from the environment on first use).
Level level();
// Overrides the environment (tests use it).
void setLevel(Level level);
void write(Level level, const char* file, int line, const char* format, ...)
    __attribute__((format(printf, 4, 5)));

// Tests: every line written is also handed to the observer (the message without the prefix),
// under the log's lock, so it must not log itself. An empty function removes it.
using Observer = std::function<void(Level level, const std::string& message)>;
void setObserver(Observer observer);

}  // namespace weft::log

#define WEFT_LOG_AT(lvl, ...)                                                                      \
  do {                                                                                             \
    if (::weft::log::level() >= (lvl)) ::weft::log::write((lvl), __FILE__, __LINE__, __VA_ARGS__); \
  } while (0)
#define WEFT_WARN(...) WEFT_LOG_AT(::weft::log::Level::kWarn, __VA_ARGS__)
#define WEFT_INFO(...) WEFT_LOG_AT(::weft::log::Level::kInfo, __VA_ARGS__)
#define WEFT_TRACE(...) WEFT_LOG_AT(::weft::log::Level::kTrace, __VA_ARGS__)
