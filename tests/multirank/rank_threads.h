// Runs n ranks as threads of this process, each with its own communicator made from one unique
// id: the fast, sanitizer-friendly way to test multi-rank behaviour.
#pragma once

#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "weft/weft.h"

namespace weft::test {

// Calls body(comm, rank) on every rank's thread, each rank initialised with configFor(rank)
// (nullptr: defaults); returns the init failures ("" when none).
inline std::string runAsThreadsWith(int n, const std::function<void(weftComm_t, int)>& body,
                                    const std::function<const weftConfig_t*(int)>& configFor) {
  weftUniqueId id;
  if (weftGetUniqueId(&id) != weftSuccess)
    return std::string("weftGetUniqueId: ") + weftGetLastError(nullptr);
  std::vector<std::string> errors(n);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < n; ++rank) {
    threads.emplace_back([&, rank] {
      weftComm_t comm = nullptr;
      weftResult_t result = weftCommInitRankConfig(&comm, n, id, rank, configFor(rank));
      if (result != weftSuccess) {
        errors[rank] = "rank " + std::to_string(rank) + ": init: " + weftGetLastError(nullptr);
        return;
      }
      body(comm, rank);
      weftCommDestroy(comm);
    });
  }
  for (auto& thread : threads) thread.join();
  std::string all;
  for (const auto& error : errors) all += error.empty() ? "" : error + "\n";
  return all;
}

inline std::string runAsThreads(int n, const std::function<void(weftComm_t, int)>& body,
                                const weftConfig_t* config = nullptr) {
  return runAsThreadsWith(n, body, [config](int) { return config; });
}

}  // namespace weft::test
