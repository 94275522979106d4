// Runs the built weftrun binary (WEFTRUN_PATH) on small shell commands and checks what the ranks
// saw and how weftrun ended the job. Every run is bounded: a hung weftrun is killed and fails
// the test instead of hanging ctest.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#ifndef WEFTRUN_PATH
#error "WEFTRUN_PATH must name the weftrun binary under test"
#endif

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

struct RunResult {
  int status = -1;  // weftrun's exit status, or 128 + signal if it was killed
  std::string out;
  std::string err;
  double elapsed_s = 0;
  bool hung = false;  // did not finish within the limit and was killed by the test
};

// weftrun running in the background with its stdout and stderr captured. The environment is the
// test's own without any WEFT_* variable (ctest may set some), plus the given "NAME=VALUE"s.
class WeftrunProcess {
 public:
  explicit WeftrunProcess(const std::vector<std::string>& args,
                          const std::vector<std::string>& extra_env = {}) {
    std::vector<std::string> env;
    for (char** entry = environ; *entry; ++entry) {
      if (std::strncmp(*entry, "WEFT_", 5) != 0) env.emplace_back(*entry);
    }
    env.insert(env.end(), extra_env.begin(), extra_env.end());
    std::vector<std::string> argv_strings{WEFTRUN_PATH};
    argv_strings.insert(argv_strings.end(), args.begin(), args.end());
    std::vector<char*> argv = Pointers(argv_strings);
    std::vector<char*> envp = Pointers(env);
    int out_pipe[2];
    int err_pipe[2];
    REQUIRE(pipe2(out_pipe, O_CLOEXEC) == 0);
    REQUIRE(pipe2(err_pipe, O_CLOEXEC) == 0);
    start_ = Clock::now();
    pid_ = fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      dup2(out_pipe[1], STDOUT_FILENO);
      dup2(err_pipe[1], STDERR_FILENO);
      execve(argv[0], argv.data(), envp.data());
      _exit(126);
    }
    close(out_pipe[1]);
    close(err_pipe[1]);
    out_fd_ = out_pipe[0];
    err_fd_ = err_pipe[0];
  }

  ~WeftrunProcess() {
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (out_fd_ >= 0) close(out_fd_);
    if (err_fd_ >= 0) close(err_fd_);
  }

  pid_t pid() const { return pid_; }

  // Collects output until weftrun exits and its pipes close, or kills it after limit.
  RunResult Wait(std::chrono::seconds limit = 30s) {
    RunResult result;
    Clock::time_point deadline = start_ + limit;
    Clock::time_point exited_at;
    while (true) {
      if (!reaped_) {
        int status = 0;
        if (waitpid(pid_, &status, WNOHANG) == pid_) {
          reaped_ = true;
          exited_at = Clock::now();
          result.elapsed_s = std::chrono::duration<double>(exited_at - start_).count();
          result.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        } else if (Clock::now() > deadline) {
          kill(pid_, SIGKILL);
          result.hung = true;
          continue;
        }
      }
      // Once weftrun is gone its ranks are too, so the pipes close at once; a rank that weftrun
      // failed to end would keep them open, which must not hang the test either. (A bitwise "|"
      // so that both pipes are read on every pass.)
      bool open = ReadAvailable(&out_fd_, &result.out) | ReadAvailable(&err_fd_, &result.err);
      if (reaped_ && (!open || Clock::now() - exited_at > 2s)) break;
    }
    return result;
  }

 private:
  static std::vector<char*> Pointers(std::vector<std::string>& strings) {
    std::vector<char*> pointers;
    for (std::string& s : strings) pointers.push_back(s.data());
    pointers.push_back(nullptr);
    return pointers;
  }

  // Waits briefly for data on *fd and appends it; closes *fd at EOF. Returns whether still open.
  static bool ReadAvailable(int* fd, std::string* sink) {
    if (*fd < 0) return false;
    pollfd readable{*fd, POLLIN, 0};
    if (poll(&readable, 1, 10) <= 0) return true;
    char buffer[65536];
    ssize_t n = read(*fd, buffer, sizeof buffer);
    if (n > 0) {
      sink->append(buffer, static_cast<size_t>(n));
      return true;
    }
    if (n < 0 && errno == EINTR) return true;
    close(*fd);
    *fd = -1;
    return false;
  }

  pid_t pid_ = -1;
  bool reaped_ = false;
  int out_fd_ = -1;
  int err_fd_ = -1;
  Clock::time_point start_;
};

