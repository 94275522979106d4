// Built where the PMIx headers are (Debian: libpmix-dev); pmix_unavailable.cc stands in
// elsewhere.
#include "bootstrap/pmix_client.h"

#include <dlfcn.h>
#include <pmix.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>

#include "base/env.h"
#include "base/log.h"

namespace weft::bootstrap {
namespace {

// The PMIx entry points weft calls; the rest of PMIx's interface is macros and types.
struct PmixLibrary {
  std::string path;
  pmix_status_t (*init)(pmix_proc_t* proc, pmix_info_t info[], size_t ninfo);
  pmix_status_t (*finalize)(const pmix_info_t info[], size_t ninfo);
  pmix_status_t (*put)(pmix_scope_t scope, const char key[], pmix_value_t* value);
  pmix_status_t (*commit)();
  pmix_status_t (*fence)(const pmix_proc_t procs[], size_t nprocs, const pmix_info_t info[],
                         size_t ninfo);
  pmix_status_t (*get)(const pmix_proc_t* proc, const char key[], const pmix_info_t info[],
                       size_t ninfo, pmix_value_t** value);
  const char* (*errorString)(pmix_status_t status);
};

template <typename Fn>
void bind(void* handle, const char* symbol, Fn* out, std::string* missing) {
  *out = reinterpret_cast<Fn>(dlsym(handle, symbol));
  if (*out == nullptr && missing->empty()) *missing = symbol;
}

Status openLibrary(const std::string& path, std::unique_ptr<PmixLibrary>* out) {
  // RTLD_LOCAL: an MPI library that links libpmix itself gets the same copy (one soname), and
  // nothing of PMIx leaks into the program's namespace otherwise.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return invalidUsage("cannot load " + path + ": " + (why ? why : "unknown error") +
                        " (Debian: apt-get install libpmix2; WEFT_PMIX_LIB names another)");
  }
  auto lib = std::make_unique<PmixLibrary>();
  lib->path = path;
  std::string missing;
  bind(handle, "PMIx_Init", &lib->init, &missing);
  bind(handle, "PMIx_Finalize", &lib->finalize, &missing);
  bind(handle, "PMIx_Put", &lib->put, &missing);
  bind(handle, "PMIx_Commit", &lib->commit, &missing);
  bind(handle, "PMIx_Fence", &lib->fence, &missing);
  bind(handle, "PMIx_Get", &lib->get, &missing);
  bind(handle, "PMIx_Error_string", &lib->errorString, &missing);
  if (!missing.empty()) {
    dlclose(handle);
    return invalidUsage(path + " lacks " + missing + " (not a PMIx client library?)");
  }
  *out = std::move(lib);
  return Status::ok();
}

// One load per path for the life of the process, never unloaded (PMIx keeps threads of its own
// running); a failed load is retried next time, as the environment may have changed.
Status loadLibrary(const PmixLibrary** out) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<PmixLibrary>> loaded;
  const std::string path = env::getString("WEFT_PMIX_LIB");
  std::lock_guard<std::mutex> lock(mutex);
  auto found = loaded.find(path);
  if (found == loaded.end()) {
    std::unique_ptr<PmixLibrary> lib;
    WEFT_TRY(openLibrary(path, &lib));
    found = loaded.emplace(path, std::move(lib)).first;
  }
  *out = found->second.get();
  return Status::ok();
}

// PMIX_TIMEOUT takes whole seconds; 0 would mean none, so at least 1.
int secondsLeft(Deadline deadline) {
  if (deadline.isNever()) return 0;
  int64_t ms = deadline.remainingMs();
  return static_cast<int>(std::clamp<int64_t>((ms + 999) / 1000, 1, 1 << 30));
}

class PmixClient final : public JobStore {
 public:
  explicit PmixClient(const PmixLibrary* lib) : lib_(lib) {}

  Status initialize() {
    pmix_status_t rc = lib_->init(&self_, nullptr, 0);
    if (rc != PMIX_SUCCESS) return failed("PMIx_Init", rc);
    WEFT_TRY(getJobNumber(PMIX_JOB_SIZE, &size_).withContext("PMIx: the job's size"));
    if (self_.rank >= static_cast<uint32_t>(size_)) {
      return invalidUsage("PMIx: rank " + std::to_string(self_.rank) + " is outside the job's " +
                          std::to_string(size_) + " ranks (namespace " + self_.nspace + ")");
    }
    owner_ = getpid();
    return Status::ok();
  }

