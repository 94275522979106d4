// The launcher's PMI variables, and the one client a process shares among its communicators.
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <mutex>
#include <optional>

#include "base/env.h"
#include "base/log.h"
#include "bootstrap/pmi1_client.h"

namespace weft::bootstrap {
namespace {

// Hydra answers cmd=finalize at once; the bound only keeps exit from waiting on a launcher that
// is gone or stuck.
constexpr int64_t kExitFinalizeMs = 5000;

Status readInteger(const char* name, int* out) {
  std::optional<std::string> text = env::get(name);
  if (!text) return Status::ok();
  char* end = nullptr;
  errno = 0;
  long long value = std::strtoll(text->c_str(), &end, 10);
  if (errno != 0 || end == text->c_str() || *end != '\0' || value < 0 || value > INT_MAX) {
    return invalidArgument(std::string(name) + "='" + pmi1::quoteLine(*text, 40) +
                           "' is not a non-negative integer");
  }
  *out = static_cast<int>(value);
  return Status::ok();
}

struct ProcessClient {
  std::mutex mutex;
  Pmi1Client* client = nullptr;  // leaked on purpose: static destructors must not close it
  Status failure;                // the first attempt's error, returned to every later caller
  pid_t owner = 0;               // the process that connected; a forked child must not finalize
  bool finalizedByUs = false;
};

ProcessClient& processClient() {
  static ProcessClient* state = new ProcessClient();
  return *state;
}

void finalizeAtExit() {
  ProcessClient& state = processClient();
  if (getpid() != state.owner) return;
  // Runs before the destructors of every static constructed ahead of its registration, the log's
  // among them, so the client may still log.
  (void)finalizeProcessPmi1Client(Deadline::after(kExitFinalizeMs));
}

}  // namespace

bool pmi1Detected() {
  return env::isSet("PMI_FD") || env::isSet("PMI_PORT");
}

Status readPmi1Environment(Pmi1Endpoint* out) {
  Pmi1Endpoint endpoint;
  WEFT_TRY(readInteger("PMI_FD", &endpoint.fd));
  endpoint.port = env::getString("PMI_PORT");
  endpoint.pmiId = env::getString("PMI_ID");
  WEFT_TRY(readInteger("PMI_RANK", &endpoint.rank));
  WEFT_TRY(readInteger("PMI_SIZE", &endpoint.size));
  if (endpoint.fd < 0 && endpoint.port.empty()) {
    return invalidUsage(
        "PMI-1: neither PMI_FD nor PMI_PORT is set (not started by mpiexec.hydra?)");
  }
  // Under PMI_FD the variables are all there is; under PMI_PORT the initack says, and checks
  // them when they are set.
  bool required = endpoint.fd >= 0;
  if (required && !env::isSet("PMI_SIZE")) return invalidArgument("PMI_SIZE is not set");
  if (required && !env::isSet("PMI_RANK")) return invalidArgument("PMI_RANK is not set");
  if (env::isSet("PMI_SIZE") && endpoint.size < 1) {
    return invalidArgument("PMI_SIZE='" + env::getString("PMI_SIZE") + "' must be at least 1");
  }
  if (env::isSet("PMI_RANK") && env::isSet("PMI_SIZE") && endpoint.rank >= endpoint.size) {
    return invalidArgument("PMI_RANK='" + env::getString("PMI_RANK") +
                           "' is outside [0, PMI_SIZE=" + std::to_string(endpoint.size) + ")");
  }
  *out = std::move(endpoint);
  return Status::ok();
}

Status processPmi1Client(Deadline deadline, Pmi1Client** out) {
  ProcessClient& state = processClient();
  std::lock_guard<std::mutex> lock(state.mutex);
  if (state.client != nullptr) {
    if (state.finalizedByUs || state.client->finalized()) {
      return invalidUsage(
          "PMI-1: the process's client is finalized, and Hydra takes no second "
          "connection");
    }
    *out = state.client;
    return Status::ok();
  }
  if (!state.failure.isOk()) {
    return Status(state.failure.code(),
                  "PMI-1: the first connection attempt failed: " + state.failure.message());
  }
  Pmi1Endpoint endpoint;
  std::unique_ptr<Pmi1Client> client;
  Status connected = readPmi1Environment(&endpoint);
  if (connected.isOk()) connected = Pmi1Client::connect(endpoint, deadline, &client);
  // A failed attempt may have consumed part of the launcher's greeting; a retry would misread
  // the conversation, so the first error stands.
  if (!connected.isOk()) return state.failure = connected;
  state.client = client.release();
  state.owner = getpid();
  std::atexit(finalizeAtExit);
  *out = state.client;
  return Status::ok();
}

Status finalizeProcessPmi1Client(Deadline deadline) {
  ProcessClient& state = processClient();
  std::lock_guard<std::mutex> lock(state.mutex);
  if (state.client == nullptr || state.finalizedByUs) return Status::ok();
  state.finalizedByUs = true;
  return state.client->finalize(deadline);
}

}  // namespace weft::bootstrap
