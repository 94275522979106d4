#include "base/status.h"

#include <cstring>

namespace weft {

Status invalidArgument(std::string message) {
  return Status(weftInvalidArgument, std::move(message));
}
Status invalidUsage(std::string message) {
  return Status(weftInvalidUsage, std::move(message));
}
Status systemError(std::string what, int err) {
  return Status(weftSystemError, what + ": " + std::strerror(err));
}
Status internalError(std::string message) {
  return Status(weftInternalError, std::move(message));
}
Status remoteError(std::string message) {
  return Status(weftRemoteError, std::move(message));
}
Status timeoutError(std::string message) {
  return Status(weftTimeout, std::move(message));
}

}  // namespace weft
