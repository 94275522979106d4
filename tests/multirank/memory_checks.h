// Checks of the zero-copy buffers (weftMemAlloc, weftCommRegister, weftCommWindowRegister):
// every collective with each kind of buffer, alike on every rank and mixed across ranks, and the
// errors of the memory API. Shared by the threaded tests (registered_buffers_test.cc) and the
// process checker run under weftrun (memory_check_main.cc); every function is collective.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "weft/weft.h"

namespace weft::test {

// At most this many failures are described in a result; the rest are counted.
constexpr size_t kMaxMessages = 8;

// Where one rank's call buffers live.
enum class BufferMode {
  kPlain,            // ordinary heap memory
  kMemAlloc,         // weftMemAlloc
  kRegistered,       // weftMemAlloc, registered with weftCommRegister
  kWindow,           // weftMemAlloc inside a WEFT_WIN_COLL_SYMMETRIC window
  kRegisteredPlain,  // heap memory registered with weftCommRegister
};
const char* bufferModeName(BufferMode mode);

// The mode of every rank for one pass over the collectives.
struct ModePattern {
  const char* name;
  BufferMode (*modeOf)(int rank);
  // Buffers at offsets into their allocation that differ by rank (in a symmetric window: a
  // broken promise, which costs speed, never correctness).
  bool skewed = false;
};
// Every rank alike, for each mode; rank i in mode i % 4; rotated so that a window rank meets a
// plain one at two ranks; only shareable modes, mixed; and windows at skewed offsets.
std::vector<ModePattern> allModePatterns();

// Half the shared window (WEFT_SHM_WINDOW_BYTES, default 8 MiB): one round of the direct
// algorithms.
size_t sharedWindowAreaBytes();
// Element counts: 1, 7, about 100 KB of 4-byte elements (past the flat all-reduce's limit), and
// 2.5 window areas of 4-byte elements (several rounds), each odd.
std::vector<size_t> memoryCheckCounts();

struct MemoryCheckOptions {
  std::vector<ModePattern> patterns = allModePatterns();
  std::vector<size_t> counts;  // empty: memoryCheckCounts()
  bool nonBlocking = false;    // issue each call with a request, then weftWait
  // Where every rank's buffers are shareable, the peers' memory must have been mapped (true
  // for shared memory on one host; false over other transports).
  bool expectZeroCopy = true;
};

struct MemoryCheckResult {
  int calls = 0;
  int failures = 0;
  std::vector<std::string> messages;  // the first few failures, described
};

// Every collective (in place and out of place where the API allows) for each pattern and count.
MemoryCheckResult runMemoryChecks(weftComm_t comm, const MemoryCheckOptions& options);

// The memory API's errors: each bad call gets its code and a message naming the argument, and
// the communicator stays usable. Returns the failures, described.
std::vector<std::string> runMemoryErrorChecks(weftComm_t comm);

// Many weftMemAlloc buffers at once, more than a communicator keeps its peers' mappings of, each
// all-reduced in place of the others' (100 KB: the zero-copy path), then freed and allocated
// again; and grouped collectives on such buffers. Returns the failures, described.
std::vector<std::string> runAllocationChurn(weftComm_t comm, int allocations);

// `iterations` verified calls on buffers in a symmetric window (for kill tests).
MemoryCheckResult runWindowLoop(weftComm_t comm, int iterations);

}  // namespace weft::test