RunResult RunWeftrun(const std::vector<std::string>& args,
                     const std::vector<std::string>& extra_env = {}) {
  WeftrunProcess process(args, extra_env);
  return process.Wait();
}

// A temporary directory for files the ranks write, removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    char pattern[] = "/tmp/weftrun_test.XXXXXX";
    REQUIRE(mkdtemp(pattern) != nullptr);
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  std::string File(const std::string& name) const { return path_ + "/" + name; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream stream(text);
  for (std::string line; std::getline(stream, line);) lines.push_back(line);
  return lines;
}

std::string ReadFile(const std::string& path) {
  std::ifstream file(path);
  std::stringstream contents;
  contents << file.rdbuf();
  return contents.str();
}

bool WaitForFiles(const std::vector<std::string>& paths, std::chrono::seconds limit = 10s) {
  Clock::time_point deadline = Clock::now() + limit;
  while (Clock::now() < deadline) {
    bool all = true;
    for (const std::string& path : paths) all = all && std::filesystem::exists(path);
    if (all) return true;
    std::this_thread::sleep_for(20ms);
  }
  return false;
}

// True once the process is gone or a zombie (a reparented helper may wait for init to reap it).
bool ProcessEnded(pid_t pid, std::chrono::seconds limit = 3s) {
  Clock::time_point deadline = Clock::now() + limit;
  while (Clock::now() < deadline) {
    std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
    size_t paren = stat.rfind(')');
    if (stat.empty() || paren == std::string::npos || stat.compare(paren + 2, 1, "Z") == 0) {
      return true;
    }
    std::this_thread::sleep_for(20ms);
  }
  return false;
}

bool IsLowerHex(const std::string& text) {
  return text.find_first_not_of("0123456789abcdef") == std::string::npos;
}

}  // namespace

TEST_CASE("weftrun gives every rank its WEFT_ variables", "[launcher]") {
  RunResult run = RunWeftrun({"-n", "4", "sh", "-c",
                              "echo $WEFT_RANK $WEFT_NRANKS $WEFT_LOCAL_RANK $WEFT_LOCAL_NRANKS "
                              "$WEFT_ROOT_ADDR $WEFT_SECRET $WEFT_SOCKET_IFNAME"});
  REQUIRE(run.status == 0);
  CHECK(run.err.empty());
  std::vector<std::string> lines = Lines(run.out);
  REQUIRE(lines.size() == 4);
  std::set<std::string> ranks, roots, secrets;
  for (const std::string& line : lines) {
    std::istringstream fields(line);
    std::string rank, nranks, local_rank, local_nranks, root, secret, ifname;
    fields >> rank >> nranks >> local_rank >> local_nranks >> root >> secret >> ifname;
    ranks.insert(rank);
    roots.insert(root);
    secrets.insert(secret);
    CHECK(nranks == "4");
    CHECK(local_rank == rank);
    CHECK(local_nranks == "4");
    CHECK(ifname == "lo");
    REQUIRE(root.rfind("127.0.0.1:", 0) == 0);
    int port = std::atoi(root.c_str() + 10);
    CHECK(port > 0);
    CHECK(port < 65536);
    CHECK(secret.size() == 64);
    CHECK(IsLowerHex(secret));
  }
  CHECK(ranks == std::set<std::string>{"0", "1", "2", "3"});
  CHECK(roots.size() == 1);    // one rendezvous point for the job
  CHECK(secrets.size() == 1);  // and one secret
}

