// Status: the result of every internal call that can fail. It carries a public result code and a
// message that names the culprit (argument, peer, operation), so that the API layer can hand
// both to the user unchanged. Internal code never throws across layers; it returns a Status.
#pragma once

#include <string>
#include <utility>

#include "weft/weft.h"

namespace weft {

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(weftResult_t code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok() { return Status(); }

  bool isOk() const { return code_ == weftSuccess; }
  explicit operator bool() const { return isOk(); }
  weftResult_t code() const { return code_; }
  const std::string& message() const { return message_; }

  // Prepends context ("while connecting to rank 3: ") to the message; keeps the code.
  Status withContext(const std::string& context) const {
    if (isOk()) return *this;
    return Status(code_, context + ": " + message_);
  }

 private:
  weftResult_t code_ = weftSuccess;
  std::string message_;
};

Status invalidArgument(std::string message);
Status invalidUsage(std::string message);
Status systemError(std::string what, int err);  // appends strerror(err)
Status internalError(std::string message);
Status remoteError(std::string message);
Status timeoutError(std::string message);

}  // namespace weft

// Returns early from the enclosing function when the expression yields a failed Status.
#define WEFT_TRY(expr)                                     \
  do {                                                     \
    ::weft::Status weft_try_status_ = (expr);              \
    if (!weft_try_status_.isOk()) return weft_try_status_; \
  } while (0)
