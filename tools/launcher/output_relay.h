// --tag-output: copies a rank's stdout or stderr from a pipe to weftrun's own, one complete line
// at a time with a "[rank] " prefix, so that lines from different ranks never interleave.
#pragma once

#include <string>
#include <string_view>

namespace weftrun {

// One of weftrun's own output descriptors, shared by the relays that write to it. Once a write
// fails (the reader went away) output to it is dropped, but the job keeps being supervised.
struct OutputSink {
  int fd;
  bool broken = false;

  void Write(std::string_view data);
};

class OutputRelay {
 public:
  // Takes ownership of source_fd, the non-blocking read end of the rank's pipe.
  OutputRelay(int source_fd, OutputSink* sink, int rank);
  ~OutputRelay();
  OutputRelay(const OutputRelay&) = delete;
  OutputRelay& operator=(const OutputRelay&) = delete;

  // -1 once the pipe reached end-of-file and was closed.
  int fd() const { return source_fd_; }

  // Reads what one read() returns and relays the complete lines in it.
  void ReadOnce();
  // Reads until the pipe is empty (bounded, in case a writer keeps going) and relays.
  void Drain();
  // Drains, then writes out a final partial line with a newline added, and closes the pipe.
  void Finish();

 private:
  void Relay(bool flush_partial);
  void Close();

  int source_fd_;
  OutputSink* sink_;
  std::string prefix_;
  std::string pending_;  // bytes after the last newline
};

}  // namespace weftrun