TEST_CASE("weftrun keeps an inherited secret and interface and applies -x", "[launcher]") {
  RunResult run = RunWeftrun(
      {"-x", "LAUNCHER_TEST_SET=from-x", "-x", "LAUNCHER_TEST_INHERITED", "-n", "2", "sh", "-c",
       "echo $WEFT_SECRET $WEFT_SOCKET_IFNAME $LAUNCHER_TEST_SET $LAUNCHER_TEST_INHERITED"},
      {"WEFT_SECRET=0123456789abcdef", "WEFT_SOCKET_IFNAME=eth7", "LAUNCHER_TEST_SET=old",
       "LAUNCHER_TEST_INHERITED=mine"});
  REQUIRE(run.status == 0);
  std::vector<std::string> lines = Lines(run.out);
  REQUIRE(lines.size() == 2);
  for (const std::string& line : lines) CHECK(line == "0123456789abcdef eth7 from-x mine");
}

TEST_CASE("two jobs get different secrets", "[launcher]") {
  RunResult first = RunWeftrun({"-n", "1", "sh", "-c", "echo $WEFT_SECRET"});
  RunResult second = RunWeftrun({"-n", "1", "sh", "-c", "echo $WEFT_SECRET"});
  REQUIRE(first.status == 0);
  REQUIRE(second.status == 0);
  CHECK(first.out != second.out);
}

TEST_CASE("a successful job exits 0 silently", "[launcher]") {
  RunResult run = RunWeftrun({"-n", "8", "true"});
  CHECK(run.status == 0);
  CHECK(run.out.empty());
  CHECK(run.err.empty());
}

TEST_CASE("tag-output prefixes whole lines of each stream", "[launcher]") {
  // "ab" arrives in two writes; "tail" has no newline and must still come out, on its own line.
  RunResult run = RunWeftrun({"--tag-output", "-n", "2", "sh", "-c",
                              "printf a; sleep 0.2; printf 'b\\nc\\n'; echo oops >&2; "
                              "printf tail"});
  REQUIRE(run.status == 0);
  std::multiset<std::string> out_lines, err_lines;
  for (const std::string& line : Lines(run.out)) out_lines.insert(line);
  for (const std::string& line : Lines(run.err)) err_lines.insert(line);
  CHECK(out_lines ==
        std::multiset<std::string>{"[0] ab", "[0] c", "[0] tail", "[1] ab", "[1] c", "[1] tail"});
  CHECK(err_lines == std::multiset<std::string>{"[0] oops", "[1] oops"});
  CHECK(run.out.back() == '\n');
}

TEST_CASE("tag-output splits very long lines and passes bytes through", "[launcher]") {
  RunResult run = RunWeftrun({"--tag-output", "-n", "1", "sh", "-c",
                              "head -c 200000 /dev/zero | tr '\\0' x; echo; "
                              "printf 'bin\\000\\001\\377\\n'"});
  REQUIRE(run.status == 0);
  std::vector<std::string> lines = Lines(run.out);
  REQUIRE(lines.size() >= 3);
  std::string joined;
  for (size_t i = 0; i + 1 < lines.size(); ++i) {
    REQUIRE(lines[i].rfind("[0] ", 0) == 0);
    joined += lines[i].substr(4);
  }
  CHECK(joined == std::string(200000, 'x'));
  CHECK(lines.back() == std::string("[0] bin\0\1\377", 10));
}

// A shell loop that waits (at most ~10 s) until the named file exists.
static std::string AwaitFile(const std::string& name) {
  return "i=0; while [ ! -e " + name + " ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done; ";
}

TEST_CASE("a failing rank ends the job with its status", "[launcher]") {
  TempDir dir;
  // Rank 2 fails once the others have recorded their pids and are sleeping.
  RunResult run =
      RunWeftrun({"-n", "3", "sh", "-c",
                  "cd " + dir.path() + "; echo $$ > pid.$WEFT_RANK.tmp; " +
                      "mv pid.$WEFT_RANK.tmp pid.$WEFT_RANK; " + "if [ $WEFT_RANK = 2 ]; then " +
                      AwaitFile("pid.0") + AwaitFile("pid.1") + "exit 3; fi; exec sleep 60"});
  CHECK(run.status == 3);
  CHECK(run.elapsed_s < 5);
  CHECK_FALSE(run.hung);
  std::vector<std::string> lines = Lines(run.err);
  REQUIRE(!lines.empty());
  CHECK_THAT(lines[0], Catch::StartsWith("weftrun: rank 2 (pid ") &&
                           Catch::EndsWith(") exited with status 3"));
  // The sleeping ranks were ended and reaped by weftrun, not left behind.
  for (int rank = 0; rank < 3; ++rank) {
    pid_t pid = std::atoi(ReadFile(dir.File("pid." + std::to_string(rank))).c_str());
    REQUIRE(pid > 0);
    CHECK(ProcessEnded(pid));
  }
}

