#include "base/datatype.h"

namespace weft {

size_t typeSize(weftDataType_t type) {
  switch (type) {
    case weftInt8:
    case weftUint8:
      return 1;
    case weftFloat16:
    case weftBfloat16:
      return 2;
    case weftInt32:
    case weftUint32:
    case weftFloat32:
      return 4;
    case weftInt64:
    case weftUint64:
    case weftFloat64:
      return 8;
    case weftNumTypes:
      break;
  }
  return 0;
}

const char* typeName(weftDataType_t type) {
  static constexpr const char* kNames[weftNumTypes] = {"int8",    "uint8",   "int32",   "uint32",
                                                       "int64",   "uint64",  "float16", "float32",
                                                       "float64", "bfloat16"};
  return isValidType(type) ? kNames[type] : "invalid";
}

const char* opName(weftRedOp_t op) {
  static constexpr const char* kNames[weftNumOps] = {"sum", "prod", "max", "min", "avg"};
  return isValidOp(op) ? kNames[op] : "invalid";
}

bool isValidType(int type) {
  return type >= 0 && type < weftNumTypes;
}

bool isValidOp(int op) {
  return op >= 0 && op < weftNumOps;
}

}  // namespace weft
