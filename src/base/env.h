// The one table of environment variables weft reads. Every lookup goes through it, so a variable
// cannot be read without being documented, and `weft_info --env` (and the README table) list the
// same set the code uses.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "base/status.h"

namespace weft::env {

struct Variable {
  const char* name;
  const char* defaultValue;  // "" when there is no default
  const char* description;
};

std::span<const Variable> table();

// The raw value if the variable is set and non-empty. Aborts (a bug) for a name not in the table.
std::optional<std::string> get(const char* name);
// The value, or the table's default.
std::string getString(const char* name);
// Parsed as an integer; an unparsable value is reported once as a warning and the default used.
int64_t getInt(const char* name);
bool isSet(const char* name);
// getInt() within [min, max], or weftInvalidArgument naming the variable and the bounds.
Status getBounded(const char* name, int64_t min, int64_t max, int64_t* out);

}  // namespace weft::env
