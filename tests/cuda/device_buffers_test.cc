// Device buffers and stream-ordered calls over the fake GPU (fake_device.h): the whole
// correctness matrix on device buffers staged through pinned memory, stream ordering (a call
// returns before its inputs exist; the stream's later work sees its result), releases on failure,
// and the argument errors; and that a communicator on host memory never uses the runtime.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cuda/device_api.h"
#include "cuda/gpu_state.h"
#include "fake_device.h"
#include "multirank/check_matrix.h"
#include "multirank/rank_threads.h"
#include "scoped_env.h"
#include "unit/log_capture.h"

namespace weft::test {
namespace {

// Installs a fake GPU runtime for the scope of a test.
class FakeGpu {
 public:
  explicit FakeGpu(int devices = 1) : fake(devices) { device::setDeviceApiForTesting(&fake); }
  ~FakeGpu() { device::setDeviceApiForTesting(nullptr); }
  FakeDevice fake;
};

class FakeMemory final : public DeviceMemory {
 public:
  explicit FakeMemory(FakeDevice& fake, int device = 0) : fake_(fake), device_(device) {}
  void* allocate(size_t bytes) override {
    void* ptr = nullptr;
    Status made = fake_.deviceAlloc(device_, bytes, &ptr);
    if (!made.isOk()) std::abort();  // the fake ran out of memory: nothing to test
    return ptr;
  }
  void release(void* device) override { fake_.deviceFree(device); }
  void upload(void* device, const void* host, size_t bytes) override {
    std::memcpy(fake_.deviceView(device), host, bytes);
  }
  void download(void* host, const void* device, size_t bytes) override {
    std::memcpy(host, fake_.deviceView(device), bytes);
  }

 private:
  FakeDevice& fake_;
  int device_;
};

// A device buffer of count floats, filled through the fake's view.
struct DeviceFloats {
  DeviceFloats(FakeDevice& fake, size_t count, float fill = 0) : fake(fake), count(count) {
    if (!fake.deviceAlloc(0, count * sizeof(float), &ptr).isOk()) std::abort();  // no memory
    for (size_t i = 0; i < count; ++i) view()[i] = fill;
  }
  ~DeviceFloats() { fake.deviceFree(ptr); }
  float* view() const { return static_cast<float*>(fake.deviceView(ptr)); }
  FakeDevice& fake;
  size_t count;
  void* ptr = nullptr;
};

// Catch's assertions are not thread-safe: rank threads record what went wrong here, and the
// test checks the record once they have joined.
class Problems {
 public:
  void add(const std::string& what) {
    std::lock_guard<std::mutex> lock(mutex_);
    all_ += what + "\n";
  }
  // Records `what` unless ok; returns ok.
  bool expect(bool ok, const std::string& what) {
    if (!ok) add(what);
    return ok;
  }
  std::string all() const { return all_; }