TEST_CASE("with --keep-going the others run on after a rank fails", "[launcher]") {
  TempDir dir;
  // Rank 0 fails at once; rank 1 waits for that, then finishes its work and exits 0.
  RunResult run =
      RunWeftrun({"--keep-going", "-n", "2", "sh", "-c",
                  "cd " + dir.path() + "; if [ $WEFT_RANK = 0 ]; then touch failed; exit 5; fi; " +
                      AwaitFile("failed") + "sleep 0.3; touch finished"});
  CHECK(run.status == 5);
  CHECK_FALSE(run.hung);
  CHECK(std::filesystem::exists(dir.File("finished")));
  std::vector<std::string> lines = Lines(run.err);
  REQUIRE(!lines.empty());
  CHECK_THAT(lines[0], Catch::StartsWith("weftrun: rank 0 (pid ") &&
                           Catch::EndsWith(") exited with status 5"));
}

TEST_CASE("ranks that ignore SIGTERM are killed after the grace period", "[launcher]") {
  TempDir dir;
  // Rank 1 fails only after rank 0 ignores SIGTERM, so that rank 0 must be killed.
  RunResult run = RunWeftrun({"--grace", "1", "-n", "2", "sh", "-c",
                              "cd " + dir.path() + "; trap '' TERM; if [ $WEFT_RANK = 1 ]; then " +
                                  AwaitFile("ready.0") + "exit 5; fi; touch ready.0; sleep 60"});
  CHECK(run.status == 5);
  CHECK(run.elapsed_s >= 0.9);
  CHECK(run.elapsed_s < 5);
  CHECK_THAT(run.err, Catch::Contains("rank 1 (pid") && Catch::Contains("exited with status 5"));
  CHECK_THAT(run.err, Catch::Contains("rank 0 (pid") && Catch::Contains("signal 9"));
}

TEST_CASE("a rank killed by a signal gives 128 + signal", "[launcher]") {
  RunResult run = RunWeftrun(
      {"-n", "2", "sh", "-c", "if [ $WEFT_RANK = 0 ]; then kill -9 $$; fi; exec sleep 60"});
  CHECK(run.status == 137);
  CHECK(run.elapsed_s < 5);
  CHECK_THAT(run.err, Catch::Contains("weftrun: rank 0 (pid") &&
                          Catch::Contains("was killed by signal 9 (Killed)"));
}

TEST_CASE("a timeout ends the job with 124", "[launcher]") {
  RunResult run = RunWeftrun({"--timeout", "1", "-n", "2", "sleep", "60"});
  CHECK(run.status == 124);
  CHECK(run.elapsed_s >= 0.9);
  CHECK(run.elapsed_s < 5);
  CHECK_THAT(run.err, Catch::Contains("weftrun: timeout after 1 s; ending ranks"));
}

TEST_CASE("a program that does not exist gives 127", "[launcher]") {
  RunResult run = RunWeftrun({"-n", "2", "/nonexistent/weftrun-test-program"});
  CHECK(run.status == 127);
  CHECK_THAT(run.err, Catch::Contains("weftrun: cannot start rank 0: "
                                      "/nonexistent/weftrun-test-program: No such file or "
                                      "directory"));
  RunResult in_path = RunWeftrun({"-n", "1", "weftrun-test-no-such-program"});
  CHECK(in_path.status == 127);
}

namespace {

// Starts two ranks with the given placement arguments, sends SIGTERM to weftrun, and checks
// that both ranks got it. Each rank records the signal; "sleep & wait" lets its trap run at once.
void CheckSigtermReachesBothRanks(const TempDir& dir, std::vector<std::string> placement) {
  std::vector<std::string> args = std::move(placement);
  args.insert(args.end(), {"sh", "-c",
                           "cd " + dir.path() +
                               "; trap 'echo TERM > got.$WEFT_RANK; exit 0' TERM; "
                               "touch ready.$WEFT_RANK; sleep 60 & wait"});
  WeftrunProcess process(args);
  REQUIRE(WaitForFiles({dir.File("ready.0"), dir.File("ready.1")}));
  kill(process.pid(), SIGTERM);
  RunResult run = process.Wait();
  CHECK(run.status == 128 + SIGTERM);
  CHECK(run.elapsed_s < 10);
  CHECK(ReadFile(dir.File("got.0")) == "TERM\n");
  CHECK(ReadFile(dir.File("got.1")) == "TERM\n");
}

}  // namespace

