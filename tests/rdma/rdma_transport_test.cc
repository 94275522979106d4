// The rdma transport over the project's fake libibverbs (tests/rdma/fake_verbs), loaded through
// the same dlopen seam as the real library (WEFT_IBVERBS_LIB): ranks are threads of this
// process, and the fake completes work asynchronously, enforces the queue-pair state machine,
// really frees what it allocates and injects faults.
//
// With WEFT_RDMA_TEST_VERBS=real the same tests run over the real libibverbs (Soft-RoCE in the
// QEMU guest of tests/rdma/qemu), except those tagged [fake], which need the fake's devices or
// faults.
#include <dlfcn.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <string>
#include <vector>

#include "fake_verbs_control.h"
#include "multirank/check_matrix.h"
#include "scoped_env.h"

namespace weft::test {
namespace {

bool realVerbs() {
  const char* verbs = std::getenv("WEFT_RDMA_TEST_VERBS");
  return verbs != nullptr && std::string(verbs) == "real";
}

const char* verbsLibrary() {
  return realVerbs() ? "libibverbs.so.1" : WEFT_FAKE_VERBS_PATH;
}

// The fake's control functions, from the very library the transport loads (dlopen of the same
// path returns the same handle). Over real verbs there are none: live() counts nothing.
struct FakeVerbs {
  FakeVerbs() {
    if (realVerbs()) return;
    handle = dlopen(WEFT_FAKE_VERBS_PATH, RTLD_NOW | RTLD_LOCAL);
    REQUIRE(handle != nullptr);
    control =
        reinterpret_cast<weft_fake_verbs_control_fn>(dlsym(handle, "weft_fake_verbs_control"));
    liveObjects = reinterpret_cast<weft_fake_verbs_live_objects_fn>(
        dlsym(handle, "weft_fake_verbs_live_objects"));
    REQUIRE(control != nullptr);
    REQUIRE(liveObjects != nullptr);
    REQUIRE(control("reset") == 0);
  }
  ~FakeVerbs() {
    if (handle == nullptr) return;
    control("reset");
    dlclose(handle);
  }
  int live() const { return liveObjects ? liveObjects() : 0; }

