#include "launcher/remote_host.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

extern char** environ;

namespace weftrun {
namespace {

constexpr size_t kReadChunk = 64 * 1024;

std::string ThisWeftrun() {
  std::error_code error;
  std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  return error ? "weftrun" : self.string();
}

std::string Decimal(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", value);  // exact, so both ends wait alike
  return text;
}

void CloseIfOpen(int* fd) {
  if (*fd >= 0) close(*fd);
  *fd = -1;
}

}  // namespace

std::vector<std::string> RemoteCommand(const LaunchOptions& options, const JobLayout& layout,
                                       const HostPart& part) {
  std::vector<std::string> words{
      options.remote_weftrun.empty() ? ThisWeftrun() : options.remote_weftrun,
      "--remote-part",
      "--remote-host",
      part.host,
      "--remote-first-rank",
      std::to_string(part.first_rank),
      "--remote-count",
      std::to_string(part.count),
      "--remote-root",
      layout.root_addr,
      "-n",
      std::to_string(layout.nranks),
      "--grace",
      Decimal(options.grace_s)};
  std::error_code error;
  std::filesystem::path cwd = std::filesystem::current_path(error);
  if (!error) {
    words.push_back("--remote-wdir");
    words.push_back(cwd.string());
  }
  if (options.keep_going) words.push_back("--keep-going");
  if (!options.bind_to.empty()) words.push_back("--bind-to=" + options.bind_to);
  for (const std::string& item : options.exports) {
    std::string name = item.substr(0, item.find('='));
    if (name == "WEFT_SECRET") continue;
    if (item.find('=') != std::string::npos) {
      words.push_back("-x");
      words.push_back(item);
    } else if (const char* value = std::getenv(name.c_str())) {
      // mpirun's "-x NAME": this host's value, for every host.
      words.push_back("-x");
      words.push_back(name + "=" + value);
    }
  }
  words.push_back("--");
  words.insert(words.end(), options.command.begin(), options.command.end());
  return words;
}

RemoteHost::RemoteHost(const HostPart& part, bool tag_output, OutputSink* out, OutputSink* err,
                       FailureHandler on_failure)
    : part_(part),
      tag_output_(tag_output),
      out_(out),
      err_(err),
      on_failure_(std::move(on_failure)),
      frames_(FrameReader::Handlers{[this](bool is_stderr, int rank, std::string_view data) {
                                      OnOutput(is_stderr, rank, data);
                                    },
                                    [this](const RankFailure& failure) {
                                      reported_failure_ = true;
                                      on_failure_(*this, failure);
                                    },
                                    [this](std::string_view text) { out_->Write(text); }}) {}

RemoteHost::~RemoteHost() {
  CloseIfOpen(&stdin_fd_);
  CloseIfOpen(&stdout_fd_);
}

SpawnResult RemoteHost::Start(const LaunchOptions& options, const JobLayout& layout,
                              const ChildSetup& setup) {
  std::string remote_line;
  for (const std::string& word : RemoteCommand(options, layout, part_)) {
    if (!remote_line.empty()) remote_line += ' ';
    remote_line += ShellQuote(word);
  }
  // The remote command line is one word: ssh (and agents like it) join their words with spaces
  // and hand the result to the remote shell, which undoes the quoting.
  std::vector<std::string> words = options.launch_agent;
  words.push_back(part_.host);
  words.push_back(remote_line);
  std::vector<char*> argv;
  for (std::string& word : words) argv.push_back(word.data());
  argv.push_back(nullptr);

  SpawnResult result;
  int in_pipe[2] = {-1, -1};
  int out_pipe[2] = {-1, -1};
  if (pipe2(in_pipe, O_CLOEXEC) != 0 || pipe2(out_pipe, O_CLOEXEC) != 0) {
    result.error = errno;
    result.failed_step = "pipe";
  } else {
    SpawnRequest request{argv.data(), environ};
    request.stdin_fd = in_pipe[0];
    request.stdout_fd = out_pipe[1];
    result = SpawnRank(request, setup);
  }
  for (int fd : {in_pipe[0], out_pipe[1]}) {
    if (fd >= 0) close(fd);
  }
  stdin_fd_ = in_pipe[1];
  stdout_fd_ = out_pipe[0];
  if (result.pid < 0) {
    CloseIfOpen(&stdin_fd_);
    CloseIfOpen(&stdout_fd_);
    return result;
  }
  pid_ = result.pid;
  fcntl(stdout_fd_, F_SETFL, fcntl(stdout_fd_, F_GETFL) | O_NONBLOCK);
  // 65 bytes into an empty pipe: never blocks. If the agent is already gone, EPIPE (SIGPIPE is
  // ignored) and its exit tells the rest.
  std::string line = layout.secret + "\n";
  ssize_t ignored = write(stdin_fd_, line.data(), line.size());
  (void)ignored;
  return result;
}

bool RemoteHost::ReadOnce() {
  if (stdout_fd_ < 0) return false;
  char buffer[kReadChunk];
  ssize_t n = read(stdout_fd_, buffer, sizeof buffer);
  if (n > 0) {
    frames_.Feed(std::string_view(buffer, static_cast<size_t>(n)));
    return true;
  }
  if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
    CloseIfOpen(&stdout_fd_);
    frames_.Finish();
  }
  return false;
}

void RemoteHost::Drain() {
  // Bounded, like OutputRelay::Drain: the pipe could be held open by a process that escaped.
  for (int chunk = 0; chunk < 256 && ReadOnce(); ++chunk) {
  }
}

void RemoteHost::Finish() {
  Drain();
  frames_.Finish();
  for (auto& [key, relay] : relays_) relay->Finish();
  CloseIfOpen(&stdout_fd_);
  CloseIfOpen(&stdin_fd_);
}

void RemoteHost::Signal(int sig) {
  if (stdin_fd_ < 0) return;
  std::string command = SignalCommand(sig);
  ssize_t ignored = write(stdin_fd_, command.data(), command.size());
  (void)ignored;
}

void RemoteHost::HangUp() {
  CloseIfOpen(&stdin_fd_);
}

void RemoteHost::OnOutput(bool is_stderr, int rank, std::string_view data) {
  RelayFor(is_stderr, rank).Feed(data);
}

OutputRelay& RemoteHost::RelayFor(bool is_stderr, int rank) {
  std::unique_ptr<OutputRelay>& relay = relays_[rank * 2 + (is_stderr ? 1 : 0)];
  if (!relay) {
    relay = std::make_unique<OutputRelay>(
        -1, is_stderr ? err_ : out_, rank,
        tag_output_ ? RelayFormat::kTaggedLines : RelayFormat::kRaw, is_stderr);
  }
  return *relay;
}

}  // namespace weftrun
