#include "bootstrap/job_store.h"

#include <string>

#include "bootstrap/pmi1_client.h"
#include "bootstrap/pmix_client.h"

namespace weft::bootstrap {
namespace {

// PMI-1's store: keys are global, so a get names no owner; a barrier is its fence.
class Pmi1Store final : public JobStore {
 public:
  explicit Pmi1Store(Pmi1Client* client) : client_(client) {}

  const char* name() const override { return "PMI-1"; }
  int rank() const override { return client_->rank(); }
  int size() const override { return client_->size(); }
  Status put(std::string_view key, std::span<const uint8_t> bytes, Deadline deadline) override {
    return client_->put(key, bytes, deadline);
  }
  Status fence(Deadline deadline) override { return client_->barrier(deadline); }
  Status get(int, std::string_view key, std::vector<uint8_t>* bytes, Deadline deadline) override {
    return client_->get(key, bytes, deadline);
  }

 private:
  Pmi1Client* client_;
};

}  // namespace

Status processJobStore(JobStoreKind kind, Deadline deadline, JobStore** out) {
  switch (kind) {
    case JobStoreKind::pmi1: {
      Pmi1Client* client = nullptr;
      WEFT_TRY(processPmi1Client(deadline, &client));
      static Pmi1Store* store = new Pmi1Store(client);  // the client is the process's one
      *out = store;
      return Status::ok();
    }
    case JobStoreKind::pmix:
      return processPmixClient(deadline, out);
    case JobStoreKind::none:
      break;
  }
  return internalError("processJobStore: no store of kind none");
}

}  // namespace weft::bootstrap
