#include "bootstrap/store_rendezvous.h"

#include <atomic>
#include <cstring>
#include <string>
#include <vector>

#include "bootstrap/unique_id.h"

namespace weft::bootstrap {

Status rendezvousOverStore(JobStore& store, Deadline deadline, StoreRendezvous* out) {
  // Every process initialises its communicators in the same order, so the n-th call of each
  // process meets the others' n-th under the same key.
  static std::atomic<unsigned> calls{0};
  const std::string key = "weft-id-" + std::to_string(calls++);
  const std::string name = store.name();
  StoreRendezvous result;
  result.rank = store.rank();
  result.nranks = store.size();
  if (result.rank == 0) {
    WEFT_TRY(createUniqueId(&result.id));
    const auto* bytes = reinterpret_cast<const uint8_t*>(&result.id);
    WEFT_TRY(store.put(key, {bytes, sizeof(result.id)}, deadline)
                 .withContext(name + ": publishing rank 0's unique id"));
  }
  WEFT_TRY(store.fence(deadline).withContext(name + ": waiting for rank 0's unique id"));
  if (result.rank != 0) {
    std::vector<uint8_t> bytes;
    WEFT_TRY(
        store.get(0, key, &bytes, deadline).withContext(name + ": reading rank 0's unique id"));
    if (bytes.size() != sizeof(result.id)) {
      return invalidUsage(name + ": rank 0's unique id under '" + key + "' has " +
                          std::to_string(bytes.size()) + " bytes, not " +
                          std::to_string(sizeof(result.id)));
    }
    std::memcpy(&result.id, bytes.data(), bytes.size());
  }
  *out = result;
  return Status::ok();
}

}  // namespace weft::bootstrap
