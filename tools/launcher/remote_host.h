// The top weftrun's handle on one other host: the launch agent it started there (ssh HOST
// weftrun --remote-part ...), the agent's stdin as the line to that host's weftrun, and the
// frames coming back on its stdout, turned into the ranks' output and failure reports.
#pragma once

#include <sys/types.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "launcher/job_layout.h"
#include "launcher/output_relay.h"
#include "launcher/process_group.h"
#include "launcher/remote_protocol.h"

namespace weftrun {

// The words of the remote weftrun's command line, before quoting: its path, the hidden
// --remote-part options describing part, the exports with their values resolved here (but never
// WEFT_SECRET, which goes over stdin), and the program.
std::vector<std::string> RemoteCommand(const LaunchOptions& options, const JobLayout& layout,
                                       const HostPart& part);

class RemoteHost {
 public:
  using FailureHandler = std::function<void(const RemoteHost& host, const RankFailure&)>;

  RemoteHost(const HostPart& part, bool tag_output, OutputSink* out, OutputSink* err,
             FailureHandler on_failure);
  ~RemoteHost();
  RemoteHost(const RemoteHost&) = delete;
  RemoteHost& operator=(const RemoteHost&) = delete;

  // Starts the agent in a process group of its own and sends it the secret.
  SpawnResult Start(const LaunchOptions& options, const JobLayout& layout, const ChildSetup& setup);

  const HostPart& part() const { return part_; }
  pid_t pid() const { return pid_; }
  bool exited() const { return exited_; }
  void set_exited() { exited_ = true; }
  // Whether a rank failure came from this host (then the agent's own status adds nothing).
  bool reported_failure() const { return reported_failure_; }
  int stdout_fd() const { return stdout_fd_; }

  // Reads once from the agent's stdout; false when nothing was there (or it ended).
  bool ReadOnce();
  void Drain();
  // Drains and flushes the ranks' last partial lines.
  void Finish();

  // Asks the remote weftrun to act as if it got sig (forwarding, or ending its ranks).
  void Signal(int sig);
  // Closes its stdin: the remote weftrun kills its ranks at once and exits.
  void HangUp();

 private:
  void OnOutput(bool is_stderr, int rank, std::string_view data);
  OutputRelay& RelayFor(bool is_stderr, int rank);

  HostPart part_;
  bool tag_output_;
  OutputSink* out_;
  OutputSink* err_;
  FailureHandler on_failure_;
  FrameReader frames_;
  pid_t pid_ = -1;
  bool exited_ = false;
  bool reported_failure_ = false;
  int stdin_fd_ = -1;
  int stdout_fd_ = -1;
  // Per rank and stream (rank * 2 + is_stderr): tags lines or passes bytes through.
  std::map<int, std::unique_ptr<OutputRelay>> relays_;
};

}  // namespace weftrun
