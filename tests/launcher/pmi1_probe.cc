// Runs under the real mpiexec.hydra (tests/launcher/pmi1_hydra_test.sh) and drives weft's PMI-1
// client the way init will: the process client, fetched once per "communicator".
//   pmi1_probe exchange <pid dir>     two rounds: every rank puts values (binary, empty, split
//                                     over many keys), barrier, every rank checks every value
//   pmi1_probe leave_early <pid dir>  the last rank finalizes and exits 0 at once; the others'
//                                     barrier must fail at its deadline
//   pmi1_probe die_early <pid dir>    the last rank dies without finalize; Hydra ends the job
// Each rank writes its pid into <pid dir>, so the script can check that none is left behind.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "bootstrap/pmi1_client.h"

using weft::Deadline;
using weft::Status;
using weft::bootstrap::Pmi1Client;

namespace {

constexpr int64_t kPhaseDeadlineMs = 20000;
// Short, so that the survivors of leave_early fail well inside the test's timeout.
constexpr int64_t kBarrierAfterLeaveMs = 3000;

int fail(int rank, const std::string& what, const Status& status) {
  std::fprintf(stderr, "pmi1_probe: rank %d: %s: %s\n", rank, what.c_str(),
               status.message().c_str());
  return 1;
}

// Sizes that cover one key, an empty value, a split value and (with the longest key) enough
// chunks for a three-digit chunk suffix, which takes the key to Hydra's keylen_max - 1.
std::vector<uint8_t> valueOf(int round, int rank, size_t kind) {
  static const size_t kSizes[] = {256, 0, 3000, 60000};
  std::vector<uint8_t> bytes(kSizes[kind % 4] + static_cast<size_t>(rank));
  for (size_t i = 0; i < bytes.size(); ++i) {
    bytes[i] =
        kind % 4 == 0 ? static_cast<uint8_t>(i) : static_cast<uint8_t>(i * 31 + rank * 7 + round);
  }
  return bytes;
}

std::string keyOf(int round, int rank, size_t kind, size_t maxKeyChars) {
  std::string key = "weft/probe:r" + std::to_string(round) + ".rank" + std::to_string(rank) + ".k" +
                    std::to_string(kind);
  if (kind == 3) key.resize(maxKeyChars, 'x');
  return key;
}

int exchangeRound(Pmi1Client* client, int round) {
  const int rank = client->rank();
  Deadline deadline = Deadline::after(kPhaseDeadlineMs);
  for (size_t kind = 0; kind < 4; ++kind) {
    std::string key = keyOf(round, rank, kind, client->maxKeyChars());
    Status put = client->put(key, valueOf(round, rank, kind), deadline);
    if (!put.isOk()) return fail(rank, "put " + key, put);
  }
  Status barrier = client->barrier(deadline);
  if (!barrier.isOk()) return fail(rank, "barrier", barrier);
  for (int peer = 0; peer < client->size(); ++peer) {
    for (size_t kind = 0; kind < 4; ++kind) {
      std::string key = keyOf(round, peer, kind, client->maxKeyChars());
      std::vector<uint8_t> bytes;
      Status get = client->get(key, &bytes, deadline);
      if (!get.isOk()) return fail(rank, "get " + key, get);
      if (bytes != valueOf(round, peer, kind)) {
        return fail(
            rank, "get " + key,
            Status(weftInternalError, "wrong value (" + std::to_string(bytes.size()) + " bytes)"));
      }
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: pmi1_probe exchange|leave_early|die_early <pid dir>\n");
    return 2;
  }
  const std::string mode = argv[1];
  Pmi1Client* client = nullptr;
  Status connected = weft::bootstrap::processPmi1Client(Deadline::after(kPhaseDeadlineMs), &client);
  if (!connected.isOk()) return fail(-1, "connect", connected);
  const int rank = client->rank();
  std::ofstream(std::string(argv[2]) + "/rank" + std::to_string(rank)) << getpid() << "\n";
  const bool last = rank == client->size() - 1;

  if (mode == "exchange") {
    for (int round = 0; round < 2; ++round) {
      // Each round stands for one communicator's init: it fetches the process client anew.
      Pmi1Client* again = nullptr;
      Status fetched =
          weft::bootstrap::processPmi1Client(Deadline::after(kPhaseDeadlineMs), &again);
      if (!fetched.isOk()) return fail(rank, "process client", fetched);
      if (again != client)
        return fail(rank, "process client", Status(weftInternalError, "a second client"));
      if (int failed = exchangeRound(client, round)) return failed;
    }
    std::printf("pmi1_probe: rank %d of %d ok (kvsname %s)\n", rank, client->size(),
                client->kvsname().c_str());
    return 0;  // cmd=finalize goes out at exit
  }
  if (mode == "leave_early" || mode == "die_early") {
    if (last) {
      if (mode == "die_early") _exit(3);
      Status finalized =
          weft::bootstrap::finalizeProcessPmi1Client(Deadline::after(kPhaseDeadlineMs));
      if (!finalized.isOk()) return fail(rank, "finalize", finalized);
      return 0;
    }
    Status barrier = client->barrier(Deadline::after(kBarrierAfterLeaveMs));
    if (barrier.isOk()) {
      std::printf("pmi1_probe: rank %d: the barrier completed without the last rank\n", rank);
      return 0;
    }
    return fail(rank, "barrier", barrier);
  }
  std::fprintf(stderr, "pmi1_probe: unknown mode '%s'\n", mode.c_str());
  return 2;
}
