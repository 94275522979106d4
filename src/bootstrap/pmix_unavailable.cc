// Stands in for pmix_client.cc in a build without the PMIx headers (Debian: libpmix-dev).
#include "bootstrap/pmix_client.h"

#include "base/env.h"

namespace weft::bootstrap {
namespace {

constexpr char kWhy[] = "this weft was built without the PMIx headers (Debian: libpmix-dev)";

}  // namespace

bool pmixDetected() {
  return env::isSet("PMIX_NAMESPACE") && env::isSet("PMIX_RANK");
}

bool pmixAvailable(std::string* why) {
  if (why != nullptr) *why = kWhy;
  return false;
}

Status processPmixClient(Deadline, JobStore**) {
  return invalidUsage(std::string("PMIx: ") + kWhy);
}

}  // namespace weft::bootstrap
