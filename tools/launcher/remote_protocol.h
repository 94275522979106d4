// How the top weftrun and a remote part talk through the launch agent, which carries only stdin,
// stdout and stderr (like ssh):
//
// - top -> remote, on stdin: the job's secret as the first line (never on a command line, where
//   ps on every host would show it), then "S <signal>" lines: act as if weftrun got that signal.
//   End of file means the top is gone or gives up on this host: end the ranks now.
// - remote -> top, on stdout: frames. "#weftrun O|E <rank> <length>" plus that many bytes of a
//   rank's stdout or stderr, and "#weftrun X ..." when a rank fails. Lines that are not frames
//   (a login script's chatter) are passed through as output.
// - remote -> top, on stderr: the remote weftrun's own messages, passed through untouched.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "launcher/process_group.h"

namespace weftrun {

// Quotes a word for a POSIX shell: ssh joins its arguments with spaces and runs them with sh -c.
std::string ShellQuote(std::string_view word);

// A rank that failed, as a remote part reports it.
struct RankFailure {
  int rank = -1;
  int pid = 0;
  ExitInfo info;
  // Failed while the job ran (a cause), rather than after this host was told to end the job.
  bool own = true;
  int64_t time_ns = 0;  // CLOCK_REALTIME when its weftrun saw the exit
};

// Nanoseconds on CLOCK_REALTIME: comparable between hosts whose clocks are synchronised, which
// is what naming the first failure of a job needs.
int64_t RealtimeNs();

std::string OutputFrame(bool is_stderr, int rank, std::string_view data);
std::string FailureFrame(const RankFailure& failure);
std::string SignalCommand(int sig);

// Decodes a remote part's stdout as it arrives, in any pieces.
class FrameReader {
 public:
  struct Handlers {
    std::function<void(bool is_stderr, int rank, std::string_view data)> output;
    std::function<void(const RankFailure&)> failure;
    std::function<void(std::string_view text)> text;  // anything that is not a frame
  };
  explicit FrameReader(Handlers handlers) : handlers_(std::move(handlers)) {}

  void Feed(std::string_view data);
  // End of stream: a partial frame or line left over is passed on as text.
  void Finish();

 private:
  bool DecodeOne();  // false when more bytes are needed

  Handlers handlers_;
  std::string buffer_;
};

// The remote part's end of stdin: the secret, then commands until end of file.
class ControlReader {
 public:
  // Reads the first line (blocking, up to timeout_ms). Returns false with a message if stdin
  // ends or times out first.
  static bool ReadSecret(int fd, int timeout_ms, std::string* secret, std::string* error);

  // Reads what is there (fd must be non-blocking); returns the signals asked for, and sets *eof
  // at end of file.
  std::vector<int> ReadPending(int fd, bool* eof);

 private:
  std::string pending_;
};

}  // namespace weftrun
