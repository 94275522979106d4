#include "bootstrap/pmi1_rendezvous.h"

#include <atomic>
#include <cstring>
#include <string>
#include <vector>

#include "bootstrap/pmi1_client.h"
#include "bootstrap/unique_id.h"

namespace weft::bootstrap {

Status rendezvousOverPmi1(Deadline deadline, PmiRendezvous* out) {
  Pmi1Client* pmi = nullptr;
  WEFT_TRY(processPmi1Client(deadline, &pmi));
  // Every process initialises its communicators in the same order, so the n-th call of each
  // process meets the others' n-th under the same key.
  static std::atomic<unsigned> calls{0};
  const std::string key = "weft-id-" + std::to_string(calls++);
  PmiRendezvous result;
  result.rank = pmi->rank();
  result.nranks = pmi->size();
  if (result.rank == 0) {
    WEFT_TRY(createUniqueId(&result.id));
    const auto* bytes = reinterpret_cast<const uint8_t*>(&result.id);
    WEFT_TRY(pmi->put(key, {bytes, sizeof(result.id)}, deadline)
                 .withContext("PMI-1: publishing rank 0's unique id"));
  }
  WEFT_TRY(pmi->barrier(deadline).withContext("PMI-1: waiting for rank 0's unique id"));
  if (result.rank != 0) {
    std::vector<uint8_t> bytes;
    WEFT_TRY(pmi->get(key, &bytes, deadline).withContext("PMI-1: reading rank 0's unique id"));
    if (bytes.size() != sizeof(result.id)) {
      return invalidUsage("PMI-1: rank 0's unique id under '" + key + "' has " +
                          std::to_string(bytes.size()) + " bytes, not " +
                          std::to_string(sizeof(result.id)));
    }
    std::memcpy(&result.id, bytes.data(), bytes.size());
  }
  *out = result;
  return Status::ok();
}

}  // namespace weft::bootstrap