TEST_CASE("SIGTERM to weftrun is forwarded to every rank", "[launcher]") {
  TempDir dir;
  CheckSigtermReachesBothRanks(dir, {"-n", "2"});
}

TEST_CASE("SIGUSR1 is forwarded and the job goes on", "[launcher]") {
  TempDir dir;
  // The signal may come before or during any command after "touch", so the rank polls for the
  // trap's file (bounded) instead of relying on "wait" being interrupted.
  WeftrunProcess process({"-n", "2", "sh", "-c",
                          "cd " + dir.path() +
                              "; trap 'echo USR1 > got.$WEFT_RANK' USR1; touch ready.$WEFT_RANK; "
                              "i=0; while [ ! -e got.$WEFT_RANK ] && [ $i -lt 400 ]; do "
                              "sleep 0.05; i=$((i + 1)); done; exit 0"});
  REQUIRE(WaitForFiles({dir.File("ready.0"), dir.File("ready.1")}));
  kill(process.pid(), SIGUSR1);
  RunResult run = process.Wait();
  CHECK(run.status == 0);
  CHECK(run.elapsed_s < 10);
  CHECK(ReadFile(dir.File("got.0")) == "USR1\n");
  CHECK(ReadFile(dir.File("got.1")) == "USR1\n");
}

TEST_CASE("helpers a rank leaves behind do not outlive the job", "[launcher]") {
  TempDir dir;
  RunResult run =
      RunWeftrun({"-n", "1", "sh", "-c", "sleep 60 & echo $! > " + dir.path() + "/helper.pid"});
  CHECK(run.status == 0);
  CHECK(run.elapsed_s < 5);
  pid_t helper = std::atoi(ReadFile(dir.File("helper.pid")).c_str());
  REQUIRE(helper > 0);
  CHECK(ProcessEnded(helper));
}

TEST_CASE("weftrun rejects bad command lines", "[launcher]") {
  CHECK(RunWeftrun({"true"}).status == 2);                        // no -n
  CHECK(RunWeftrun({"-n", "0", "true"}).status == 2);             // out of range
  CHECK(RunWeftrun({"-n", "1025", "true"}).status == 2);          // out of range
  CHECK(RunWeftrun({"-n", "2"}).status == 2);                     // no program
  CHECK(RunWeftrun({"--bogus", "-n", "1", "true"}).status == 2);  // unknown option
  CHECK(RunWeftrun({"--timeout", "soon", "-n", "1", "true"}).status == 2);
  RunResult version = RunWeftrun({"--version"});
  CHECK(version.status == 0);
  CHECK_THAT(version.out, Catch::Matches("weftrun [0-9]+\\.[0-9]+\\.[0-9]+\n"));
  CHECK(RunWeftrun({"--help"}).status == 0);
  // Options after the program belong to the program.
  RunResult passthrough = RunWeftrun({"--np=1", "--", "echo", "-n", "x"});
  CHECK(passthrough.status == 0);
  CHECK(passthrough.out == "x");
}

// ---- across hosts ---------------------------------------------------------------------------
// The other hosts are this machine too: a fake launch agent that, like ssh, takes the host and
// runs the joined words with sh -c. It exports FAKE_HOST (the host it was asked for) and records
// its command line, so that the tests see where each rank "ran" and what ps would show.

namespace {

std::string WriteFakeAgent(const TempDir& dir) {
  std::string path = dir.File("agent.sh");
  std::ofstream(path) << "#!/bin/sh\n"
                         "host=$1; shift\n"
                         "echo \"$host $*\" >> " +
                             dir.File("agent.log") +
                             "\n"
                             "FAKE_HOST=$host exec sh -c \"$*\"\n";
  std::filesystem::permissions(path, std::filesystem::perms::owner_all);
  return path;
}

}  // namespace