 private:
  std::mutex mutex_;
  std::string all_;
};

}  // namespace

TEST_CASE("every collective on device buffers, staged through pinned memory", "[cuda]") {
  FakeGpu gpu;
  FakeMemory memory(gpu.fake);
  const int n = GENERATE(1, 2, 3, 4);
  const char* transport = GENERATE("shm", "tcp");
  if (n == 1 && std::string(transport) == "tcp") return;
  CAPTURE(n, transport);
  ScopedEnv via("WEFT_TRANSPORT", transport);
  MatrixOptions options;
  options.device = &memory;
  // The staging is the same for every type; sanitizer builds (which cap the rank count) keep a
  // 4-byte and a 2-byte one, and the release build checks all four.
  const bool capped = std::getenv("WEFT_TEST_MAX_RANKS") != nullptr;
  options.types = capped
                      ? std::vector<weftDataType_t>{weftFloat32, weftBfloat16}
                      : std::vector<weftDataType_t>{weftFloat32, weftInt32, weftBfloat16, weftInt8};
  checkMatrix(n, options);
  CHECK(gpu.fake.misuses().empty());
}

TEST_CASE("large device calls across hosts are staged chunk by chunk", "[cuda]") {
  FakeGpu gpu;
  FakeMemory memory(gpu.fake);
  // Sanitizer builds (which cap the rank count) check 8 MiB calls element by element slowly
  // enough that one rank count is what their time allows.
  const bool capped = std::getenv("WEFT_TEST_MAX_RANKS") != nullptr;
  const int n = capped ? 2 : GENERATE(2, 3);
  CAPTURE(n);
  MatrixOptions options;
  options.device = &memory;
  options.colls = {Coll::kAllReduce, Coll::kBroadcast, Coll::kReduce};
  options.types = {weftFloat32, weftBfloat16};
  options.ops = {weftSum, weftAvg};
  // 4194307 elements: four 4 MiB chunks and a partial one in float32, two and a partial one in
  // bfloat16; 2097153: two and a partial one in float32 (bfloat16: 4 MiB, staged whole).
  options.counts = capped ? std::vector<size_t>{4194307} : std::vector<size_t>{2097153, 4194307};
  checkMatrix(n, options, [](int rank) { return rank % 2 == 0 ? "host-even" : "host-odd"; });
}

TEST_CASE("non-blocking calls on device buffers complete through weftWait", "[cuda]") {
  FakeGpu gpu;
  FakeMemory memory(gpu.fake);
  MatrixOptions options;
  options.device = &memory;
  options.nonBlocking = true;
  options.types = {weftFloat32};
  checkMatrix(3, options);
}

TEST_CASE("a communicator on host buffers never uses the GPU runtime", "[cuda]") {
  FakeGpu gpu;
  MatrixOptions options;
  options.types = {weftFloat32, weftInt8};
  checkMatrix(2, options);
  // Classifying a buffer is the one question a host-only communicator asks (and the CUDA runtime
  // implementation answers it without the driver in a process that has not loaded one).
  CHECK(gpu.fake.classifyCalls() > 0);
  CHECK(gpu.fake.calls() == 0);
  const FakeDevice::Live live = gpu.fake.live();
  CHECK(live.streams == 0);
  CHECK(live.hostAllocations == 0);
  CHECK(live.events == 0);
}

TEST_CASE("a stream-ordered all-reduce runs behind the stream's work and before its later work",
          "[cuda]") {
  FakeGpu gpu;
  FakeDevice& fake = gpu.fake;
  constexpr size_t kCount = 1000;
  const int n = GENERATE(2, 3);
  CAPTURE(n);
  Problems problems;
  std::string init = runAsThreads(n, [&](weftComm_t comm, int rank) {
    const std::string me = "rank " + std::to_string(rank) + ": ";
    device::Stream stream = nullptr;
    if (!problems.expect(fake.streamCreate(&stream).isOk(), me + "streamCreate")) return;
    DeviceFloats send(fake, kCount, -1);
    DeviceFloats recv(fake, kCount, -1);
    std::vector<float> seen;
    fake.pauseStream(stream);
    // The inputs are written by the stream's own work, queued before the call.
    problems.expect(fake.launch(stream,
                                [&] {
                                  for (size_t i = 0; i < kCount; ++i) {
                                    send.view()[i] = float(rank + 1) * float(i);
                                  }
                                })
                        .isOk(),
                    me + "launch");
    weftResult_t called =
        weftAllReduceOnStream(send.ptr, recv.ptr, kCount, weftFloat32, weftSum, comm, stream);
    problems.expect(called == weftSuccess, me + "OnStream: " + weftGetLastError(comm));
    problems.expect(
        fake.launch(stream, [&] { seen.assign(recv.view(), recv.view() + kCount); }).isOk(),
        me + "launch");
    // The call returned with its stream held: its inputs do not exist yet.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    problems.expect(seen.empty(), me + "the stream's later work ran before the stream resumed");
    fake.resumeStream(stream);
    problems.expect(fake.streamSynchronize(stream).isOk(), me + "streamSynchronize");
    const float ranksSum = float(n * (n + 1) / 2);
    if (problems.expect(seen.size() == kCount, me + "the later work saw no result")) {
      for (size_t i = 0; i < kCount; ++i) {
        if (!problems.expect(
                seen[i] == ranksSum * float(i),
                me + "element " + std::to_string(i) + " is " + std::to_string(seen[i]))) {
          break;
        }
      }
    }
    fake.streamDestroy(stream);
  });
  REQUIRE(init.empty());
  INFO(problems.all());
  CHECK(problems.all().empty());
}

TEST_CASE("stream-ordered point-to-point calls in a group, on two streams", "[cuda]") {
  FakeGpu gpu;
  FakeDevice& fake = gpu.fake;
  constexpr size_t kCount = 4099;
  const int n = 3;
  Problems problems;
  std::string init = runAsThreads(n, [&](weftComm_t comm, int rank) {
    const std::string me = "rank " + std::to_string(rank) + ": ";
    device::Stream sendStream = nullptr;
    device::Stream recvStream = nullptr;
    problems.expect(fake.streamCreate(&sendStream).isOk(), me + "streamCreate");
    problems.expect(fake.streamCreate(&recvStream).isOk(), me + "streamCreate");
    DeviceFloats send(fake, kCount, float(rank));
    DeviceFloats recv(fake, kCount, -1);
    const int next = (rank + 1) % n;
    const int prev = (rank + n - 1) % n;
    weftGroupStart();
    weftResult_t sent = weftSendOnStream(send.ptr, kCount, weftFloat32, next, comm, sendStream);
    weftResult_t got = weftRecvOnStream(recv.ptr, kCount, weftFloat32, prev, comm, recvStream);
    weftResult_t ended = weftGroupEnd();
    problems.expect(sent == weftSuccess && got == weftSuccess && ended == weftSuccess,
                    me + "calls: " + weftGetLastError(comm));
    problems.expect(fake.streamSynchronize(recvStream).isOk(), me + "synchronize");
    problems.expect(fake.streamSynchronize(sendStream).isOk(), me + "synchronize");
    int bad = 0;
    for (size_t i = 0; i < kCount; ++i) bad += recv.view()[i] != float(prev);
    problems.expect(bad == 0, me + std::to_string(bad) + " wrong elements");
    fake.streamDestroy(sendStream);
    fake.streamDestroy(recvStream);
  });
  REQUIRE(init.empty());
  INFO(problems.all());
  CHECK(problems.all().empty());
}

TEST_CASE("a stream-ordered call that fails still releases its stream", "[cuda]") {
  FakeGpu gpu;
  FakeDevice& fake = gpu.fake;
  ScopedEnv timeout("WEFT_TIMEOUT", "1");  // the environment overrides config.timeoutMs
  weftResult_t asyncError = weftSuccess;
  weftResult_t called = weftInternalError;
  bool synchronized = false;
  double releasedAfter = -1;
  std::string init = runAsThreads(2, [&](weftComm_t comm, int rank) {
    if (rank == 1) {  // never joins the call; leaves after rank 0 has given up
      std::this_thread::sleep_for(std::chrono::milliseconds(2500));
      return;
    }
    device::Stream stream = nullptr;
    if (!fake.streamCreate(&stream).isOk()) return;
    DeviceFloats buffer(fake, 64, 1);
    const auto start = std::chrono::steady_clock::now();
    called = weftAllReduceOnStream(buffer.ptr, buffer.ptr, 64, weftFloat32, weftSum, comm, stream);
    synchronized = fake.streamSynchronize(stream).isOk();
    releasedAfter = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    weftCommGetAsyncError(comm, &asyncError);
    fake.streamDestroy(stream);
  });
  REQUIRE(init.empty());
  CHECK(called == weftSuccess);
  CHECK(synchronized);
  CHECK(asyncError == weftTimeout);
  CHECK(releasedAfter >= 0.9);
  CHECK(releasedAfter < 2.4);  // released at the timeout, before the silent rank even left
}

TEST_CASE("device-buffer argument errors name the buffers and leave the communicator usable",
          "[cuda]") {
  FakeGpu gpu(2);
  FakeDevice& fake = gpu.fake;
  Problems problems;
  std::string init = runAsThreads(2, [&](weftComm_t comm, int rank) {
    const std::string me = "rank " + std::to_string(rank) + ": ";
    DeviceFloats device0(fake, 16, 1);
    std::vector<float> host(16, 1);
    weftResult_t mixed =
        weftAllReduce(device0.ptr, host.data(), 16, weftFloat32, weftSum, comm, nullptr);
    const std::string mixedError = weftGetLastError(comm);
    problems.expect(mixed == weftInvalidArgument &&
                        mixedError.find("sendbuff is device memory (GPU 0) but recvbuff is "
                                        "host memory") != std::string::npos,
                    me + "mixed memory: " + mixedError);
    // Binds the communicator to GPU 0 (a call every rank makes, so it completes).
    problems.expect(weftAllReduce(device0.ptr, device0.ptr, 16, weftFloat32, weftSum, comm,
                                  nullptr) == weftSuccess,
                    me + "device allreduce: " + weftGetLastError(comm));
    void* onGpu1 = nullptr;
    problems.expect(fake.deviceAlloc(1, 64, &onGpu1).isOk(), me + "deviceAlloc");
    weftResult_t otherGpu = weftAllReduce(onGpu1, onGpu1, 16, weftFloat32, weftSum, comm, nullptr);
    const std::string otherGpuError = weftGetLastError(comm);
    fake.deviceFree(onGpu1);
    problems.expect(
        otherGpu == weftInvalidUsage && otherGpuError.find("GPU 1") != std::string::npos,
        me + "other GPU: " + otherGpuError);
    weftResult_t after =
        weftAllReduce(host.data(), host.data(), 16, weftFloat32, weftSum, comm, nullptr);
    problems.expect(after == weftSuccess && host[3] == 2.0f,
                    me + "the call after the errors: " + weftGetLastError(comm));
  });
  REQUIRE(init.empty());
  INFO(problems.all());
  CHECK(problems.all().empty());
}

// Ranks on one GPU all-reduce on the GPU (one reduction kernel each); ranks on different GPUs
// stage through the host. A failure injected into the fake's reduction tells which ran.
// Ranks on one GPU run all-reduce, broadcast, reduce, all-gather and reduce-scatter on the GPU
// (one kernel each); ranks on different GPUs stage through the host. A failure injected into
// the fake's kernel tells which ran; the staged results are checked.
TEST_CASE("collectives of ranks sharing one GPU run on the GPU, others stage", "[cuda]") {
  const bool shareGpu = GENERATE(true, false);
  const Coll coll = GENERATE(Coll::kAllReduce, Coll::kBroadcast, Coll::kReduce, Coll::kAllGather,
                             Coll::kReduceScatter);
  CAPTURE(shareGpu, collLabel(coll));
  FakeGpu gpu(2);
  FakeDevice& fake = gpu.fake;
  constexpr size_t kCount = 777;
  constexpr int n = 2;
  std::vector<weftResult_t> results(n, weftInternalError);
  std::vector<std::string> errors(n);
  std::vector<float> lastElements(n, -1);
  fake.failNext(FakeDevice::Call::kReduce, Status(weftSystemError, "injected kernel failure"), 4);
  std::string init = runAsThreads(n, [&](weftComm_t comm, int rank) {
    void* send = nullptr;
    void* recv = nullptr;
    const int device = shareGpu ? 0 : rank;
    if (!fake.deviceAlloc(device, n * kCount * sizeof(float), &send).isOk() ||
        !fake.deviceAlloc(device, n * kCount * sizeof(float), &recv).isOk()) {
      return;
    }
    auto* in = static_cast<float*>(fake.deviceView(send));
    for (size_t i = 0; i < n * kCount; ++i) in[i] = float(rank + 1);
    switch (coll) {
      case Coll::kAllReduce:
        results[rank] = weftAllReduce(send, recv, kCount, weftFloat32, weftSum, comm, nullptr);
        break;
      case Coll::kBroadcast:
        results[rank] = weftBroadcast(send, recv, kCount, weftFloat32, 1, comm, nullptr);
        break;
      case Coll::kReduce:
        results[rank] = weftReduce(send, recv, kCount, weftFloat32, weftSum, 0, comm, nullptr);
        break;
      case Coll::kAllGather:
        results[rank] = weftAllGather(send, recv, kCount, weftFloat32, comm, nullptr);
        break;
      default:
        results[rank] = weftReduceScatter(send, recv, kCount, weftFloat32, weftSum, comm, nullptr);
        break;
    }
    errors[rank] = weftGetLastError(comm);
    lastElements[rank] = static_cast<float*>(fake.deviceView(recv))[kCount - 1];
    fake.deviceFree(send);
    fake.deviceFree(recv);
  });
  REQUIRE(init.empty());
  // What each rank's element kCount - 1 of the receive buffer holds after the call.
  const float expected[] = {3.0f, 2.0f, 3.0f, 1.0f, 3.0f};
  for (int rank = 0; rank < n; ++rank) {
    INFO("rank " << rank << ": " << errors[rank]);
    if (shareGpu) {
      CHECK(results[rank] != weftSuccess);  // this rank's kernel failed, or its peer's did
    } else {
      CHECK(results[rank] == weftSuccess);
      if (coll != Coll::kReduce || rank == 0) {
        CHECK(lastElements[rank] == expected[static_cast<int>(coll)]);
      }
    }
  }
  if (shareGpu) {
    const bool named = errors[0].find("injected kernel failure") != std::string::npos ||
                       errors[1].find("injected kernel failure") != std::string::npos;
    CHECK(named);
  }
}

TEST_CASE("rank 0 logs the path each device call shape takes, once, with the reason", "[cuda]") {
  const bool shareGpu = GENERATE(true, false);
  CAPTURE(shareGpu);
  FakeGpu gpu(2);
  FakeDevice& fake = gpu.fake;
  LogCapture capture(log::Level::kInfo);
  std::string init = runAsThreads(2, [&](weftComm_t comm, int rank) {
    void* buffer = nullptr;
    if (!fake.deviceAlloc(shareGpu ? 0 : rank, 2000 * sizeof(float), &buffer).isOk()) return;
    for (int i = 0; i < 3; ++i) {
      weftAllReduce(buffer, buffer, 1000, weftFloat32, weftSum, comm, nullptr);
    }
    weftAlltoAll(buffer, buffer, 1000, weftFloat32, comm, nullptr);
    fake.deviceFree(buffer);
  });
  REQUIRE(init.empty());
  const std::string allreduce = "allreduce of 4000 bytes (float32) on device buffers: ";
  if (shareGpu) {
    CHECK(capture
              .matching(log::Level::kInfo,
                        {allreduce + "direct on one GPU (2 ranks, one kernel each)"})
              .size() == 1);
  } else {
    CHECK(capture
              .matching(log::Level::kInfo,
                        {allreduce + "staged through pinned memory (the ranks' buffers are "
                                     "on different GPUs)"})
              .size() == 1);
  }
  CHECK(capture
            .matching(log::Level::kInfo, {"alltoall of 4000 bytes (float32) on device buffers: "
                                          "staged through pinned memory (alltoall has no "
                                          "direct form)"})
            .size() == 1);
}

TEST_CASE("check mode catches ranks that pass different kinds of memory", "[cuda]") {
  FakeGpu gpu;
  FakeDevice& fake = gpu.fake;
  ScopedEnv check("WEFT_CHECK", "1");
  Problems problems;
  std::string init = runAsThreads(2, [&](weftComm_t comm, int rank) {
    std::vector<float> host(8, 1);
    void* device = nullptr;
    if (!fake.deviceAlloc(0, 8 * sizeof(float), &device).isOk()) return;
    void* buffer = rank == 0 ? device : host.data();
    weftResult_t result = weftAllReduce(buffer, buffer, 8, weftFloat32, weftSum, comm, nullptr);
    const std::string error = weftGetLastError(comm);
    problems.expect(result == weftInvalidUsage &&
                        error.find("rank 0 called allreduce(count 8, float32, sum, device "
                                   "memory)") != std::string::npos,
                    "rank " + std::to_string(rank) + ": " + error);
    fake.deviceFree(device);
  });
  REQUIRE(init.empty());
  INFO(problems.all());
  CHECK(problems.all().empty());
}

TEST_CASE("release counters only move forward, modulo 2^32", "[cuda]") {
  CHECK(device::counterReached(5, 5));
  CHECK(device::counterReached(6, 5));
  CHECK_FALSE(device::counterReached(4, 5));
  CHECK(device::counterReached(1, 0xffffffffu));  // past the wrap
  CHECK_FALSE(device::counterReached(0xffffffffu, 1));
  FakeGpu gpu;
  std::shared_ptr<device::ReleaseFlag> flag;
  REQUIRE(device::ReleaseFlag::create(&gpu.fake, &flag).isOk());
  CHECK(flag->value() == 0);
  flag->release(5);
  flag->release(3);  // an earlier call ending late does not move it back
  CHECK(flag->value() == 5);
  flag->release(0xfffffffeu);  // from 5, 0xfffffffe is behind (modulo 2^32): no change
  CHECK(flag->value() == 5);
  std::shared_ptr<device::ReleaseFlag> other;
  REQUIRE(device::ReleaseFlag::create(&gpu.fake, &other).isOk());
  CHECK(other->deviceWord() != flag->deviceWord());
  CHECK(other->value() == 0);
}

TEST_CASE("config.buffers and WEFT_BUFFERS are validated", "[cuda]") {
  weftUniqueId id;
  REQUIRE(weftGetUniqueId(&id) == weftSuccess);
  weftConfig_t config = WEFT_CONFIG_INITIALIZER;
  config.buffers = 7;
  weftComm_t comm = nullptr;
  CHECK(weftCommInitRankConfig(&comm, 1, id, 0, &config) == weftInvalidArgument);
  CHECK(std::string(weftGetLastError(nullptr)).find("config.buffers") != std::string::npos);
  ScopedEnv buffers("WEFT_BUFFERS", "gpu");
  REQUIRE(weftGetUniqueId(&id) == weftSuccess);
  CHECK(weftCommInitRank(&comm, 1, id, 0) == weftInvalidArgument);
  CHECK(std::string(weftGetLastError(nullptr)).find("WEFT_BUFFERS") != std::string::npos);
}

TEST_CASE("without a usable GPU runtime a stream-ordered call fails and the communicator works on",
          "[cuda]") {
  device::setDeviceApiForTesting(nullptr);
  int devices = 0;
  if (device::deviceApi() != nullptr && device::deviceApi()->deviceCount(&devices).isOk() &&
      devices > 0) {
    WARN("skipped: this machine has a GPU, so the stream-ordered call would work");
    return;
  }
  std::string error;
  weftResult_t onStream = weftSuccess;
  weftResult_t host = weftInternalError;
  std::string init = runAsThreads(1, [&](weftComm_t comm, int) {
    float value = 3;
    onStream = weftAllReduceOnStream(&value, &value, 1, weftFloat32, weftSum, comm, nullptr);
    error = weftGetLastError(comm);
    host = weftAllReduce(&value, &value, 1, weftFloat32, weftSum, comm, nullptr);
  });
  REQUIRE(init.empty());
  INFO(error);
  CHECK(onStream != weftSuccess);
  CHECK(error.find("weftAllReduceOnStream") != std::string::npos);
  CHECK(host == weftSuccess);
}

}  // namespace weft::test
