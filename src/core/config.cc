#include "core/config.h"

#include <cstring>

#include "base/env.h"

namespace weft {
namespace {

// The prefix of weftConfig_t every version shares; fields past a caller's `size` keep defaults.
bool hasField(const weftConfig_t* config, size_t fieldOffset, size_t fieldSize) {
  return config->size >= fieldOffset + fieldSize;
}

#define WEFT_HAS_FIELD(config, field) \
  hasField(config, offsetof(weftConfig_t, field), sizeof(config->field))

}  // namespace

Status resolveConfig(const weftConfig_t* config, CommConfig* out) {
  *out = CommConfig{};
  if (config != nullptr) {
    if (config->magic != WEFT_CONFIG_MAGIC) {
      return invalidArgument("config: bad magic (initialise it with WEFT_CONFIG_INITIALIZER)");
    }
    if (config->size < offsetof(weftConfig_t, timeoutMs)) {
      return invalidArgument("config: size " + std::to_string(config->size) + " is too small");
    }
    if (WEFT_HAS_FIELD(config, timeoutMs) && config->timeoutMs != WEFT_CONFIG_UNDEF_INT) {
      if (config->timeoutMs <= 0) {
        return invalidArgument("config.timeoutMs must be positive, got " +
                               std::to_string(config->timeoutMs));
      }
      out->timeoutMs = config->timeoutMs;
    }
    if (WEFT_HAS_FIELD(config, nSocks) && config->nSocks != WEFT_CONFIG_UNDEF_INT) {
      if (config->nSocks < 1 || config->nSocks > 16) {
        return invalidArgument("config.nSocks must be in 1..16, got " +
                               std::to_string(config->nSocks));
      }
      out->transports.socketsPerPeer = config->nSocks;
    }
    if (WEFT_HAS_FIELD(config, transport) && config->transport) {
      out->transports.forced = config->transport;
    }
    if (WEFT_HAS_FIELD(config, hostId) && config->hostId) out->hostId = config->hostId;
    if (WEFT_HAS_FIELD(config, commName) && config->commName) out->commName = config->commName;
    if (WEFT_HAS_FIELD(config, checkMode) && config->checkMode != WEFT_CONFIG_UNDEF_INT) {
      if (config->checkMode != 0 && config->checkMode != 1) {
        return invalidArgument("config.checkMode must be 0 or 1, got " +
                               std::to_string(config->checkMode));
      }
      out->checkMode = config->checkMode == 1;
    }
    if (WEFT_HAS_FIELD(config, buffers) && config->buffers != WEFT_CONFIG_UNDEF_INT) {
      if (config->buffers < WEFT_BUFFERS_AUTO || config->buffers > WEFT_BUFFERS_DEVICE) {
        return invalidArgument(
            "config.buffers must be WEFT_BUFFERS_AUTO, WEFT_BUFFERS_HOST or WEFT_BUFFERS_DEVICE, "
            "got " +
            std::to_string(config->buffers));
      }
      out->buffers = config->buffers;
    }
  }

  if (env::isSet("WEFT_TIMEOUT")) {
    int64_t seconds = env::getInt("WEFT_TIMEOUT");
    if (seconds <= 0) return invalidArgument("WEFT_TIMEOUT must be a positive number of seconds");
    out->timeoutMs = seconds * 1000;
  }
  WEFT_TRY(applyTransportEnvironment(&out->transports));
  if (auto hostId = env::get("WEFT_HOSTID")) out->hostId = *hostId;
  if (env::isSet("WEFT_CHECK")) {
    int64_t check = env::getInt("WEFT_CHECK");
    if (check != 0 && check != 1) return invalidArgument("WEFT_CHECK must be 0 or 1");
    out->checkMode = check == 1;
  }
  if (auto buffers = env::get("WEFT_BUFFERS")) {
    if (*buffers == "auto") {
      out->buffers = WEFT_BUFFERS_AUTO;
    } else if (*buffers == "host") {
      out->buffers = WEFT_BUFFERS_HOST;
    } else if (*buffers == "device") {
      out->buffers = WEFT_BUFFERS_DEVICE;
    } else {
      return invalidArgument("WEFT_BUFFERS must be auto, host or device, got '" + *buffers + "'");
    }
  }
  out->spinMicros = env::getInt("WEFT_SPIN_US");
  WEFT_TRY(parseBindMode(env::getString("WEFT_BIND"), &out->bind));
  int64_t sliceBytes = env::getInt("WEFT_SLICE_BYTES");
  if (sliceBytes < static_cast<int64_t>(tune::kMinSliceBytes) ||
      sliceBytes > static_cast<int64_t>(tune::kMaxSliceBytes)) {
    return invalidArgument("WEFT_SLICE_BYTES must be in " + std::to_string(tune::kMinSliceBytes) +
                           ".." + std::to_string(tune::kMaxSliceBytes) + ", got " +
                           std::to_string(sliceBytes));
  }
  out->sliceBytes = static_cast<size_t>(sliceBytes);
  if (auto net = env::get("WEFT_TUNE_NET")) {
    WEFT_TRY(tune::parseLink(*net, &out->costs.net).withContext("WEFT_TUNE_NET"));
    out->rdmaNetCostSet = true;
  }
  if (auto rdma = env::get("WEFT_TUNE_RDMA")) {
    WEFT_TRY(tune::parseLink(*rdma, &out->costs.rdma).withContext("WEFT_TUNE_RDMA"));
  }
  if (auto shm = env::get("WEFT_TUNE_SHM")) {
    WEFT_TRY(tune::parseLink(*shm, &out->costs.shm).withContext("WEFT_TUNE_SHM"));
  }
  if (auto gpu = env::get("WEFT_TUNE_GPU")) {
    WEFT_TRY(tune::parseLink(*gpu, &out->costs.gpu).withContext("WEFT_TUNE_GPU"));
  }
  if (auto copy = env::get("WEFT_TUNE_COPY")) {
    WEFT_TRY(tune::parseLink(*copy, &out->costs.copy).withContext("WEFT_TUNE_COPY"));
  }
  int64_t calibrate = env::getInt("WEFT_TUNE_CALIBRATE");
  if (calibrate < 0 || calibrate > 2)
    return invalidArgument("WEFT_TUNE_CALIBRATE must be 0, 1 or 2");
  out->calibrate = static_cast<int>(calibrate);
  out->tuneFile = env::getString("WEFT_TUNE_FILE");
  int64_t online = 0;
  WEFT_TRY(env::getBounded("WEFT_TUNE_ONLINE", 0, 100, &online));
  out->onlineCalls = static_cast<int>(online);
  return parseAlgoOverrides(env::getString("WEFT_ALGO"), &out->algos);
}

}  // namespace weft
