#include "base/log.h"

#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <utility>

#include "base/env.h"

namespace weft::log {
namespace {

constexpr int kUnset = -1;
std::atomic<int> gLevel{kUnset};
std::once_flag gSinkOnce;
FILE* gSink = stderr;
std::mutex gWriteMutex;
Observer gObserver;  // guarded by gWriteMutex

Level parseLevel(const std::string& text) {
  if (text == "NONE") return Level::kNone;
  if (text == "INFO") return Level::kInfo;
  if (text == "TRACE") return Level::kTrace;
  return Level::kWarn;
}

std::string hostName() {
  char name[256] = {};
  gethostname(name, sizeof(name) - 1);
  return name;
}

// Expands %h and %p in WEFT_DEBUG_FILE so that each process of a job writes its own file.
void openSink() {
  std::string pattern = env::getString("WEFT_DEBUG_FILE");
  if (pattern.empty()) return;
  std::string path;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '%' && i + 1 < pattern.size() && pattern[i + 1] == 'h') {
      path += hostName();
      ++i;
    } else if (pattern[i] == '%' && i + 1 < pattern.size() && pattern[i + 1] == 'p') {
      path += std::to_string(getpid());
      ++i;
    } else {
      path += pattern[i];
    }
  }
  if (FILE* file = std::fopen(path.c_str(), "a")) gSink = file;
}

const char* levelName(Level level) {
  switch (level) {
    case Level::kWarn:
      return "WARN";
    case Level::kInfo:
      return "INFO";
    case Level::kTrace:
      return "TRACE";
    default:
      return "";
  }
}

}  // namespace

Level level() {
  int current = gLevel.load(std::memory_order_relaxed);
  if (current == kUnset) {
    current = static_cast<int>(parseLevel(env::getString("WEFT_DEBUG")));
    gLevel.store(current, std::memory_order_relaxed);
  }
  return static_cast<Level>(current);
}

void setLevel(Level newLevel) {
  gLevel.store(static_cast<int>(newLevel));
}

void setObserver(Observer observer) {
  std::lock_guard<std::mutex> lock(gWriteMutex);
  gObserver = std::move(observer);
}

void write(Level lvl, const char* file, int line, const char* format, ...) {
  std::call_once(gSinkOnce, openSink);
  // Never destroyed: server threads may still log while static destructors run at exit.
  static const std::string& host = *new std::string(hostName());
  char message[2048];
  va_list args;
  va_start(args, format);
  std::vsnprintf(message, sizeof(message), format, args);
  va_end(args);
  const char* base = std::strrchr(file, '/');
  std::lock_guard<std::mutex> lock(gWriteMutex);
  if (lvl == Level::kTrace) {
    std::fprintf(gSink, "%s:%d weft %s %s:%d %s\n", host.c_str(), getpid(), levelName(lvl),
                 base ? base + 1 : file, line, message);
  } else {
    std::fprintf(gSink, "%s:%d weft %s %s\n", host.c_str(), getpid(), levelName(lvl), message);
  }
  std::fflush(gSink);
  if (gObserver) gObserver(lvl, message);
}

}  // namespace weft::log