  void* handle = nullptr;
  weft_fake_verbs_control_fn control = nullptr;
  weft_fake_verbs_live_objects_fn liveObjects = nullptr;
};

// WEFT_TRANSPORT=rdma through the library under test, plus whatever the test adds.
struct RdmaEnv {
  explicit RdmaEnv(const char* transport = "rdma")
      : env({{"WEFT_TRANSPORT", transport}, {"WEFT_IBVERBS_LIB", verbsLibrary()}}) {}
  ScopedEnv env;
};

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Every rank's result and last-error text for one call made by `call`.
struct Outcomes {
  std::vector<weftResult_t> results;
  std::vector<std::string> messages;
  std::string init;
};

Outcomes runCall(int n, const std::function<weftResult_t(weftComm_t, int)>& call,
                 const std::function<void()>& afterInit = nullptr, int timeoutMs = 3000) {
  Outcomes out;
  out.results.assign(n, weftSuccess);
  out.messages.resize(n);
  weftConfig_t config = WEFT_CONFIG_INITIALIZER;
  config.timeoutMs = timeoutMs;
  std::atomic<int> ready{0};
  out.init = runAsThreads(
      n,
      [&](weftComm_t comm, int rank) {
        // Everyone connected before the fault is armed, so it hits the call, not the set-up.
        weftBarrier(comm, nullptr);
        if (++ready == n && afterInit) afterInit();
        while (ready < n) std::this_thread::yield();
        out.results[rank] = call(comm, rank);
        out.messages[rank] = weftGetLastError(comm);
      },
      &config);
  return out;
}

std::string describe(const Outcomes& o) {
  std::string text = o.init;
  for (size_t r = 0; r < o.messages.size(); ++r) {
    text += "rank " + std::to_string(r) + ": " + weftGetErrorString(o.results[r]) + " / " +
            o.messages[r] + "\n";
  }
  return text;
}

}  // namespace

TEST_CASE("every collective over rdma on 2, 3 and 5 thread ranks", "[rdma]") {
  FakeVerbs fake;
  RdmaEnv rdma;
  int n = GENERATE(2, 3, 5);
  CAPTURE(n);
  checkMatrix(n, MatrixOptions{});
  CHECK(fake.live() == 0);  // every queue pair, region and registration released
}

TEST_CASE("rdma with tiny staging rings: credits wrap, zero-copy for most messages", "[rdma]") {
  FakeVerbs fake;
  RdmaEnv rdma;
  // Two 4 KiB slots: every message of a few KiB waits for credits many times over; from 4 KiB
  // on messages go zero-copy, and 256-byte slices make the ring pipelines post hundreds.
  const char* zeroCopy = GENERATE("4096", "0");
  CAPTURE(zeroCopy);
  ScopedEnv small({{"WEFT_RDMA_SLOTS", "2"},
                   {"WEFT_RDMA_SLOT_BYTES", "4096"},
                   {"WEFT_RDMA_ZCOPY_BYTES", zeroCopy},
                   {"WEFT_SLICE_BYTES", "1024"}});
  int n = GENERATE(2, 3);
  CAPTURE(n);
  MatrixOptions options;
  options.types = {weftFloat32, weftInt8, weftFloat64};
  checkMatrix(n, options);
  CHECK(fake.live() == 0);
}

TEST_CASE("a short matrix over rdma: staged and zero-copy, small rings, blocking or not",
          "[rdma][guest]") {
  // What the Soft-RoCE guest runs (emulated, so kept short): every collective on two ranks,
  // with default rings and with two 4 KiB slots and zero-copy from 4 KiB.
  FakeVerbs fake;
  RdmaEnv rdma;
  const bool small = GENERATE(false, true);
  const bool nonBlocking = GENERATE(false, true);
  CAPTURE(small, nonBlocking);
  ScopedEnv rings({{"WEFT_RDMA_SLOTS", small ? "2" : nullptr},
                   {"WEFT_RDMA_SLOT_BYTES", small ? "4096" : nullptr},
                   {"WEFT_RDMA_ZCOPY_BYTES", small ? "4096" : nullptr}});
  MatrixOptions options;
  options.types = {weftFloat32, weftBfloat16, weftInt64};
  options.ops = {weftSum, weftMax};
  options.nonBlocking = nonBlocking;
  checkMatrix(2, options);
  CHECK(fake.live() == 0);
}

TEST_CASE("non-blocking calls over rdma complete through weftWait", "[rdma]") {
  FakeVerbs fake;
  RdmaEnv rdma;
  MatrixOptions options;
  options.nonBlocking = true;
  options.types = {weftFloat32, weftInt32};
  checkMatrix(3, options);
}

TEST_CASE("two hosts: shared memory inside each, rdma between them", "[rdma]") {
  FakeVerbs fake;
  RdmaEnv automatic("");
  const char* layout = GENERATE("AABB", "ABAB");
  CAPTURE(layout);
  MatrixOptions options;
  options.types = {weftFloat32, weftBfloat16};
  std::atomic<int> verbsObjects{0};
  std::atomic<int> failures{0};
  weftConfig_t configs[4] = {WEFT_CONFIG_INITIALIZER, WEFT_CONFIG_INITIALIZER,
                             WEFT_CONFIG_INITIALIZER, WEFT_CONFIG_INITIALIZER};
  for (int r = 0; r < 4; ++r) configs[r].hostId = layout[r] == 'A' ? "host-A" : "host-B";
  // Catch2's assertions are not thread-safe: the rank threads only count.
  std::string init = runAsThreadsWith(
      4,
      [&](weftComm_t comm, int) {
        verbsObjects = fake.live();
        failures += runMatrix(comm, options).failures;
      },
      [&](int rank) { return &configs[rank]; });
  REQUIRE(init.empty());
  CHECK(failures == 0);
  if (!realVerbs()) CHECK(verbsObjects > 0);  // the peers of the other host went over rdma
  CHECK(fake.live() == 0);
}

TEST_CASE("without a usable RDMA port: tcp between hosts, and a forced rdma names why",
          "[rdma][fake]") {
  FakeVerbs fake;
  struct Case {
    const char* variable;
    const char* value;
    const char* why;
  };
  const Case c = GENERATE(Case{"WEFT_FAKE_VERBS_DEVICES", "", "Function not implemented"},
                          Case{"WEFT_FAKE_VERBS_PORT_STATE", "down", "no ACTIVE port"},
                          Case{"WEFT_FAKE_VERBS_GIDS", "none", "no usable GID"},
                          Case{"WEFT_IB_HCA", "mlx5", "admits none of fake0"},
                          Case{"WEFT_IB_GID_INDEX", "9", "WEFT_IB_GID_INDEX=9"},
                          Case{"WEFT_IBVERBS_LIB", "/nonexistent/libibverbs.so.1", "cannot load"});
  CAPTURE(c.variable, c.value);
  {
    RdmaEnv automatic("");
    ScopedEnv broken(c.variable, c.value);
    std::atomic<int> verbsObjects{0};
    std::atomic<int> correct{0};
    weftConfig_t configs[2] = {WEFT_CONFIG_INITIALIZER, WEFT_CONFIG_INITIALIZER};
    configs[0].hostId = "host-A";
    configs[1].hostId = "host-B";
    std::string init = runAsThreadsWith(
        2,
        [&](weftComm_t comm, int) {
          verbsObjects += fake.live();
          float value = 1;
          weftResult_t result =
              weftAllReduce(&value, &value, 1, weftFloat32, weftSum, comm, nullptr);
          correct += result == weftSuccess && value == 2;
        },
        [&](int rank) { return &configs[rank]; });
    CHECK(init.empty());
    CHECK(correct == 2);
    CHECK(verbsObjects == 0);  // tcp, and nothing of the failed probe left open
  }
  {
    RdmaEnv forced;
    ScopedEnv broken(c.variable, c.value);
    std::string init = runAsThreads(2, [](weftComm_t, int) {});
    INFO(init);
    CHECK(contains(init, "rank 0: init:"));
    CHECK(contains(init, "rank 1: init:"));
    CHECK(contains(init, "WEFT_TRANSPORT=rdma, but RDMA is unavailable on this rank"));
    CHECK(contains(init, c.why));
  }
  CHECK(fake.live() == 0);
}

TEST_CASE("a mismatched send and receive over rdma are reported, naming the mismatch",
          "[rdma][faults][guest]") {
  FakeVerbs fake;
  RdmaEnv rdma;
  ScopedEnv zeroCopy("WEFT_RDMA_ZCOPY_BYTES", "65536");
  struct Sizes {
    size_t send, recv;
  };
  // Both staged, both zero-copy, and each side of the threshold.
  const Sizes sizes =
      GENERATE(Sizes{100, 50}, Sizes{40000, 20000}, Sizes{40000, 100}, Sizes{100, 40000});
  CAPTURE(sizes.send, sizes.recv);
  std::vector<float> buffer(std::max(sizes.send, sizes.recv), 1.0f);
  Outcomes o = runCall(2, [&](weftComm_t comm, int rank) {
    return rank == 0 ? weftSend(buffer.data(), sizes.send, weftFloat32, 1, comm, nullptr)
                     : weftRecv(buffer.data(), sizes.recv, weftFloat32, 0, comm, nullptr);
  });
  INFO(describe(o));
  REQUIRE(o.init.empty());
  // Whoever sees the other's size first reports the mismatch: the receiver when data or the
  // rendezvous slot arrives, the sender of a zero-copy message when the receiver's buffer is
  // announced; the other end fails as its peer leaves. A staged send may succeed: it completes
  // once its data is in staging memory (as a TCP send does once the kernel has it).
  CHECK(o.results[1] != weftSuccess);
  if (sizes.send >= 16384) CHECK(o.results[0] != weftSuccess);
  CHECK(
      (contains(o.messages[0], "message mismatch") || contains(o.messages[1], "message mismatch")));
  // Found by the protocol, not by the 3 s timeout (in a guest under emulation on a busy host the
  // protocol itself may take longer than that, so no clock is read here).
  CHECK(o.results[0] != weftTimeout);
  CHECK(o.results[1] != weftTimeout);
}

TEST_CASE("a registration that fails during a zero-copy call fails the communicator clearly",
          "[rdma][faults][fake]") {
  FakeVerbs fake;
  RdmaEnv rdma;
  std::vector<float> data(1 << 16, 1.0f);  // 256 KiB: zero-copy
  std::atomic<bool> armed{false};          // set on a rank thread: Catch2 asserts only on this one
  Outcomes o = runCall(
      2,
      [&](weftComm_t comm, int) {
        return weftAllReduce(data.data(), data.data(), data.size(), weftFloat32, weftSum, comm,
                             nullptr);
      },
      [&] { armed = fake.control("fail_reg_mr 1") == 0; });
  INFO(describe(o));
  REQUIRE(o.init.empty());
  REQUIRE(armed);
  CHECK(o.results[0] != weftSuccess);
  CHECK(o.results[1] != weftSuccess);
  CHECK((contains(o.messages[0], "registering") || contains(o.messages[1], "registering")));
  CHECK(o.results[0] != weftTimeout);  // told by its peer, not left to its timeout
  CHECK(o.results[1] != weftTimeout);
  CHECK(fake.live() == 0);
}

TEST_CASE("a buffer registered with weftCommRegister stays registered across calls",
          "[rdma][fake]") {
  FakeVerbs fake;
  RdmaEnv rdma;
  // Broadcasts of a zero-copy size: each rank's transfers are in its own buffer only (an
  // all-reduce would also receive into the library's scratch memory).
  std::vector<std::vector<float>> data(2, std::vector<float>(1 << 16));
  data[0].assign(data[0].size(), 1.0f);
  data[1].assign(data[1].size(), 2.0f);
  int armed = -1;
  Outcomes o = runCall(2, [&](weftComm_t comm, int rank) {
    std::vector<float>& mine = data[rank];
    void* handle = nullptr;
    weftResult_t result = weftCommRegister(comm, mine.data(), mine.size() * sizeof(float), &handle);
    if (result != weftSuccess) return result;
    std::vector<float> second(mine);  // what rank 1 broadcasts next
    result = weftBroadcast(mine.data(), mine.data(), mine.size(), weftFloat32, 0, comm, nullptr);
    if (result != weftSuccess) return result;
    // From here every ibv_reg_mr fails: the second call must need none.
    weftBarrier(comm, nullptr);
    if (rank == 0 && fake.control != nullptr) armed = fake.control("fail_reg_mr 1");
    weftBarrier(comm, nullptr);
    if (rank == 1) mine = second;  // same memory: std::vector keeps its buffer
    result = weftBroadcast(mine.data(), mine.data(), mine.size(), weftFloat32, 1, comm, nullptr);
    if (result != weftSuccess) return result;
    return weftCommDeregister(comm, handle);
  });
  INFO(describe(o));
  REQUIRE(o.init.empty());
  CHECK(o.results[0] == weftSuccess);
  CHECK(o.results[1] == weftSuccess);
  CHECK(data[0][0] == 2.0f);
  CHECK(data[0][12345] == 2.0f);
  if (realVerbs()) return;  // the fault needs the fake
  CHECK(armed == 0);
  CHECK(fake.live() == 0);
}

TEST_CASE("a lost completion becomes a timeout naming the peer, never a hang",
          "[rdma][faults][fake]") {
  FakeVerbs fake;
  RdmaEnv rdma;
  std::atomic<bool> armed{false};
  Outcomes o = runCall(
      2,
      [&](weftComm_t comm, int) {
        float value = 1;
        return weftAllReduce(&value, &value, 1, weftFloat32, weftSum, comm, nullptr);
      },
      [&] { armed = fake.control("lose_completion 1") == 0; }, 1500);
  INFO(describe(o));
  REQUIRE(o.init.empty());
  REQUIRE(armed);
  // Whichever completion was lost, the rank that waits for it fails, naming its peer: at its
  // timeout, or as soon as the peer leaves (its goodbye shows the wait can never end).
  int failed = 0;
  for (int rank = 0; rank < 2; ++rank) {
    if (o.results[rank] == weftSuccess) continue;
    ++failed;
    CHECK((o.results[rank] == weftTimeout || o.results[rank] == weftRemoteError));
    CHECK(contains(o.messages[rank], "rank " + std::to_string(1 - rank)));
  }
  CHECK(failed >= 1);  // a hang would instead run into ctest's timeout
  CHECK(fake.live() == 0);
}

TEST_CASE("a peer whose NIC dies: the survivors fail naming it", "[rdma][faults][fake]") {
  FakeVerbs fake;
  RdmaEnv rdma;
  // An all-to-all: every survivor writes to the rank whose NIC died, so verbs reports it to
  // each of them; the dead rank itself hears of it through the side connections.
  std::atomic<bool> armed{false};
  Outcomes o = runCall(
      3,
      [&](weftComm_t comm, int) {
        std::vector<float> send(3 * 1024, 1.0f), recv(send.size());
        return weftAlltoAll(send.data(), recv.data(), 1024, weftFloat32, comm, nullptr);
      },
      // Contexts are numbered in the order the ranks opened them: one of the three dies.
      [&] { armed = fake.control("kill_context 1") == 0; }, 4000);
  INFO(describe(o));
  REQUIRE(o.init.empty());
  REQUIRE(armed);
  int retryExceeded = 0;
  for (int rank = 0; rank < 3; ++rank) {
    CHECK(o.results[rank] != weftSuccess);
    retryExceeded += contains(o.messages[rank], "retry");
  }
  CHECK(retryExceeded >= 1);  // a survivor's write to the dead NIC, named by verbs
  for (int rank = 0; rank < 3; ++rank) {
    CHECK(o.results[rank] != weftTimeout);  // the survivors do not wait for their timeout
  }
  CHECK(fake.live() == 0);
}

}  // namespace weft::test
