// Argument checks for the collective entry points. Each failure names the function and the
// argument, and leaves the communicator untouched.
#pragma once

#include <cstddef>

#include "core/comm.h"
#include "core/op.h"
#include "core/status.h"

namespace weft::api {

// Checks a call's datatype, op, root/peer, buffers and sizes against the communicator.
// `fn` is the public name used in messages ("weftAllReduce").
Status checkCall(const char* fn, const weftComm& comm, const CollArgs& args);

}  // namespace weft::api
