// Argument checks for the collective entry points. Each failure names the function and the
// argument, and leaves the communicator untouched.
#pragma once

#include <cstddef>
#include <cstring>

#include "base/call.h"
#include "base/status.h"
#include "core/comm.h"

namespace weft::api {

// A call as the user made it. The datatype and op stay plain integers until they are checked:
// a C caller may pass any int, and reading an out-of-range value as a C++ enum is undefined.
struct RawCall {
  CollType coll = CollType::kBarrier;
  const void* send = nullptr;
  void* recv = nullptr;
  size_t count = 0;
  int type = 0;
  int op = 0;
  int root = 0;  // root, or the peer of Send/Recv
};

// Reads an enum argument's bits without an enum-typed load (see RawCall).
template <typename Enum>
int rawEnum(const Enum& value) {
  static_assert(sizeof(Enum) == sizeof(int));
  int raw;
  std::memcpy(&raw, &value, sizeof(raw));
  return raw;
}

inline RawCall rawCall(CollType coll, const void* send, void* recv, size_t count,
                       const weftDataType_t& type, const weftRedOp_t& op, int root) {
  return RawCall{coll, send, recv, count, rawEnum(type), rawEnum(op), root};
}

// Checks a call's datatype, op, root/peer, buffers and sizes against the communicator and, when
// they are valid, fills *args. `fn` is the public name used in messages ("weftAllReduce").
Status checkCall(const char* fn, const weftComm& comm, const RawCall& call, CollArgs* args);

// checkCall, then where the buffers live (cuda/buffer_kind.h): everything a call is checked for
// before it is submitted.
Status checkAndClassify(const char* fn, weftComm* comm, const RawCall& call, CollArgs* args);

}  // namespace weft::api