  const char* name() const override { return "PMIx"; }
  int rank() const override { return static_cast<int>(self_.rank); }
  int size() const override { return size_; }
  pid_t owner() const { return owner_; }

  Status put(std::string_view key, std::span<const uint8_t> bytes, Deadline) override {
    std::string keyText(key);
    pmix_value_t value{};
    value.type = PMIX_BYTE_OBJECT;
    // PMIx_Put copies the value.
    value.data.bo.bytes = const_cast<char*>(reinterpret_cast<const char*>(bytes.data()));
    value.data.bo.size = bytes.size();
    std::lock_guard<std::mutex> lock(mutex_);
    pmix_status_t rc = lib_->put(PMIX_GLOBAL, keyText.c_str(), &value);
    if (rc != PMIX_SUCCESS) return failed("PMIx_Put of '" + keyText + "'", rc);
    rc = lib_->commit();
    if (rc != PMIX_SUCCESS) return failed("PMIx_Commit", rc);
    return Status::ok();
  }

  Status fence(Deadline deadline) override {
    // Every process of this namespace; the data travels with the fence, so a get after it
    // needs no further round trip to a remote host.
    pmix_proc_t all{};
    std::memcpy(all.nspace, self_.nspace, sizeof(all.nspace));
    all.rank = PMIX_RANK_WILDCARD;
    pmix_info_t info[2]{};
    bool collect = true;
    setInfo(&info[0], PMIX_COLLECT_DATA, PMIX_BOOL, &collect);
    int seconds = secondsLeft(deadline);
    setInfo(&info[1], PMIX_TIMEOUT, PMIX_INT, &seconds);
    std::lock_guard<std::mutex> lock(mutex_);
    pmix_status_t rc = lib_->fence(&all, 1, info, seconds > 0 ? 2 : 1);
    if (rc != PMIX_SUCCESS) return failed("PMIx_Fence", rc);
    return Status::ok();
  }

  Status get(int owner, std::string_view key, std::vector<uint8_t>* bytes,
             Deadline deadline) override {
    std::string keyText(key);
    pmix_value_t* value = nullptr;
    WEFT_TRY(getValue(static_cast<uint32_t>(owner), keyText, deadline, &value));
    Status result = Status::ok();
    if (value->type != PMIX_BYTE_OBJECT) {
      result =
          invalidUsage("PMIx: rank " + std::to_string(owner) + "'s '" + keyText +
                       "' has PMIx type " + std::to_string(value->type) + ", not a byte object");
    } else {
      const auto* data = reinterpret_cast<const uint8_t*>(value->data.bo.bytes);
      bytes->assign(data, data + value->data.bo.size);
      std::free(value->data.bo.bytes);
    }
    std::free(value);
    return result;
  }

  Status finalize() {
    std::lock_guard<std::mutex> lock(mutex_);
    pmix_status_t rc = lib_->finalize(nullptr, 0);
    return rc == PMIX_SUCCESS ? Status::ok() : failed("PMIx_Finalize", rc);
  }

 private:
  static void setInfo(pmix_info_t* info, const char* key, pmix_data_type_t type, const void* data) {
    std::strncpy(info->key, key, PMIX_MAX_KEYLEN);
    info->value.type = type;
    if (type == PMIX_BOOL) info->value.data.flag = *static_cast<const bool*>(data);
    if (type == PMIX_INT) info->value.data.integer = *static_cast<const int*>(data);
  }

  Status getValue(uint32_t owner, const std::string& key, Deadline deadline, pmix_value_t** out) {
    pmix_proc_t proc{};
    std::memcpy(proc.nspace, self_.nspace, sizeof(proc.nspace));
    proc.rank = owner;
    pmix_info_t info[1]{};
    int seconds = secondsLeft(deadline);
    setInfo(&info[0], PMIX_TIMEOUT, PMIX_INT, &seconds);
    std::lock_guard<std::mutex> lock(mutex_);
    pmix_status_t rc = lib_->get(&proc, key.c_str(), info, seconds > 0 ? 1 : 0, out);
    if (rc != PMIX_SUCCESS || *out == nullptr) {
      std::string who = owner == PMIX_RANK_WILDCARD ? "the job" : "rank " + std::to_string(owner);
      return failed("PMIx_Get of " + who + "'s '" + key + "'", rc);
    }
    return Status::ok();
  }

