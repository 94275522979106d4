#include "launcher/output_relay.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "launcher/remote_protocol.h"

namespace weftrun {
namespace {

constexpr size_t kReadChunk = 64 * 1024;
// A "line" longer than this (or binary data without newlines) is cut into pieces, each with its
// own prefix, so that one rank cannot make weftrun buffer without bound.
constexpr size_t kMaxLine = 64 * 1024;
// Drain() gives up after this many chunks: a process that escaped the rank's group may keep the
// pipe open and writing forever, and weftrun must still get to exit.
constexpr int kMaxDrainChunks = 256;

}  // namespace

void OutputSink::Write(std::string_view data) {
  while (!broken && !data.empty()) {
    ssize_t n = write(fd, data.data(), data.size());
    if (n > 0) {
      data.remove_prefix(static_cast<size_t>(n));
    } else if (n < 0 && errno == EAGAIN) {
      // weftrun's stdout may have been handed to it non-blocking; wait instead of dropping.
      pollfd writable{fd, POLLOUT, 0};
      poll(&writable, 1, -1);
    } else if (n < 0 && errno != EINTR) {
      broken = true;  // EPIPE and friends (SIGPIPE is ignored)
    }
  }
}

OutputRelay::OutputRelay(int source_fd, OutputSink* sink, int rank, RelayFormat format,
                         bool is_stderr)
    : source_fd_(source_fd), sink_(sink), rank_(rank), format_(format), is_stderr_(is_stderr) {
  // snprintf rather than string concatenation, which trips a false -Wrestrict in GCC 12.
  char prefix[32];
  std::snprintf(prefix, sizeof prefix, "[%d] ", rank);
  prefix_ = prefix;
}

OutputRelay::~OutputRelay() {
  Close();
}

void OutputRelay::Close() {
  if (source_fd_ >= 0) close(source_fd_);
  source_fd_ = -1;
}

void OutputRelay::ReadOnce() {
  if (source_fd_ < 0) return;
  char buffer[kReadChunk];
  ssize_t n = read(source_fd_, buffer, sizeof buffer);
  if (n > 0) {
    Feed(std::string_view(buffer, static_cast<size_t>(n)));
  } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
    Close();
  }
}

void OutputRelay::Feed(std::string_view data) {
  if (format_ == RelayFormat::kRaw) {
    sink_->Write(data);
  } else if (format_ == RelayFormat::kFrames) {
    sink_->Write(OutputFrame(is_stderr_, rank_, data));
  } else {
    pending_.append(data);
    Relay(false);
  }
}

void OutputRelay::Drain() {
  for (int chunk = 0; chunk < kMaxDrainChunks && source_fd_ >= 0; ++chunk) {
    size_t before = pending_.size();
    int fd_before = source_fd_;
    ReadOnce();
    // Nothing read and still open: the pipe is empty for now.
    if (source_fd_ == fd_before && pending_.size() == before) {
      pollfd readable{source_fd_, POLLIN, 0};
      if (poll(&readable, 1, 0) <= 0) break;
    }
  }
}

void OutputRelay::Finish() {
  Drain();
  Relay(true);
  Close();
}

void OutputRelay::Relay(bool flush_partial) {
  // All complete lines of a chunk go out in one write: one system call instead of one per line,
  // and weftrun is the only writer of its stdout/stderr while relaying, so nothing can tear them.
  std::string out;
  size_t start = 0;
  while (start < pending_.size()) {
    size_t newline = pending_.find('\n', start);
    size_t end;  // one past the last byte of this piece, newline excluded
    if (newline != std::string::npos && newline - start < kMaxLine) {
      end = newline;
    } else if (pending_.size() - start >= kMaxLine) {
      end = start + kMaxLine;
      newline = std::string::npos;
    } else if (flush_partial) {
      end = pending_.size();
    } else {
      break;  // an incomplete line: wait for the rest
    }
    out += prefix_;
    out.append(pending_, start, end - start);
    out += '\n';
    start = newline == std::string::npos ? end : newline + 1;
  }
  pending_.erase(0, start);
  sink_->Write(out);
}

}  // namespace weftrun
