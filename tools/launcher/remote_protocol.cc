#include "launcher/remote_protocol.h"

#include <poll.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sstream>

namespace weftrun {
namespace {

constexpr std::string_view kFrameMark = "#weftrun ";
// A frame header is short; a longer "line" without a newline cannot be one.
constexpr size_t kMaxHeader = 128;
// The secret line is 64 hex characters; anything much longer is not what the top sends.
constexpr size_t kMaxSecretLine = 4096;

}  // namespace

std::string ShellQuote(std::string_view word) {
  std::string quoted = "'";
  for (char c : word) {
    if (c == '\'') {
      quoted += "'\\''";  // close, an escaped quote, reopen
    } else {
      quoted += c;
    }
  }
  quoted += '\'';
  return quoted;
}

int64_t RealtimeNs() {
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  return static_cast<int64_t>(now.tv_sec) * 1000000000 + now.tv_nsec;
}

std::string OutputFrame(bool is_stderr, int rank, std::string_view data) {
  char header[64];
  std::snprintf(header, sizeof header, "#weftrun %c %d %zu\n", is_stderr ? 'E' : 'O', rank,
                data.size());
  std::string frame = header;
  frame.append(data);
  return frame;
}

std::string FailureFrame(const RankFailure& failure) {
  char frame[kMaxHeader];
  std::snprintf(frame, sizeof frame, "#weftrun X %d %d %d %d %d %d %lld\n", failure.rank,
                failure.pid, failure.info.signaled ? 1 : 0, failure.info.code,
                failure.info.core_dumped ? 1 : 0, failure.own ? 1 : 0,
                static_cast<long long>(failure.time_ns));
  return frame;
}

std::string SignalCommand(int sig) {
  return "S " + std::to_string(sig) + "\n";
}

void FrameReader::Feed(std::string_view data) {
  buffer_.append(data);
  while (!buffer_.empty() && DecodeOne()) {
  }
}

void FrameReader::Finish() {
  if (!buffer_.empty()) handlers_.text(buffer_);
  buffer_.clear();
}

bool FrameReader::DecodeOne() {
  size_t newline = buffer_.find('\n');
  bool is_frame = buffer_.compare(0, std::min(buffer_.size(), kFrameMark.size()), kFrameMark, 0,
                                  std::min(buffer_.size(), kFrameMark.size())) == 0;
  if (!is_frame) {
    // Text up to and including the next newline (or all of it, if no frame can start in it).
    size_t end = newline == std::string::npos ? buffer_.size() : newline + 1;
    handlers_.text(std::string_view(buffer_).substr(0, end));
    buffer_.erase(0, end);
    return true;
  }
  if (newline == std::string::npos) {
    if (buffer_.size() <= kMaxHeader) return false;  // wait for the rest of the header
    handlers_.text(buffer_);
    buffer_.clear();
    return true;
  }
  std::istringstream header(buffer_.substr(kFrameMark.size(), newline - kFrameMark.size()));
  char kind = 0;
  header >> kind;
  if (kind == 'O' || kind == 'E') {
    int rank = -1;
    size_t length = 0;
    if (header >> rank >> length) {
      if (buffer_.size() < newline + 1 + length) return false;
      handlers_.output(kind == 'E', rank, std::string_view(buffer_).substr(newline + 1, length));
      buffer_.erase(0, newline + 1 + length);
      return true;
    }
  } else if (kind == 'X') {
    RankFailure failure;
    int signaled = 0, core = 0, own = 0;
    long long time_ns = 0;
    if (header >> failure.rank >> failure.pid >> signaled >> failure.info.code >> core >> own >>
        time_ns) {
      failure.info.signaled = signaled != 0;
      failure.info.core_dumped = core != 0;
      failure.own = own != 0;
      failure.time_ns = time_ns;
      handlers_.failure(failure);
      buffer_.erase(0, newline + 1);
      return true;
    }
  }
  // Looked like a frame but is not one: pass the line on.
  handlers_.text(std::string_view(buffer_).substr(0, newline + 1));
  buffer_.erase(0, newline + 1);
  return true;
}

bool ControlReader::ReadSecret(int fd, int timeout_ms, std::string* secret, std::string* error) {
  // One byte at a time, so that nothing after the line is consumed here.
  secret->clear();
  while (secret->size() < kMaxSecretLine) {
    pollfd readable{fd, POLLIN, 0};
    int ready = poll(&readable, 1, timeout_ms);
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) {
      *error = "no secret on stdin from the top weftrun";
      return false;
    }
    char c = 0;
    ssize_t n = read(fd, &c, 1);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) {
      *error = "stdin ended before the secret (was this started by weftrun?)";
      return false;
    }
    if (c == '\n') {
      if (!secret->empty()) return true;
      *error = "empty secret on stdin";
      return false;
    }
    *secret += c;
  }
  *error = "the secret line on stdin is too long";
  return false;
}

std::vector<int> ControlReader::ReadPending(int fd, bool* eof) {
  std::vector<int> signals;
  char buffer[512];
  for (;;) {
    ssize_t n = read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) break;
    if (n <= 0) {
      *eof = true;
      break;
    }
    pending_.append(buffer, static_cast<size_t>(n));
  }
  size_t newline;
  while ((newline = pending_.find('\n')) != std::string::npos) {
    int sig = 0;
    if (std::sscanf(pending_.c_str(), "S %d", &sig) == 1 && sig > 0 && sig < NSIG) {
      signals.push_back(sig);
    }
    pending_.erase(0, newline + 1);
  }
  if (pending_.size() > kMaxSecretLine) pending_.clear();  // garbage; commands are short
  return signals;
}

}  // namespace weftrun
