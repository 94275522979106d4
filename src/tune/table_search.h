// Finding the tuning table for a communicator: the first table whose layout fingerprint equals
// the communicator's, among the files WEFT_TUNE_FILE names (files or directories, separated by
// ':') or, when it is unset, the search path: $XDG_CONFIG_HOME/weft/tuning (or
// ~/.config/weft/tuning), then /etc/weft/tuning. Directories contribute their *.txt files in
// name order.
#pragma once

#include <memory>
#include <string>

#include "base/status.h"
#include "tune/tuning_table.h"

namespace weft::tune {

struct TableSearch {
  std::shared_ptr<const TuningTable> table;  // null: the model decides
  // Why no table was taken, for the log ("" when a table was, or when nothing was looked at).
  std::string refusal;
  // The refusal is worth a warning: tables were named for a job of this size or larger but none
  // fits (a sub-communicator of a measured job only gets an INFO line).
  bool warn = false;
};

// An unreadable or malformed file that WEFT_TUNE_FILE names is an error naming it; files of the
// default search path that cannot be read are skipped with a warning.
Status findTuningTable(const std::string& tuneFile, const std::string& fingerprint,
                       TableSearch* out);

// The default search path, in order.
std::vector<std::string> defaultTableDirectories();

}  // namespace weft::tune
