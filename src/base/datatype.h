// The sizes and names of the public datatypes and reduction ops, which every layer needs.
#pragma once

#include <cstddef>

#include "weft/weft.h"

namespace weft {

size_t typeSize(weftDataType_t type);
const char* typeName(weftDataType_t type);  // "float32", "bfloat16", ...
const char* opName(weftRedOp_t op);         // "sum", "prod", "max", "min", "avg"
bool isValidType(int type);
bool isValidOp(int op);

}  // namespace weft