TEST_CASE("weftrun reads hosts from -H and --hostfile and names bad ones", "[launcher]") {
  TempDir dir;
  std::string hostfile = dir.File("hosts");
  std::ofstream(hostfile) << "# the nodes\nlocalhost slots=2 max_slots=4\n\n127.0.0.1  # one\n";
  // Without -n, every slot gets a rank; both hosts are this machine, so no agent is needed.
  RunResult from_file = RunWeftrun({"--hostfile", hostfile, "sh", "-c", "echo $WEFT_RANK"});
  CHECK(from_file.status == 0);
  CHECK(Lines(from_file.out).size() == 3);
  RunResult fewer = RunWeftrun({"-H", "localhost:4", "-n", "2", "sh", "-c", "echo $WEFT_NRANKS"});
  CHECK(fewer.status == 0);
  CHECK(fewer.out == "2\n2\n");

  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  std::ofstream(dir.File("bad")) << "node0 slots=2\nnode1 slots=many\n";
  std::ofstream(dir.File("unknown")) << "node0 cpus=2\n";
  std::vector<Case> cases = {
      {{"-H", "node0:4,node1:4", "-n", "9", "true"},
       "weftrun: -n 9 exceeds the 8 slots of the hosts given (node0:4,node1:4)"},
      {{"-H", "node0:x", "true"}, "weftrun: -H node0:x: invalid slot count in 'node0:x'"},
      {{"-H", "node0:0", "true"}, "weftrun: -H node0:0: invalid slot count"},
      {{"-H", "node0,,node1", "true"}, "weftrun: -H node0,,node1: invalid host name in ''"},
      {{"-H", "-oProxyCommand=x", "true"}, "invalid host name in '-oProxyCommand=x'"},
      {{"-H", "a", "--hostfile", hostfile, "true"}, "give the hosts once"},
      {{"--hostfile", dir.File("bad"), "true"},
       "weftrun: --hostfile " + dir.File("bad") + ":2: invalid 'slots=many'"},
      {{"--hostfile", dir.File("unknown"), "true"}, ":1: unknown 'cpus=2' (expected slots=N)"},
      {{"--hostfile", dir.File("none"), "true"},
       "--hostfile " + dir.File("none") + ": cannot open"},
      {{"-H", "node0:2", "--launch-agent", " ", "true"}, "--launch-agent: empty command"},
  };
  for (const Case& c : cases) {
    RunResult run = RunWeftrun(c.args);
    INFO(c.args[1]);
    CHECK(run.status == 2);
    CHECK_THAT(run.err, Catch::Contains(c.message));
  }
}

TEST_CASE("weftrun -H places ranks in blocks and starts other hosts through the agent",
          "[launcher]") {
  TempDir dir;
  std::string agent = WriteFakeAgent(dir);
  RunResult run = RunWeftrun(
      {"-H", "localhost:1,hostA:2,hostB:2", "-n", "4", "--launch-agent", agent, "-x",
       "SPACED=a 'b' c", "sh", "-c",
       "echo $WEFT_RANK ${FAKE_HOST:-local} $WEFT_LOCAL_RANK/$WEFT_LOCAL_NRANKS $WEFT_NRANKS "
       "$WEFT_ROOT_ADDR ${WEFT_SOCKET_IFNAME:-none} \"$SPACED\" $WEFT_SECRET"});
  REQUIRE(run.status == 0);
  CHECK(run.err.empty());
  std::vector<std::string> lines = Lines(run.out);
  REQUIRE(lines.size() == 4);
  std::map<std::string, std::string> by_rank;
  std::set<std::string> roots, secrets;
  for (const std::string& line : lines) {
    std::istringstream fields(line);
    std::string rank, host, local, nranks, root, ifname, secret;
    fields >> rank >> host >> local >> nranks >> root >> ifname;
    by_rank[rank] = host + " " + local;
    CHECK(nranks == "4");
    CHECK(ifname == "none");  // several hosts: not forced to loopback
    CHECK_THAT(line, Catch::Contains("a 'b' c"));
    roots.insert(root);
    secrets.insert(line.substr(line.rfind(' ') + 1));
  }
  CHECK(by_rank ==
        std::map<std::string, std::string>{
            {"0", "local 0/1"}, {"1", "hostA 0/2"}, {"2", "hostA 1/2"}, {"3", "hostB 0/1"}});
  REQUIRE(roots.size() == 1);
  CHECK(roots.begin()->rfind("127.0.0.1:", 0) != 0);  // the other hosts must reach rank 0
  REQUIRE(secrets.size() == 1);
  CHECK(secrets.begin()->size() == 64);
  // The secret travels on the agent's stdin, never on a command line.
  std::string agent_log = ReadFile(dir.File("agent.log"));
  std::set<std::string> agent_hosts;  // the agents start concurrently: in any order
  for (const std::string& line : Lines(agent_log)) agent_hosts.insert(line.substr(0, 6));
  CHECK(agent_hosts == std::set<std::string>{"hostA ", "hostB "});
  CHECK(agent_log.find(*secrets.begin()) == std::string::npos);
}

