// The transports the conformance suite runs against, and what differs between them: how one is
// made, the settings that move its internal thresholds, the sizes either side of them, and where
// its published address points a stray. Every case is a TEMPLATE_TEST_CASE over
// WEFT_CONFORMANCE_KINDS, so each transport gets its own ctest entry ("<case> - Tcp").
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "net/auth.h"
#include "transports/transport.h"
#include "unit/strays.h"

namespace weft::test::conformance {

enum class Kind { kTcp, kShm, kRdma };

template <Kind K>
struct TransportKind {
  static constexpr Kind kind = K;
};
using Tcp = TransportKind<Kind::kTcp>;
using Shm = TransportKind<Kind::kShm>;
using Rdma = TransportKind<Kind::kRdma>;

// rdma is built only where the verbs headers are (WEFT_RDMA_BUILT), and runs over the fake.
#ifdef WEFT_CONFORMANCE_RDMA
#define WEFT_CONFORMANCE_KINDS Tcp, Shm, Rdma
#else
#define WEFT_CONFORMANCE_KINDS Tcp, Shm
#endif

const char* nameOf(Kind kind);

// One rank's settings; each transport reads its own (the defaults are the library's).
struct Knobs {
  int socketsPerPeer = 1;
  size_t shmCrossMemoryMinBytes = 64 << 10;  // 0: single-copy off
  uint32_t rdmaSlots = 16;
  uint32_t rdmaSlotBytes = 64 << 10;
  size_t rdmaZeroCopyMinBytes = 64 << 10;  // 0: always staged
};

std::unique_ptr<Transport> createTransport(Kind kind, const Knobs& knobs);

// Settings and the message sizes that matter under them.
struct Variant {
  std::string what;
  std::vector<Knobs> knobs;  // rank r takes knobs[r % size]: the ends of a pair may differ
  std::vector<size_t> sizes;

  const Knobs& knobsFor(int rank) const { return knobs[rank % knobs.size()]; }
};

// Sizes just below, at and above each threshold where the transport changes how it moves a
// message (tcp striping, shm slots and single-copy, rdma slots and zero-copy).
std::vector<Variant> thresholdVariants(Kind kind);
// Each path a very large message can take (striped or not, single-copy or through the ring,
// zero-copy or staged).
std::vector<Variant> largeVariants(Kind kind);
// From this size on a message takes the transport's large-message path under `knobs`.
size_t largeMessageBytes(Kind kind, const Knobs& knobs);

// The listener behind a published address, and the purpose its handshakes expect.
StrayTarget strayTarget(Kind kind, const std::string& address);
net::Purpose listenerPurpose(Kind kind);

// What a test case needs around it: for rdma, the fake libibverbs selected (WEFT_IBVERBS_LIB)
// and reset, and afterwards the count of verbs objects still allocated.
class KindSession {
 public:
  explicit KindSession(Kind kind);
  ~KindSession();
  KindSession(const KindSession&) = delete;
  KindSession& operator=(const KindSession&) = delete;

  // Verbs objects (contexts, queue pairs, registrations, ...) still allocated; 0 but for rdma.
  int liveVerbsObjects() const;

 private:
  struct Fake;
  std::unique_ptr<Fake> fake_;
};

}  // namespace weft::test::conformance
