#include "transports/conformance/kinds.h"

#include "net/address.h"
#include "scoped_env.h"
#include "transports/shm/shm_layout.h"
#include "transports/shm/shm_transport.h"
#include "transports/tcp/tcp_transport.h"
#include "transports/tcp/tcp_wire.h"

#ifdef WEFT_CONFORMANCE_RDMA
#include <dlfcn.h>

#include "fake_verbs_control.h"
#include "transports/rdma/rdma_transport.h"
#include "transports/rdma/rdma_wire.h"
#endif

namespace weft::test::conformance {
namespace {

constexpr size_t kKiB = 1024;
constexpr size_t kMiB = 1024 * kKiB;
// Private to the transports' sources, so restated here: the piece sizes of a single-copy read
// (shm) and of a zero-copy write (rdma), and what one rdma advance() posts at most.
constexpr size_t kShmCrossMemoryPiece = 4 * kMiB;
constexpr size_t kRdmaZeroCopyPiece = 128 * kKiB;
constexpr size_t kRdmaPostBudget = 256 * kKiB;

Knobs tcpSockets(int sockets) {
  Knobs knobs;
  knobs.socketsPerPeer = sockets;
  return knobs;
}

Knobs shmCrossMemory(size_t minBytes) {
  Knobs knobs;
  knobs.shmCrossMemoryMinBytes = minBytes;
  return knobs;
}

Knobs rdmaRings(uint32_t slots, uint32_t slotBytes, size_t zeroCopyMinBytes) {
  Knobs knobs;
  knobs.rdmaSlots = slots;
  knobs.rdmaSlotBytes = slotBytes;
  knobs.rdmaZeroCopyMinBytes = zeroCopyMinBytes;
  return knobs;
}

std::vector<Variant> tcpThresholds() {
  const size_t stripe = tcp::kStripeThreshold;
  const int most = tcp::kMaxSocketsPerPeer;
  return {
      {"4 sockets per peer",
       {tcpSockets(4)},
       {stripe - 1, stripe, stripe + 1, stripe + 3, 4 * stripe + 2, kMiB + 7}},
      {"3 sockets per peer (parts of unequal length)",
       {tcpSockets(3)},
       {stripe, stripe + 1, stripe + 2, 3 * stripe - 1}},
      {"the most sockets per peer",
       {tcpSockets(most)},
       {stripe - 1, stripe, stripe + most - 1, most * stripe + 1}},
      {"ends asking for 4 and 2 sockets (a pair uses the fewer)",
       {tcpSockets(4), tcpSockets(2)},
       {stripe - 1, stripe, stripe + 1, 2 * stripe + 1}},
  };
}

std::vector<Variant> shmThresholds() {
  const size_t payload = shm::kSlotPayload;
  const size_t ring = shm::kSlots * shm::kSlotPayload;
  const size_t single = Knobs{}.shmCrossMemoryMinBytes;
  const size_t piece = kShmCrossMemoryPiece;
  return {
      {"single-copy from 64 KiB",
       {Knobs{}},
       {payload - 1, payload, payload + 1, 2 * payload, 2 * payload + 1, single - 1, single,
        single + 1, piece - 1, piece, piece + 1}},
      {"single-copy off (every message through the rings)",
       {shmCrossMemory(0)},
       {payload + 1, ring - 1, ring, ring + 1, 3 * ring + 5}},
      {"single-copy from 1 byte", {shmCrossMemory(1)}, {1, 2, payload + 1}},
  };
}

#ifdef WEFT_CONFORMANCE_RDMA
std::vector<Variant> rdmaThresholds() {
  const size_t payload = rdma::slotPayload(64 << 10);
  const size_t zeroCopy = 64 * kKiB;
  const size_t piece = kRdmaZeroCopyPiece;
  const size_t smallPayload = rdma::slotPayload(4096);
  return {
      {"16 slots of 64 KiB, zero-copy from 64 KiB",
       {Knobs{}},
       {payload - 1, payload, payload + 1, zeroCopy - 1, zeroCopy, zeroCopy + 1, piece - 1, piece,
        piece + 1, kRdmaPostBudget + 1, 16 * payload + 1}},
      {"16 slots of 64 KiB, always staged",
       {rdmaRings(16, 64 << 10, 0)},
       {payload, payload + 1, 16 * payload - 1, 16 * payload, 16 * payload + 1, 2 * kMiB + 3}},
      {"2 slots of 4 KiB, zero-copy from 4 KiB",
       {rdmaRings(2, 4096, 4096)},
       {smallPayload - 1, smallPayload, smallPayload + 1, 4095, 4096, 4097, 3 * smallPayload + 1,
        100000}},
      {"2 slots of 4 KiB, always staged",
       {rdmaRings(2, 4096, 0)},
       {smallPayload, smallPayload + 1, 2 * smallPayload, 2 * smallPayload + 1, 100000}},
      {"zero-copy from 1 KiB, below a slot's payload",
       {rdmaRings(16, 64 << 10, 1024)},
       {1023, 1024, payload + 1}},
  };
}
#endif

}  // namespace

const char* nameOf(Kind kind) {
  switch (kind) {
    case Kind::kTcp:
      return "tcp";
    case Kind::kShm:
      return "shm";
    case Kind::kRdma:
      return "rdma";
  }
  return "?";
}

std::unique_ptr<Transport> createTransport(Kind kind, const Knobs& knobs) {
  switch (kind) {
    case Kind::kTcp:
      return tcp::createTcpTransport(tcp::TcpOptions{knobs.socketsPerPeer});
    case Kind::kShm: {
      shm::ShmOptions options;
      options.crossMemoryMinBytes = knobs.shmCrossMemoryMinBytes;
      return shm::createShmTransport(options);
    }
    case Kind::kRdma: {
#ifdef WEFT_CONFORMANCE_RDMA
      rdma::RdmaOptions options;
      options.slots = knobs.rdmaSlots;
      options.slotBytes = knobs.rdmaSlotBytes;
      options.zeroCopyMinBytes = knobs.rdmaZeroCopyMinBytes;
      return rdma::createRdmaTransport(options);
#else
      return nullptr;
#endif
    }
  }
  return nullptr;
}

std::vector<Variant> thresholdVariants(Kind kind) {
  switch (kind) {
    case Kind::kTcp:
      return tcpThresholds();
    case Kind::kShm:
      return shmThresholds();
    case Kind::kRdma:
#ifdef WEFT_CONFORMANCE_RDMA
      return rdmaThresholds();
#else
      break;
#endif
  }
  return {};
}

std::vector<Variant> largeVariants(Kind kind) {
  switch (kind) {
    case Kind::kTcp:
      return {{"1 socket per peer", {tcpSockets(1)}, {}},
              {"4 sockets per peer (striped)", {tcpSockets(4)}, {}}};
    case Kind::kShm:
      return {{"single-copy", {Knobs{}}, {}},
              {"through the rings (single-copy off)", {shmCrossMemory(0)}, {}}};
    case Kind::kRdma:
      return {{"zero-copy", {Knobs{}}, {}},
              {"staged (zero-copy off)", {rdmaRings(16, 64 << 10, 0)}, {}}};
  }
  return {};
}

size_t largeMessageBytes(Kind kind, const Knobs& knobs) {
  switch (kind) {
    case Kind::kTcp:
      return tcp::kStripeThreshold;
    case Kind::kShm:
      return knobs.shmCrossMemoryMinBytes > 0 ? knobs.shmCrossMemoryMinBytes
                                              : shm::kSlotPayload + 1;
    case Kind::kRdma:
#ifdef WEFT_CONFORMANCE_RDMA
      return knobs.rdmaZeroCopyMinBytes > 0 ? knobs.rdmaZeroCopyMinBytes
                                            : rdma::slotPayload(knobs.rdmaSlotBytes) + 1;
#else
      break;
#endif
  }
  return 0;
}

StrayTarget strayTarget(Kind kind, const std::string& address) {
  // tcp publishes the socket address (then its socket count), rdma a version byte and then its
  // side listener's address, shm the pid and then the abstract socket's name.
  if (kind == Kind::kShm) return StrayTarget::unixSocket(address.substr(sizeof(int32_t)));
  const size_t at = kind == Kind::kRdma ? 1 : 0;
  REQUIRE(address.size() >= at + net::SocketAddress::kWireBytes);
  net::SocketAddress decoded;
  REQUIRE(
      net::SocketAddress::decode(reinterpret_cast<const uint8_t*>(address.data()) + at, &decoded)
          .isOk());
  return decoded;
}

net::Purpose listenerPurpose(Kind kind) {
  switch (kind) {
    case Kind::kTcp:
      return net::Purpose::kTcpData;
    case Kind::kShm:
      return net::Purpose::kShm;
    case Kind::kRdma:
      return net::Purpose::kRdmaSide;
  }
  return net::Purpose::kTcpData;
}

#ifdef WEFT_CONFORMANCE_RDMA
// The fake's control functions, from the very library the transport loads (dlopen of the same
// path returns the same handle).
struct KindSession::Fake {
  Fake() : env("WEFT_IBVERBS_LIB", WEFT_FAKE_VERBS_PATH) {
    handle = dlopen(WEFT_FAKE_VERBS_PATH, RTLD_NOW | RTLD_LOCAL);
    REQUIRE(handle != nullptr);
    control =
        reinterpret_cast<weft_fake_verbs_control_fn>(dlsym(handle, "weft_fake_verbs_control"));
    live = reinterpret_cast<weft_fake_verbs_live_objects_fn>(
        dlsym(handle, "weft_fake_verbs_live_objects"));
    REQUIRE(control != nullptr);
    REQUIRE(live != nullptr);
    REQUIRE(control("reset") == 0);
  }
  ~Fake() {
    control("reset");
    dlclose(handle);
  }

  ScopedEnv env;
  void* handle = nullptr;
  weft_fake_verbs_control_fn control = nullptr;
  weft_fake_verbs_live_objects_fn live = nullptr;
};
#else
struct KindSession::Fake {
  int (*live)() = nullptr;
};
#endif

KindSession::KindSession(Kind kind) {
  if (kind == Kind::kRdma) fake_ = std::make_unique<Fake>();
}

KindSession::~KindSession() = default;

int KindSession::liveVerbsObjects() const {
  return fake_ && fake_->live ? fake_->live() : 0;
}

}  // namespace weft::test::conformance
