// The hosts of a job, as mpirun takes them: "-H node0:4,node1:4" or "--hostfile FILE" with Open
// MPI's "node0 slots=4" lines. Parsing only; which ranks go where is job_layout.h's business.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace weftrun {

struct HostSlots {
  std::string name;
  int slots = 1;
};

// Parses "-H" text: comma-separated "host" (1 slot) or "host:N" entries. A host named twice gets
// the sum of its slots, in the place it was first named. Returns false with a message naming the
// entry at fault in *error.
bool ParseHostList(std::string_view text, std::vector<HostSlots>* hosts, std::string* error);

// Reads a hostfile: one host per line, "host" (1 slot) or "host slots=N" (Open MPI's
// "max_slots=M" is accepted and ignored); blank lines and "#" comments are skipped. Errors name
// the file and line.
bool ReadHostfile(const std::string& path, std::vector<HostSlots>* hosts, std::string* error);

// True when name is this machine: "localhost", a loopback address, or this host's name (with or
// without its domain). Such hosts run their ranks directly, without the launch agent.
bool IsThisHost(std::string_view name);

}  // namespace weftrun