TEST_CASE("a rank failing on another host ends the job on every host, named", "[launcher]") {
  TempDir dir;
  std::string agent = WriteFakeAgent(dir);
  // Rank 3 (hostB) is killed once every rank has recorded its pid; the others sleep.
  RunResult run = RunWeftrun(
      {"-H", "localhost:2,hostA:1,hostB:2", "--launch-agent", agent, "--tag-output", "sh", "-c",
       "cd " + dir.path() +
           "; echo started; echo $$ > pid.$WEFT_RANK.tmp; mv pid.$WEFT_RANK.tmp pid.$WEFT_RANK; " +
           "if [ $WEFT_RANK = 3 ]; then " + AwaitFile("pid.0") + AwaitFile("pid.1") +
           AwaitFile("pid.2") + AwaitFile("pid.4") + "kill -9 $$; fi; exec sleep 60"});
  CHECK(run.status == 137);
  CHECK(run.elapsed_s < 5);
  CHECK_FALSE(run.hung);
  std::vector<std::string> lines = Lines(run.err);
  REQUIRE(!lines.empty());
  CHECK_THAT(lines[0], Catch::StartsWith("weftrun: rank 3 on hostB (pid ") &&
                           Catch::EndsWith(") was killed by signal 9 (Killed); ending the job"));
  std::multiset<std::string> out_lines;
  for (const std::string& line : Lines(run.out)) out_lines.insert(line);
  CHECK(out_lines == std::multiset<std::string>{"[0] started", "[1] started", "[2] started",
                                                "[3] started", "[4] started"});
  for (int rank = 0; rank < 5; ++rank) {
    pid_t pid = std::atoi(ReadFile(dir.File("pid." + std::to_string(rank))).c_str());
    REQUIRE(pid > 0);
    CHECK(ProcessEnded(pid));
  }
}

TEST_CASE("a host whose weftrun cannot run fails the job, named", "[launcher]") {
  TempDir dir;
  std::string agent = WriteFakeAgent(dir);
  RunResult run = RunWeftrun({"-H", "localhost:1,hostA:1", "--launch-agent", agent,
                              "--weftrun-path", "/nonexistent/weftrun", "sleep", "60"});
  CHECK(run.status == 127);
  CHECK(run.elapsed_s < 5);
  CHECK_THAT(run.err, Catch::Contains("weftrun: weftrun on hostA (agent pid ") &&
                          Catch::Contains(") exited with status 127; ending the job"));
  RunResult no_agent = RunWeftrun(
      {"-H", "localhost:1,hostA:1", "--launch-agent", "/nonexistent/agent", "sleep", "60"});
  CHECK(no_agent.status == 127);
  CHECK_THAT(no_agent.err, Catch::Contains("weftrun: cannot start the launch agent for hostA: "
                                           "/nonexistent/agent: No such file or directory"));
}

TEST_CASE("SIGTERM to weftrun reaches the ranks on other hosts", "[launcher]") {
  TempDir dir;
  CheckSigtermReachesBothRanks(
      dir, {"-H", "localhost:1,hostA:1", "--launch-agent", WriteFakeAgent(dir)});
}