  // The job's facts are numbers of one of several widths, as the server chooses to store them.
  Status getJobNumber(const char* key, int* out) {
    pmix_value_t* value = nullptr;
    WEFT_TRY(getValue(PMIX_RANK_WILDCARD, key, Deadline::after(30000), &value));
    int64_t number = -1;
    switch (value->type) {
      case PMIX_UINT32:
        number = value->data.uint32;
        break;
      case PMIX_UINT16:
        number = value->data.uint16;
        break;
      case PMIX_INT:
        number = value->data.integer;
        break;
      case PMIX_UINT64:
        number = static_cast<int64_t>(value->data.uint64);
        break;
      case PMIX_SIZE:
        number = static_cast<int64_t>(value->data.size);
        break;
      default:
        break;
    }
    pmix_data_type_t type = value->type;
    std::free(value);
    if (number < 1 || number > (1 << 30)) {
      return invalidUsage(std::string("PMIx: ") + key + " is " + std::to_string(number) +
                          " (PMIx type " + std::to_string(type) + ")");
    }
    *out = static_cast<int>(number);
    return Status::ok();
  }

  Status failed(const std::string& what, pmix_status_t rc) const {
    std::string text = what + " failed: " + lib_->errorString(rc) + " (" + std::to_string(rc) + ")";
    if (rc == PMIX_ERR_TIMEOUT) return Status(weftTimeout, "PMIx: " + text);
    if (rc == PMIX_ERR_UNREACH || rc == PMIX_ERR_LOST_CONNECTION) {
      return Status(weftRemoteError, "PMIx: " + text);
    }
    return invalidUsage("PMIx: " + text);
  }

  const PmixLibrary* lib_;
  std::mutex mutex_;  // one call at a time, as PMIx's blocking calls on one client expect
  pmix_proc_t self_{};
  int size_ = 0;
  pid_t owner_ = 0;
};

struct ProcessClient {
  std::mutex mutex;
  PmixClient* client = nullptr;  // leaked on purpose: static destructors must not finalize it
  Status failure;
  bool finalized = false;
};

ProcessClient& processClient() {
  static ProcessClient* state = new ProcessClient();
  return *state;
}

void finalizeAtExit() {
  ProcessClient& state = processClient();
  std::lock_guard<std::mutex> lock(state.mutex);
  // A forked child shares the parent's connection; only the process that initialised finalizes.
  if (state.client == nullptr || state.finalized || state.client->owner() != getpid()) return;
  state.finalized = true;
  Status done = state.client->finalize();
  if (!done.isOk()) WEFT_WARN("%s", done.message().c_str());
}

}  // namespace

bool pmixDetected() {
  return env::isSet("PMIX_NAMESPACE") && env::isSet("PMIX_RANK");
}

bool pmixAvailable(std::string* why) {
  const PmixLibrary* lib = nullptr;
  Status loaded = loadLibrary(&lib);
  if (!loaded.isOk() && why != nullptr) *why = loaded.message();
  return loaded.isOk();
}

Status processPmixClient(Deadline, JobStore** out) {
  ProcessClient& state = processClient();
  std::lock_guard<std::mutex> lock(state.mutex);
  if (state.finalized) return invalidUsage("PMIx: the process's client is finalized");
  if (state.client != nullptr) {
    *out = state.client;
    return Status::ok();
  }
  if (!state.failure.isOk()) {
    return Status(state.failure.code(),
                  "PMIx: the first initialisation failed: " + state.failure.message());
  }
  const PmixLibrary* lib = nullptr;
  Status ready = loadLibrary(&lib);
  auto client = ready.isOk() ? std::make_unique<PmixClient>(lib) : nullptr;
  if (ready.isOk()) ready = client->initialize();
  if (!ready.isOk()) return state.failure = ready;
  WEFT_INFO("PMIx: rank %d of %d, through %s", client->rank(), client->size(), lib->path.c_str());
  state.client = client.release();
  std::atexit(finalizeAtExit);
  *out = state.client;
  return Status::ok();
}

}  // namespace weft::bootstrap
