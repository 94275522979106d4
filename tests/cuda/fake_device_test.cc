// The host-memory fake of the GPU runtime (fake_device.h) behaves as weft's device-buffer code
// expects of a GPU: pointer classification, copies, stream order, events, flags, reductions,
// IPC and injected faults. The device-buffer tests built on it trust exactly these properties.
#include "fake_device.h"

#include <array>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <thread>
#include <vector>

#include "reduce/half.h"

namespace weft::test {
namespace {

using device::Event;
using device::IpcHandle;
using device::MemoryKind;
using device::PointerInfo;
using device::Stream;
using Reduction = device::DeviceApi::Reduction;
using namespace std::chrono_literals;

#define REQUIRE_OK(expr)                   \
  do {                                     \
    const ::weft::Status status_ = (expr); \
    INFO("status: " << status_.message()); \
    REQUIRE(status_.isOk());               \
  } while (0)

// Long enough for a stream worker that is free to run to have run, short enough to keep tests
// fast: used only to show that something did NOT happen.
constexpr auto kSettle = 20ms;

PointerInfo classified(FakeDevice& fake, const void* ptr) {
  PointerInfo info;
  REQUIRE_OK(fake.classify(ptr, &info));
  return info;
}

int currentDeviceOf(FakeDevice& fake) {
  int device = -1;
  REQUIRE_OK(fake.currentDevice(&device));
  return device;
}

bool eventDone(FakeDevice& fake, Event event) {
  bool done = false;
  REQUIRE_OK(fake.eventQuery(event, &done));
  return done;
}

template <typename T>
void* deviceCopyOf(FakeDevice& fake, const std::vector<T>& values, int device = 0) {
  void* ptr = nullptr;
  REQUIRE_OK(fake.deviceAlloc(device, values.size() * sizeof(T), &ptr));
  std::memcpy(fake.deviceView(ptr), values.data(), values.size() * sizeof(T));
  return ptr;
}

template <typename T>
std::vector<T> hostCopyOf(FakeDevice& fake, const void* ptr, size_t count) {
  std::vector<T> values(count);
  std::memcpy(values.data(), fake.deviceView(ptr), count * sizeof(T));
  return values;
}

Status reduceOnDefaultStream(FakeDevice& fake, std::vector<void*> dsts,
                             std::vector<const void*> srcs, size_t count, weftDataType_t type,
                             weftRedOp_t op, int avgDivisor = 1) {
  const Reduction reduction{
      dsts.data(), int(dsts.size()), srcs.data(), int(srcs.size()), count, type, op, avgDivisor};
  WEFT_TRY(fake.reduceAsync(reduction, nullptr));
  return fake.streamSynchronize(nullptr);
}

TEST_CASE("classify tells device memory, interior pointers included, from host memory") {
  FakeDevice fake(2);
  void* onDevice1 = nullptr;
  REQUIRE_OK(fake.deviceAlloc(1, 100, &onDevice1));
  auto* base = static_cast<char*>(onDevice1);
  int onStack = 0;
  std::vector<int> onHeap(4);
  void* pinned = nullptr;
  REQUIRE_OK(fake.hostAlloc(64, &pinned));

  CHECK(classified(fake, base).kind == MemoryKind::kDevice);
  CHECK(classified(fake, base).device == 1);
  CHECK(classified(fake, base + 57).kind == MemoryKind::kDevice);
  CHECK(classified(fake, base + 99).device == 1);
  CHECK(classified(fake, base + 100).kind == MemoryKind::kHost);
  CHECK(classified(fake, &onStack).kind == MemoryKind::kHost);
  CHECK(classified(fake, onHeap.data()).device == -1);
  CHECK(classified(fake, nullptr).kind == MemoryKind::kHost);
  // Pinned memory is host memory, as CUDA says of cudaHostAlloc's.
  CHECK(classified(fake, pinned).kind == MemoryKind::kHost);

  fake.deviceFree(onDevice1);
  CHECK(classified(fake, base).kind == MemoryKind::kHost);
  fake.hostFree(pinned);
  CHECK(fake.misuses().empty());
}

TEST_CASE("device addresses are not host-accessible, their deviceView is") {
  FakeDevice fake;
  void* ptr = nullptr;
  REQUIRE_OK(fake.deviceAlloc(0, 16, &ptr));
  // Dereferencing ptr itself would crash (PROT_NONE): the alias is where tests look instead.
  auto* view = static_cast<char*>(fake.deviceView(ptr));
  REQUIRE(view != nullptr);
  CHECK(view != ptr);
  CHECK(fake.deviceView(static_cast<char*>(ptr) + 3) == view + 3);
  CHECK(classified(fake, ptr).kind == MemoryKind::kDevice);
  int onStack = 0;
  CHECK(fake.deviceView(&onStack) == nullptr);
  void* empty = reinterpret_cast<void*>(1);
  REQUIRE_OK(fake.deviceAlloc(0, 0, &empty));
  CHECK(empty == nullptr);
  CHECK_FALSE(fake.deviceAlloc(5, 16, &empty).isOk());
  fake.deviceFree(ptr);
}

TEST_CASE(
    "calls() counts runtime calls, classifyCalls() counts classify, fake-only calls neither") {
  FakeDevice fake;
  CHECK(fake.calls() == 0);
  void* ptr = nullptr;
  REQUIRE_OK(fake.deviceAlloc(0, 8, &ptr));
  REQUIRE_OK(fake.launch(nullptr, [] {}));
  fake.pauseStream(nullptr);
  fake.resumeStream(nullptr);
  CHECK(fake.calls() == 0);
  CHECK(fake.classifyCalls() == 0);

  PointerInfo info;
  REQUIRE_OK(fake.classify(ptr, &info));
  REQUIRE_OK(fake.classify(&info, &info));
  CHECK(fake.classifyCalls() == 2);
  CHECK(fake.calls() == 0);

  Stream stream = nullptr;
  REQUIRE_OK(fake.streamCreate(&stream));
  REQUIRE_OK(fake.streamSynchronize(stream));
  fake.streamDestroy(stream);
  CHECK(fake.calls() == 3);
  CHECK(fake.classifyCalls() == 2);
  fake.deviceFree(ptr);
}

TEST_CASE("setDevice is per thread and checks the ordinal") {
  FakeDevice fake(2);
  int count = 0;
  REQUIRE_OK(fake.deviceCount(&count));
  CHECK(count == 2);
  CHECK(currentDeviceOf(fake) == 0);
  REQUIRE_OK(fake.setDevice(1));
  CHECK(currentDeviceOf(fake) == 1);
  int seenElsewhere = -1;
  std::thread([&] { (void)fake.currentDevice(&seenElsewhere); }).join();  // no Catch off-main
  CHECK(seenElsewhere == 0);

  const Status outOfRange = fake.setDevice(2);
  CHECK(outOfRange.code() == weftInvalidArgument);
  CHECK_THAT(outOfRange.message(), Catch::Contains("device 2"));
  CHECK(currentDeviceOf(fake) == 1);
  CHECK_FALSE(fake.setDevice(-1).isOk());

  // Another FakeDevice on the same thread starts from device 0.
  FakeDevice other(2);
  CHECK(currentDeviceOf(other) == 0);
}

TEST_CASE("deviceUuid tells the devices apart, within one FakeDevice and across them") {
  FakeDevice fake(2);
  FakeDevice other(2);
  std::array<uint8_t, 16> first{}, second{}, again{}, elsewhere{};
  REQUIRE_OK(fake.deviceUuid(0, &first));
  REQUIRE_OK(fake.deviceUuid(1, &second));
  REQUIRE_OK(fake.deviceUuid(0, &again));
  REQUIRE_OK(other.deviceUuid(0, &elsewhere));
  CHECK(first == again);
  CHECK(first != second);
  CHECK(first != elsewhere);
  CHECK_THAT(fake.deviceUuid(2, &again).message(), Catch::Contains("device 2"));
}

TEST_CASE("memcpyAsync copies host to device, device to device and device to host") {
  FakeDevice fake;
  std::vector<int> source(1000);
  std::iota(source.begin(), source.end(), 7);
  const size_t bytes = source.size() * sizeof(int);
  void* first = nullptr;
  void* second = nullptr;
  REQUIRE_OK(fake.deviceAlloc(0, bytes, &first));
  REQUIRE_OK(fake.deviceAlloc(0, bytes, &second));
  std::vector<int> back(source.size());
  Stream stream = nullptr;
  REQUIRE_OK(fake.streamCreate(&stream));

  REQUIRE_OK(fake.memcpyAsync(first, source.data(), bytes, stream));
  REQUIRE_OK(fake.memcpyAsync(second, first, bytes, stream));
  REQUIRE_OK(fake.memcpyAsync(back.data(), second, bytes, stream));
  REQUIRE_OK(fake.streamSynchronize(stream));
  CHECK(back == source);
  CHECK(hostCopyOf<int>(fake, first, source.size()) == source);

  SECTION("through pinned memory and its device address") {
    void* pinned = nullptr;
    REQUIRE_OK(fake.hostAlloc(bytes, &pinned));
    CHECK(reinterpret_cast<uintptr_t>(pinned) % 4096 == 0);
    void* pinnedOnDevice = nullptr;
    REQUIRE_OK(fake.hostDevicePointer(pinned, &pinnedOnDevice));
    CHECK(pinnedOnDevice != pinned);
    REQUIRE_OK(fake.memcpyAsync(pinnedOnDevice, first, bytes, stream));
    REQUIRE_OK(fake.streamSynchronize(stream));
    CHECK(std::memcmp(pinned, source.data(), bytes) == 0);
    fake.hostFree(pinned);
  }
  SECTION("interior pointers, and ranges past the end are refused naming the argument") {
    int tail[10] = {};
    REQUIRE_OK(fake.memcpyAsync(tail, static_cast<int*>(first) + 990, sizeof tail, stream));
    REQUIRE_OK(fake.streamSynchronize(stream));
    CHECK(tail[0] == source[990]);
    CHECK(tail[9] == source[999]);

    const Status pastEnd =
        fake.memcpyAsync(static_cast<int*>(first) + 991, tail, sizeof tail, stream);
    CHECK(pastEnd.code() == weftInvalidArgument);
    CHECK_THAT(pastEnd.message(), Catch::Contains("memcpyAsync: dst"));
    const Status overlapping = fake.memcpyAsync(first, static_cast<int*>(first) + 1, 8, stream);
    CHECK_THAT(overlapping.message(), Catch::Contains("overlap"));
    const Status badStream = fake.memcpyAsync(tail, first, 4, reinterpret_cast<Stream>(0x10));
    CHECK_THAT(badStream.message(), Catch::Contains("stream"));
  }
  fake.streamDestroy(stream);
  fake.deviceFree(first);
  fake.deviceFree(second);
  CHECK(fake.misuses().empty());
}

TEST_CASE("a stream runs its work in the order it was queued") {
  FakeDevice fake;
  Stream stream = nullptr;
  REQUIRE_OK(fake.streamCreate(&stream));
  std::vector<int> order;  // touched by the stream's worker only, until synchronised
  for (int i = 0; i < 200; i++) {
    REQUIRE_OK(fake.launch(stream, [&order, i] { order.push_back(i); }));
  }
  REQUIRE_OK(fake.streamSynchronize(stream));
  std::vector<int> expected(200);
  std::iota(expected.begin(), expected.end(), 0);
  CHECK(order == expected);

  // A copy queued after a kernel sees what the kernel wrote.
  void* buffer = nullptr;
  REQUIRE_OK(fake.deviceAlloc(0, sizeof(int), &buffer));
  auto* view = static_cast<int*>(fake.deviceView(buffer));
  int result = 0;
  REQUIRE_OK(fake.launch(stream, [view] {
    std::this_thread::sleep_for(2ms);
    *view = 42;
  }));
  REQUIRE_OK(fake.memcpyAsync(&result, buffer, sizeof result, stream));
  REQUIRE_OK(fake.streamSynchronize(stream));
  CHECK(result == 42);
  fake.streamDestroy(stream);
  fake.deviceFree(buffer);
}

TEST_CASE("a paused stream holds its work and events while calls return at once") {
  FakeDevice fake;
  Stream stream = nullptr;
  Event event = nullptr;
  REQUIRE_OK(fake.streamCreate(&stream));
  REQUIRE_OK(fake.eventCreate(&event));
  fake.pauseStream(stream);
  std::atomic<bool> ran{false};
  REQUIRE_OK(fake.launch(stream, [&] { ran = true; }));
  REQUIRE_OK(fake.eventRecord(event, stream));
  std::this_thread::sleep_for(kSettle);
  CHECK_FALSE(ran);
  CHECK_FALSE(eventDone(fake, event));

  fake.resumeStream(stream);
  REQUIRE_OK(fake.streamSynchronize(stream));
  CHECK(ran);
  CHECK(eventDone(fake, event));
  fake.eventDestroy(event);
  fake.streamDestroy(stream);
}

TEST_CASE("events order streams against each other") {
  FakeDevice fake;
  Stream producer = nullptr;
  Stream consumer = nullptr;
  Event ready = nullptr;
  REQUIRE_OK(fake.streamCreate(&producer));
  REQUIRE_OK(fake.streamCreate(&consumer));
  REQUIRE_OK(fake.eventCreate(&ready));

  SECTION("a stream waiting on an event of a paused stream waits until it is resumed") {
    fake.pauseStream(producer);
    std::atomic<int> stage{0};
    REQUIRE_OK(fake.launch(producer, [&] { stage = 1; }));
    REQUIRE_OK(fake.eventRecord(ready, producer));
    REQUIRE_OK(fake.streamWaitEvent(consumer, ready));
    std::atomic<int> consumerSaw{-1};
    REQUIRE_OK(fake.launch(consumer, [&] { consumerSaw = stage.load(); }));
    std::this_thread::sleep_for(kSettle);
    CHECK(consumerSaw == -1);

    fake.resumeStream(producer);
    REQUIRE_OK(fake.streamSynchronize(consumer));
    CHECK(consumerSaw == 1);
  }
  SECTION("an event never recorded counts as done and is not waited for") {
    CHECK(eventDone(fake, ready));
    fake.pauseStream(producer);
    REQUIRE_OK(fake.streamWaitEvent(consumer, ready));
    REQUIRE_OK(fake.streamSynchronize(consumer));
    fake.resumeStream(producer);
  }
  SECTION("a wait uses the record made before it, not a later one") {
    REQUIRE_OK(fake.eventRecord(ready, producer));
    REQUIRE_OK(fake.streamSynchronize(producer));
    REQUIRE_OK(fake.streamWaitEvent(consumer, ready));
    fake.pauseStream(producer);
    REQUIRE_OK(fake.eventRecord(ready, producer));
    CHECK_FALSE(eventDone(fake, ready));
    REQUIRE_OK(fake.streamSynchronize(consumer));
    fake.resumeStream(producer);
    REQUIRE_OK(fake.streamSynchronize(producer));
    CHECK(eventDone(fake, ready));
  }
  SECTION("unknown events are refused") {
    const Status unknown = fake.eventRecord(reinterpret_cast<Event>(0x20), producer);
    CHECK(unknown.code() == weftInvalidArgument);
    CHECK_THAT(unknown.message(), Catch::Contains("event"));
  }
  fake.eventDestroy(ready);
  fake.streamDestroy(producer);
  fake.streamDestroy(consumer);
  CHECK(fake.misuses().empty());
}

TEST_CASE("streamWaitFlag holds a stream until another thread stores the value") {
  FakeDevice fake;
  Stream stream = nullptr;
  REQUIRE_OK(fake.streamCreate(&stream));
  void* pinned = nullptr;
  REQUIRE_OK(fake.hostAlloc(sizeof(uint32_t), &pinned));
  auto* word = static_cast<uint32_t*>(pinned);
  void* wordOnDevice = nullptr;
  REQUIRE_OK(fake.hostDevicePointer(pinned, &wordOnDevice));

  REQUIRE_OK(fake.streamWaitFlag(stream, static_cast<uint32_t*>(wordOnDevice), 3));
  std::atomic<uint32_t> seen{0};
  REQUIRE_OK(fake.launch(stream, [&] { seen = __atomic_load_n(word, __ATOMIC_ACQUIRE) + 100; }));
  __atomic_store_n(word, 2u, __ATOMIC_RELEASE);
  std::this_thread::sleep_for(kSettle);
  CHECK(seen == 0);  // 2 is not enough
  std::thread writer([word] { __atomic_store_n(word, 3u, __ATOMIC_RELEASE); });
  REQUIRE_OK(fake.streamSynchronize(stream));
  writer.join();
  CHECK(seen == 103);

  SECTION("the host address is refused: the stream needs the device address") {
    const Status hostAddress = fake.streamWaitFlag(stream, word, 1);
    CHECK(hostAddress.code() == weftInvalidArgument);
    CHECK_THAT(hostAddress.message(), Catch::Contains("hostDevicePointer"));
    uint32_t notPinned = 0;
    CHECK_FALSE(fake.streamWaitFlag(stream, &notPinned, 1).isOk());
    void* again = nullptr;
    CHECK_FALSE(fake.hostDevicePointer(wordOnDevice, &again).isOk());
  }
  fake.streamDestroy(stream);
  fake.hostFree(pinned);
  CHECK(fake.misuses().empty());
}

TEST_CASE("reduceAsync float32 sum writes every destination, a source among them") {
  FakeDevice fake;
  const std::vector<float> a = {1.0f, 2.0f, -3.5f, 1e6f};
  const std::vector<float> b = {0.5f, 0.25f, 3.5f, 1.0f};
  const std::vector<float> c = {4.0f, -8.0f, 0.0f, 2.0f};
  void* da = deviceCopyOf(fake, a);
  void* db = deviceCopyOf(fake, b);
  void* dc = deviceCopyOf(fake, c);
  void* extra = deviceCopyOf(fake, std::vector<float>(4));
  std::vector<float> onHost(4);
  REQUIRE_OK(reduceOnDefaultStream(fake, {da, extra, onHost.data()}, {da, db, dc}, 4, weftFloat32,
                                   weftSum));
  const std::vector<float> expected = {5.5f, -5.75f, 0.0f, 1e6f + 3.0f};
  CHECK(hostCopyOf<float>(fake, da, 4) == expected);
  CHECK(hostCopyOf<float>(fake, extra, 4) == expected);
  CHECK(onHost == expected);
  CHECK(hostCopyOf<float>(fake, db, 4) == b);
  for (void* ptr : {da, db, dc, extra}) fake.deviceFree(ptr);
}

TEST_CASE("reduceAsync int32 max and a single source") {
  FakeDevice fake;
  const std::vector<int32_t> a = {1, -5, 7, INT32_MIN};
  const std::vector<int32_t> b = {3, -9, 7, -1};
  void* da = deviceCopyOf(fake, a);
  void* db = deviceCopyOf(fake, b);
  void* out = deviceCopyOf(fake, std::vector<int32_t>(4));
  REQUIRE_OK(reduceOnDefaultStream(fake, {out}, {da, db}, 4, weftInt32, weftMax));
  CHECK(hostCopyOf<int32_t>(fake, out, 4) == std::vector<int32_t>{3, -5, 7, -1});
  REQUIRE_OK(reduceOnDefaultStream(fake, {out}, {db}, 4, weftInt32, weftMin));
  CHECK(hostCopyOf<int32_t>(fake, out, 4) == b);
  for (void* ptr : {da, db, out}) fake.deviceFree(ptr);
}

TEST_CASE("reduceAsync sums float16 and bfloat16") {
  FakeDevice fake;
  const std::vector<float> a = {1.5f, -2.0f, 0.125f, 1024.0f};
  const std::vector<float> b = {2.25f, 0.5f, 0.125f, 8.0f};
  const std::vector<float> sum = {3.75f, -1.5f, 0.25f, 1032.0f};  // all exact in both formats
  for (weftDataType_t type : {weftFloat16, weftBfloat16}) {
    auto encode = [type](const std::vector<float>& values) {
      std::vector<uint16_t> encoded;
      for (float v : values)
        encoded.push_back(type == weftFloat16 ? floatToHalf(v) : floatToBfloat16(v));
      return encoded;
    };
    void* da = deviceCopyOf(fake, encode(a));
    void* db = deviceCopyOf(fake, encode(b));
    REQUIRE_OK(reduceOnDefaultStream(fake, {db}, {da, db}, 4, type, weftSum));
    CHECK(hostCopyOf<uint16_t>(fake, db, 4) == encode(sum));
    fake.deviceFree(da);
    fake.deviceFree(db);
  }
}

TEST_CASE("reduceAsync avg sums, then divides by avgDivisor (not by the number of sources)") {
  FakeDevice fake;
  void* fa = deviceCopyOf(fake, std::vector<float>{1.0f, 6.0f});
  void* fb = deviceCopyOf(fake, std::vector<float>{3.0f, 2.0f});
  REQUIRE_OK(reduceOnDefaultStream(fake, {fa}, {fa, fb}, 2, weftFloat32, weftAvg, 4));
  CHECK(hostCopyOf<float>(fake, fa, 2) == std::vector<float>{1.0f, 2.0f});

  // Integers truncate toward zero.
  void* ia = deviceCopyOf(fake, std::vector<int32_t>{3, -3, 10});
  void* ib = deviceCopyOf(fake, std::vector<int32_t>{4, -4, 0});
  REQUIRE_OK(reduceOnDefaultStream(fake, {ia}, {ia, ib}, 3, weftInt32, weftAvg, 2));
  CHECK(hostCopyOf<int32_t>(fake, ia, 3) == std::vector<int32_t>{3, -3, 5});
  for (void* ptr : {fa, fb, ia, ib}) fake.deviceFree(ptr);
}

TEST_CASE("reduceAsync refuses bad arguments, naming them") {
  FakeDevice fake;
  void* buffers[device::kMaxReduceSources + 1] = {};
  for (void*& buffer : buffers) REQUIRE_OK(fake.deviceAlloc(0, 64, &buffer));
  const void* srcs[device::kMaxReduceSources + 1];
  std::copy(std::begin(buffers), std::end(buffers), srcs);
  void* dst = buffers[0];
  Reduction reduction{&dst, 1, srcs, 2, 16, weftFloat32, weftSum, 1};
  auto refusal = [&](auto change) {
    Reduction changed = reduction;
    change(changed);
    const Status status = fake.reduceAsync(changed, nullptr);
    CHECK(status.code() == weftInvalidArgument);
    return status.message();
  };
  CHECK_THAT(refusal([](Reduction& r) { r.nsrcs = 0; }), Catch::Contains("nsrcs"));
  CHECK_THAT(refusal([](Reduction& r) { r.nsrcs = device::kMaxReduceSources + 1; }),
             Catch::Contains("nsrcs"));
  CHECK_THAT(refusal([](Reduction& r) { r.ndsts = 0; }), Catch::Contains("ndsts"));
  CHECK_THAT(refusal([](Reduction& r) { r.type = weftNumTypes; }), Catch::Contains("type"));
  CHECK_THAT(refusal([](Reduction& r) { r.op = weftNumOps; }), Catch::Contains("op"));
  CHECK_THAT(refusal([](Reduction& r) { r.op = weftAvg, r.avgDivisor = 0; }),
             Catch::Contains("avgDivisor"));
  CHECK_THAT(refusal([](Reduction& r) { r.avgDivisor = 2; }), Catch::Contains("avgDivisor"));
  CHECK_THAT(refusal([](Reduction& r) { r.count = 17; }), Catch::Contains("dsts[0]"));
  CHECK_THAT(refusal([&](Reduction& r) { r.srcs = nullptr; }), Catch::Contains("srcs"));
  void* shifted = static_cast<char*>(buffers[1]) + 4;
  CHECK_THAT(refusal([&](Reduction& r) { r.dsts = &shifted, r.count = 8; }),
             Catch::Contains("overlaps"));

  reduction.nsrcs = device::kMaxReduceSources;
  REQUIRE_OK(fake.reduceAsync(reduction, nullptr));
  REQUIRE_OK(fake.streamSynchronize(nullptr));
  for (void* buffer : buffers) fake.deviceFree(buffer);
}

TEST_CASE("IPC: the opened mapping is the same memory at another address") {
  FakeDevice fake(2);
  const std::vector<int> values = {10, 20, 30, 40, 50, 60, 70, 80};
  void* owner = deviceCopyOf(fake, values, 1);
  IpcHandle handle;
  REQUIRE_OK(fake.ipcGetHandle(static_cast<int*>(owner) + 3, &handle));
  CHECK(handle.offset == 3 * sizeof(int));

  void* opened = nullptr;
  REQUIRE_OK(fake.ipcOpen(handle, &opened));
  CHECK(opened != owner);
  CHECK(classified(fake, opened).kind == MemoryKind::kDevice);
  CHECK(classified(fake, opened).device == 1);
  CHECK(fake.live().ipcMappings == 1);
  std::vector<int> read(values.size());
  REQUIRE_OK(fake.memcpyAsync(read.data(), opened, read.size() * sizeof(int), nullptr));
  REQUIRE_OK(fake.streamSynchronize(nullptr));
  CHECK(read == values);
  const int written = -1;
  REQUIRE_OK(fake.memcpyAsync(static_cast<char*>(opened) + handle.offset, &written, sizeof written,
                              nullptr));
  REQUIRE_OK(fake.streamSynchronize(nullptr));
  CHECK(hostCopyOf<int>(fake, owner, 4)[3] == -1);

  SECTION("an opened mapping outlives the owner's free until it is closed") {
    fake.deviceFree(owner);
    owner = nullptr;
    CHECK(hostCopyOf<int>(fake, opened, 1)[0] == 10);
    void* again = nullptr;
    const Status freed = fake.ipcOpen(handle, &again);
    CHECK(freed.code() == weftInvalidArgument);
    CHECK_THAT(freed.message(), Catch::Contains("not live"));
  }
  SECTION("handles that are not handles, and pointers that cannot be exported, are refused") {
    IpcHandle forged = handle;
    forged.bytes[0] ^= 0xff;
    void* base = nullptr;
    CHECK_FALSE(fake.ipcOpen(forged, &base).isOk());
    FakeDevice other;
    CHECK_THAT(other.ipcOpen(handle, &base).message(), Catch::Contains("another FakeDevice"));
    int onStack = 0;
    CHECK_FALSE(fake.ipcGetHandle(&onStack, &forged).isOk());
    CHECK_FALSE(fake.ipcGetHandle(opened, &forged).isOk());
  }
  fake.ipcClose(opened);
  CHECK(fake.live().ipcMappings == 0);
  fake.deviceFree(owner);
  CHECK(fake.misuses().empty());
  fake.ipcClose(opened);
  CHECK(fake.misuses().size() == 1);
}

TEST_CASE("failNext fails the next calls of one kind with the given status") {
  FakeDevice fake;
  int value = 1;
  int copy = 0;
  fake.failNext(FakeDevice::Call::kMemcpy, internalError("injected copy failure"), 2);
  for (int i = 0; i < 2; i++) {
    const Status failed = fake.memcpyAsync(&copy, &value, sizeof value, nullptr);
    CHECK(failed.code() == weftInternalError);
    CHECK(failed.message() == "injected copy failure");
  }
  REQUIRE_OK(fake.memcpyAsync(&copy, &value, sizeof value, nullptr));
  REQUIRE_OK(fake.streamSynchronize(nullptr));
  CHECK(copy == 1);

  fake.failNext(FakeDevice::Call::kClassify, internalError("no"));
  PointerInfo info;
  CHECK_FALSE(fake.classify(&value, &info).isOk());
  REQUIRE_OK(fake.classify(&value, &info));
  CHECK(fake.classifyCalls() == 2);
}

TEST_CASE("after killDevice every call fails and blocked streams give up") {
  FakeDevice fake;
  Stream stream = nullptr;
  REQUIRE_OK(fake.streamCreate(&stream));
  void* pinned = nullptr;
  REQUIRE_OK(fake.hostAlloc(sizeof(uint32_t), &pinned));
  void* flag = nullptr;
  REQUIRE_OK(fake.hostDevicePointer(pinned, &flag));
  REQUIRE_OK(fake.streamWaitFlag(stream, static_cast<uint32_t*>(flag), 1));  // never stored
  std::atomic<bool> ran{false};
  REQUIRE_OK(fake.launch(stream, [&] { ran = true; }));

  std::thread killer([&] {
    std::this_thread::sleep_for(kSettle);
    fake.killDevice();
  });
  const Status synchronised = fake.streamSynchronize(stream);
  killer.join();
  CHECK(synchronised.code() == weftSystemError);
  CHECK_THAT(synchronised.message(), Catch::Contains("lost"));
  CHECK_FALSE(ran);

  int count = 0;
  PointerInfo info;
  CHECK(fake.deviceCount(&count).code() == weftSystemError);
  CHECK(fake.classify(pinned, &info).code() == weftSystemError);
  CHECK_THAT(fake.memcpyAsync(&count, &count, 4, stream).message(), Catch::Contains("memcpyAsync"));
  CHECK_FALSE(fake.launch(stream, [] {}).isOk());
  fake.streamDestroy(stream);
  fake.hostFree(pinned);
}

TEST_CASE("memory freed while work on it is queued stays mapped until that work ran") {
  FakeDevice fake;
  void* buffer = deviceCopyOf(fake, std::vector<int>{5, 6});
  fake.pauseStream(nullptr);
  std::vector<int> back(2);
  REQUIRE_OK(fake.memcpyAsync(back.data(), buffer, 2 * sizeof(int), nullptr));
  fake.deviceFree(buffer);
  CHECK(fake.live().deviceAllocations == 0);
  fake.resumeStream(nullptr);
  REQUIRE_OK(fake.streamSynchronize(nullptr));
  CHECK(back == std::vector<int>{5, 6});
}

TEST_CASE("a destroyed stream still runs what was queued on it") {
  FakeDevice fake;
  Stream stream = nullptr;
  Event event = nullptr;
  REQUIRE_OK(fake.streamCreate(&stream));
  REQUIRE_OK(fake.eventCreate(&event));
  std::atomic<bool> ran{false};
  REQUIRE_OK(fake.launch(stream, [&] {
    std::this_thread::sleep_for(2ms);
    ran = true;
  }));
  REQUIRE_OK(fake.eventRecord(event, stream));
  fake.streamDestroy(stream);
  CHECK(fake.live().streams == 0);
  REQUIRE_OK(fake.streamWaitEvent(nullptr, event));
  REQUIRE_OK(fake.streamSynchronize(nullptr));
  CHECK(ran);
  fake.eventDestroy(event);
  CHECK(fake.live().events == 0);
}

TEST_CASE("the destructor returns with paused streams and unreleased flag waits") {
  std::atomic<bool> ran{false};
  {
    FakeDevice fake;
    Stream stream = nullptr;
    REQUIRE_OK(fake.streamCreate(&stream));
    void* pinned = nullptr;
    REQUIRE_OK(fake.hostAlloc(4, &pinned));
    void* flag = nullptr;
    REQUIRE_OK(fake.hostDevicePointer(pinned, &flag));
    REQUIRE_OK(fake.streamWaitFlag(stream, static_cast<uint32_t*>(flag), 1));
    fake.pauseStream(nullptr);
    REQUIRE_OK(fake.launch(nullptr, [&] { ran = true; }));
    REQUIRE_OK(fake.launch(stream, [&] { ran = true; }));
    std::this_thread::sleep_for(2ms);
  }
  CHECK_FALSE(ran);
}

TEST_CASE("ranks as threads use one FakeDevice concurrently") {
  FakeDevice fake(4);
  constexpr int kThreads = 8;
  constexpr size_t kCount = 4096;
  std::vector<void*> shared(kThreads);
  for (int t = 0; t < kThreads; t++) {
    shared[t] = deviceCopyOf(fake, std::vector<float>(kCount, float(t + 1)), t % 4);
  }
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; t++) {
    threads.emplace_back([&, t] {
      auto ok = [&](const Status& status) {
        if (!status.isOk()) failures++;
      };
      ok(fake.setDevice(t % 4));
      Stream stream = nullptr;
      ok(fake.streamCreate(&stream));
      void* mine = nullptr;
      ok(fake.deviceAlloc(t % 4, kCount * sizeof(float), &mine));
      // Everyone's buffer into mine, reduced, twenty times over.
      std::vector<const void*> srcs(shared.begin(), shared.end());
      const Reduction reduction{&mine, 1, srcs.data(), kThreads, kCount, weftFloat32, weftSum, 1};
      std::vector<float> back(kCount);
      for (int round = 0; round < 20; round++) {
        ok(fake.reduceAsync(reduction, stream));
        ok(fake.memcpyAsync(back.data(), mine, kCount * sizeof(float), stream));
        PointerInfo info;
        ok(fake.classify(mine, &info));
        if (info.device != t % 4) failures++;
      }
      ok(fake.streamSynchronize(stream));
      if (back != std::vector<float>(kCount, float(kThreads * (kThreads + 1) / 2))) failures++;
      fake.streamDestroy(stream);
      fake.deviceFree(mine);
    });
  }
  for (auto& thread : threads) thread.join();
  CHECK(failures == 0);
  for (void* ptr : shared) fake.deviceFree(ptr);
  CHECK(fake.live().deviceAllocations == 0);
  CHECK(fake.live().streams == 0);
  CHECK(fake.misuses().empty());
}

}  // namespace
}  // namespace weft::test
