#include "topo/process_state.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace weft::topo {

bool readProcessStat(int pid, ProcessStat* out) {
  if (pid <= 0) return false;
  std::string path = "/proc/" + std::to_string(pid) + "/stat";
  FILE* file = std::fopen(path.c_str(), "r");
  if (file == nullptr) return false;
  char line[1024];
  size_t length = std::fread(line, 1, sizeof(line) - 1, file);
  std::fclose(file);
  line[length] = '\0';
  // "pid (comm) state ...": comm may hold spaces and parentheses, so fields count from the last
  // ')'. The state is field 3 and the start time field 22, 19 fields after the state.
  const char* cursor = std::strrchr(line, ')');
  if (cursor == nullptr || cursor[1] != ' ' || cursor[2] == '\0') return false;
  cursor += 2;
  out->state = *cursor;
  for (int field = 3; field < 22; ++field) {
    cursor = std::strchr(cursor, ' ');
    if (cursor == nullptr) return false;
    ++cursor;
  }
  out->startTicks = std::strtoull(cursor, nullptr, 10);
  return true;
}

uint64_t selfStartTicks() {
  ProcessStat self;
  return readProcessStat(static_cast<int>(getpid()), &self) ? self.startTicks : 0;
}

}  // namespace weft::topo
