// Slurm's compressed lists, as its launcher variables carry them: host lists
// (SLURM_STEP_NODELIST="node[01-03,07],gpu5") and task counts (SLURM_TASKS_PER_NODE="2(x3),1").
#pragma once

#include <string>
#include <vector>

#include "base/status.h"

namespace weft::bootstrap {

// Expands a host list in the order Slurm lays tasks out on it: comma-separated items, each a
// name with any number of bracketed ranges ("rack[1-2]n[01-04]-ib"), the leftmost range varying
// slowest. A range keeps its lower bound's zero padding ("[08-10]": 08 09 10). Errors are
// weftInvalidArgument naming `variable` and the text at fault; an expansion of more than a
// million hosts is refused.
Status expandSlurmHostList(const std::string& text, const char* variable,
                           std::vector<std::string>* out);

// Expands a task-count list ("2(x3),1": 2 2 2 1), one count of at least 1 per node. Errors are
// weftInvalidArgument naming `variable` and the text at fault.
Status expandSlurmTaskCounts(const std::string& text, const char* variable, std::vector<int>* out);

}  // namespace weft::bootstrap
