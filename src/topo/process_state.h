// The state of a process on this machine, from /proc/<pid>/stat: how a rank whose peer stopped
// answering tells a stopped process (SIGSTOP, a debugger) from one that is merely waiting too.
#pragma once

#include <cstdint>

namespace weft::topo {

struct ProcessStat {
  char state = '?';         // R, S, D, T (stopped), t (tracing stop), Z, ...
  uint64_t startTicks = 0;  // start time in clock ticks since boot: with the pid, an identity
};

// False when the process does not exist (or /proc cannot be read).
bool readProcessStat(int pid, ProcessStat* out);
// This process's start time (0 if unknown), published so that peers can check that a pid still
// names this process before they judge its state.
uint64_t selfStartTicks();
// Stopped by a signal ('T') or by a tracer ('t'): it runs no code until resumed.
inline bool isStopped(char state) {
  return state == 'T' || state == 't';
}

}  // namespace weft::topo
