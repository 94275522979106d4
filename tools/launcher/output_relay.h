// Copies a rank's stdout or stderr to one of weftrun's own. With --tag-output one complete line at
// a time with a "[rank] " prefix, so that lines from different ranks never interleave; in a remote
// part as frames for the top (remote_protocol.h); at the top, a remote rank's bytes as they are.
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

enum class RelayFormat {
  kTaggedLines,  // "[rank] " before every line
  kRaw,          // the bytes as they come
  kFrames,       // remote_protocol.h's output frames
};

class OutputRelay {
 public:
  // Takes ownership of source_fd, the non-blocking read end of the rank's pipe; -1 for a relay
  // that is only fed (a remote rank's output, which arrives in frames).
  OutputRelay(int source_fd, OutputSink* sink, int rank,
              RelayFormat format = RelayFormat::kTaggedLines, bool is_stderr = false);
  ~OutputRelay();
  OutputRelay(const OutputRelay&) = delete;
  OutputRelay& operator=(const OutputRelay&) = delete;

  // -1 once the pipe reached end-of-file and was closed.
  int fd() const { return source_fd_; }

  // Reads what one read() returns and relays the complete lines in it.
  void ReadOnce();
  // Relays data as if read from the pipe.
  void Feed(std::string_view data);
  // Reads until the pipe is empty (bounded, in case a writer keeps going) and relays.
  void Drain();
  // Drains, then writes out a final partial line with a newline added, and closes the pipe.
  void Finish();

 private:
  void Relay(bool flush_partial);
  void Close();

  int source_fd_;
  OutputSink* sink_;
  int rank_;
  RelayFormat format_;
  bool is_stderr_;
  std::string prefix_;
  std::string pending_;  // bytes after the last newline
};

}  // namespace weftrun
