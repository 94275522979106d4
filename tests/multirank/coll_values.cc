#include "multirank/coll_values.h"

#include <cstring>

#include "reduce/half.h"

namespace weft::test {
namespace {

// The integer as the library's wrapping arithmetic leaves it in the type.
int64_t wrapToType(weftDataType_t type, int64_t value) {
  switch (type) {
    case weftInt8: return static_cast<int8_t>(static_cast<uint8_t>(value));
    case weftUint8: return static_cast<uint8_t>(value);
    case weftInt32: return static_cast<int32_t>(static_cast<uint32_t>(value));
    case weftUint32: return static_cast<uint32_t>(value);
    default: return value;
  }
}

}  // namespace

size_t elementSize(weftDataType_t type) {
  switch (type) {
    case weftInt8:
    case weftUint8: return 1;
    case weftFloat16:
    case weftBfloat16: return 2;
    case weftInt32:
    case weftUint32:
    case weftFloat32: return 4;
    default: return 8;
  }
}

bool isSignedType(weftDataType_t type) {
  return type != weftUint8 && type != weftUint32 && type != weftUint64;
}

void storeValue(weftDataType_t type, void* buf, size_t i, int64_t value) {
  switch (type) {
    case weftInt8: static_cast<int8_t*>(buf)[i] = static_cast<int8_t>(value); break;
    case weftUint8: static_cast<uint8_t*>(buf)[i] = static_cast<uint8_t>(value); break;
    case weftInt32: static_cast<int32_t*>(buf)[i] = static_cast<int32_t>(value); break;
    case weftUint32: static_cast<uint32_t*>(buf)[i] = static_cast<uint32_t>(value); break;
    case weftInt64: static_cast<int64_t*>(buf)[i] = value; break;
    case weftUint64: static_cast<uint64_t*>(buf)[i] = static_cast<uint64_t>(value); break;
    case weftFloat16:
      static_cast<uint16_t*>(buf)[i] = floatToHalf(static_cast<float>(value));
      break;
    case weftBfloat16:
      static_cast<uint16_t*>(buf)[i] = floatToBfloat16(static_cast<float>(value));
      break;
    case weftFloat32: static_cast<float*>(buf)[i] = static_cast<float>(value); break;
    case weftFloat64: static_cast<double*>(buf)[i] = static_cast<double>(value); break;
    default: break;
  }
}

double loadValue(weftDataType_t type, const void* buf, size_t i) {
  switch (type) {
    case weftInt8: return static_cast<const int8_t*>(buf)[i];
    case weftUint8: return static_cast<const uint8_t*>(buf)[i];
    case weftInt32: return static_cast<const int32_t*>(buf)[i];
    case weftUint32: return static_cast<const uint32_t*>(buf)[i];
    case weftInt64: return static_cast<double>(static_cast<const int64_t*>(buf)[i]);
    case weftUint64: return static_cast<double>(static_cast<const uint64_t*>(buf)[i]);
    case weftFloat16: return halfToFloat(static_cast<const uint16_t*>(buf)[i]);
    case weftBfloat16: return bfloat16ToFloat(static_cast<const uint16_t*>(buf)[i]);
    case weftFloat32: return static_cast<const float*>(buf)[i];
    case weftFloat64: return static_cast<const double*>(buf)[i];
    default: return 0;
  }
}

bool sameElement(weftDataType_t type, const void* a, const void* b, size_t i) {
  size_t size = elementSize(type);
  return std::memcmp(static_cast<const char*>(a) + i * size,
                     static_cast<const char*>(b) + i * size, size) == 0;
}

int64_t inputValue(weftRedOp_t op, bool reduction, bool isSigned, int rank, size_t index) {
  const int64_t r = rank;
  const int64_t i = static_cast<int64_t>(index % 1000003);
  if (!reduction) return (r * 31 + i) % 97;
  switch (op) {
    case weftProd: {
      if (isSigned && (r + 2 * i) % 7 == 3) return -1;
      return (r + i) % 4 == 0 ? 2 : 1;
    }
    case weftMax:
    case weftMin: return (r * 13 + i * 7) % 11 - (isSigned ? 5 : 0);
    default: return (r * 7 + i * 3) % 5 + (isSigned ? -2 : 1);
  }
}

void storeReduced(weftDataType_t type, weftRedOp_t op, int nranks, size_t index, void* out,
                  size_t i) {
  const bool isSigned = isSignedType(type);
  int64_t result = inputValue(op, true, isSigned, 0, index);
  for (int r = 1; r < nranks; ++r) {
    int64_t value = inputValue(op, true, isSigned, r, index);
    switch (op) {
      case weftProd: result *= value; break;
      case weftMax: result = value > result ? value : result; break;
      case weftMin: result = value < result ? value : result; break;
      default: result += value; break;
    }
  }
  if (op != weftAvg) {
    storeValue(type, out, i, result);
    return;
  }
  const float scale = 1.0f / static_cast<float>(nranks);
  switch (type) {
    case weftFloat16:
      static_cast<uint16_t*>(out)[i] = floatToHalf(static_cast<float>(result) * scale);
      break;
    case weftBfloat16:
      static_cast<uint16_t*>(out)[i] = floatToBfloat16(static_cast<float>(result) * scale);
      break;
    case weftFloat32: static_cast<float*>(out)[i] = static_cast<float>(result) * scale; break;
    case weftFloat64:
      static_cast<double*>(out)[i] = static_cast<double>(result) * (1.0 / nranks);
      break;
    case weftUint64:
      static_cast<uint64_t*>(out)[i] = static_cast<uint64_t>(result) / static_cast<uint64_t>(nranks);
      break;
    default: storeValue(type, out, i, wrapToType(type, result) / nranks); break;
  }
}

}  // namespace weft::test
