// A host-only program never loads the CUDA driver, even from a weft built with CUDA (the runtime
// is linked in statically and starts the driver on its first call). Run with a spy
// libcuda.so.1 (driver_spy.c) first on LD_LIBRARY_PATH, which creates the file named by
// WEFT_TEST_DRIVER_SPY when anything loads it: collectives on host buffers must not, and a
// stream-ordered call, which asks the runtime for the current GPU, must (the control that shows
// the check works).
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "weft/weft.h"

namespace {

// The runtime may unload a driver it cannot use, so the spy's file, not the process's mappings,
// tells whether it was ever loaded.
bool driverLoaded() {
  const char* marker = std::getenv("WEFT_TEST_DRIVER_SPY");
  return marker != nullptr && std::ifstream(marker).good();
}

// Two ranks as threads: every collective on host memory, blocking and non-blocking.
bool runHostCollectives() {
  weftUniqueId id;
  if (weftGetUniqueId(&id) != weftSuccess) return false;
  std::vector<int> failures(2, 0);
  std::vector<std::thread> ranks;
  for (int rank = 0; rank < 2; ++rank) {
    ranks.emplace_back([&, rank] {
      weftComm_t comm = nullptr;
      if (weftCommInitRank(&comm, 2, id, rank) != weftSuccess) {
        failures[rank] = 1;
        return;
      }
      std::vector<float> send(4096, 1.0f), recv(8192, 0.0f);
      int bad = 0;
      bad += weftAllReduce(send.data(), recv.data(), 4096, weftFloat32, weftSum, comm, nullptr);
      bad += weftBroadcast(send.data(), recv.data(), 4096, weftFloat32, 0, comm, nullptr);
      bad += weftAllGather(send.data(), recv.data(), 4096, weftFloat32, comm, nullptr);
      bad += weftReduceScatter(recv.data(), send.data(), 4096, weftFloat32, weftSum, comm, nullptr);
      weftRequest_t request = nullptr;
      bad += weftAllReduce(send.data(), send.data(), 4096, weftFloat32, weftMax, comm, &request);
      bad += weftWait(&request, -1);
      bad += weftBarrier(comm, nullptr);
      failures[rank] = bad != 0 || recv[0] != 1.0f;
      weftCommDestroy(comm);
    });
  }
  for (auto& rank : ranks) rank.join();
  return failures[0] == 0 && failures[1] == 0;
}

}  // namespace

int main() {
  const char* marker = std::getenv("WEFT_TEST_DRIVER_SPY");
  if (marker == nullptr) {
    std::printf("FAIL: WEFT_TEST_DRIVER_SPY is not set\n");
    return 1;
  }
  std::remove(marker);
  if (driverLoaded()) {
    std::printf("FAIL: libcuda is loaded before weft did anything\n");
    return 1;
  }
  if (!runHostCollectives()) {
    std::printf("FAIL: the host collectives failed: %s\n", weftGetLastError(nullptr));
    return 1;
  }
  if (driverLoaded()) {
    std::printf("FAIL: host-only collectives loaded the CUDA driver\n");
    return 1;
  }
  std::printf("host-only collectives: the CUDA driver was never loaded\n");

  weftUniqueId id;
  weftComm_t comm = nullptr;
  if (weftGetUniqueId(&id) != weftSuccess || weftCommInitRank(&comm, 1, id, 0) != weftSuccess) {
    std::printf("FAIL: a one-rank communicator: %s\n", weftGetLastError(nullptr));
    return 1;
  }
  float value = 1;
  weftResult_t onStream =
      weftAllReduceOnStream(&value, &value, 1, weftFloat32, weftSum, comm, nullptr);
  std::printf("a stream-ordered call with the spy driver: %s (%s)\n", weftGetErrorString(onStream),
              weftGetLastError(comm));
  weftCommDestroy(comm);
  if (!driverLoaded()) {
    std::printf("FAIL: a stream-ordered call did not load the driver: the check proves nothing\n");
    return 1;
  }
  std::printf("control: the stream-ordered call loaded it\n");
  return 0;
}
