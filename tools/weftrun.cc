// weftrun: starts N ranks of a program, on this machine or across hosts (through a remote shell
// such as ssh, which runs weftrun itself there in a hidden mode), with the WEFT_* environment the
// library's init expects, and supervises them as one job (see launcher/supervisor.h for the exit
// statuses). This file only parses the command line.
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>

#include "launcher/host_list.h"
#include "launcher/launch_options.h"
#include "launcher/rank_env.h"
#include "launcher/supervisor.h"
#include "weft/weft.h"

namespace {

constexpr char kUsage[] =
    R"(Usage: weftrun -n N [options] [--] program [args...]
       weftrun -H HOST[:SLOTS],... | --hostfile FILE [-n N] [options] [--] program [args...]
Starts N ranks of program, on this machine or across hosts, and supervises them as one job.

Options:
  -n, -np, --np N     number of ranks, 1..1024 (required without hosts; with hosts, default:
                      all their slots)
  -H, --host LIST     hosts and their slots: "node0:4,node1:4" ("node0" alone: 1 slot); ranks
                      fill each host's slots in order (node0 gets ranks 0-3)
  --hostfile FILE     the hosts, one a line as in Open MPI: "node0 slots=4" or "node0"; "#" starts
                      a comment
  --launch-agent CMD  how to run weftrun on another host: CMD HOST COMMAND (default "ssh"); the
                      command is quoted for the remote shell. This host (its name, localhost)
                      runs its ranks directly
  --weftrun-path P    the weftrun to run on other hosts (default: this one's absolute path)
  --tag-output        prefix every line a rank writes to stdout/stderr with "[rank] "
  -x NAME[=VALUE]     export NAME to the ranks, with VALUE or weftrun's own value (repeatable)
  --timeout SECONDS   end the job if it runs longer than this; weftrun then exits 124
  --grace SECONDS     time between SIGTERM and SIGKILL when ending ranks (default 3)
  --keep-going        when a rank fails, let the others run on (to see how they handle it)
  --bind-to MODE      bind each rank to one CPU at init, round robin over its machine's ranks:
                      core, none or auto (only where they outnumber its CPUs); sets
                      WEFT_BIND (default: WEFT_BIND from weftrun's environment, else auto)
  -h, --help          show this help and exit
  --version           show the version and exit

Each rank gets WEFT_RANK, WEFT_NRANKS, WEFT_LOCAL_RANK, WEFT_LOCAL_NRANKS and WEFT_ROOT_ADDR,
plus WEFT_SECRET unless it is already set, WEFT_BIND (--bind-to), and on one host
WEFT_SOCKET_IFNAME=lo unless set.
Across hosts, rank 0's host (as named in the list) serves the rendezvous, the secret reaches the
other hosts on the agent's stdin (never on a command line), and only -x variables are passed
there. Each rank runs in its own process group; SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and
SIGUSR2 are forwarded to all, on every host. When a rank fails, the others are ended (unless
--keep-going) and weftrun exits with the first failing rank's status (128+N if it was killed by
signal N), naming its host across hosts; 127 if the program cannot be found.
)";

// Upper bound for --timeout and --grace: a year, far beyond any job, and small enough that
// converting it to clock ticks cannot overflow.
constexpr double kMaxSeconds = 365.0 * 24 * 3600;

int UsageError(const std::string& message) {
  std::fprintf(stderr, "weftrun: %s\nTry 'weftrun --help' for more information.\n",
               message.c_str());
  return 2;
}

// A count of ranks, or a rank (min 0), up to kMaxRanks.
bool ParseCount(const std::string& text, int min, int* out) {
  char* end = nullptr;
  errno = 0;
  long value = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0 || value < min || value > weftrun::kMaxRanks) {
    return false;
  }
  *out = static_cast<int>(value);
  return true;
}

bool ParseSeconds(const std::string& text, bool allow_zero, double* seconds) {
  char* end = nullptr;
  errno = 0;
  double value = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno != 0 || !std::isfinite(value)) return false;
  if (value < 0 || (value == 0 && !allow_zero) || value > kMaxSeconds) return false;
  *seconds = value;
  return true;
}

// "node0:4,node1:4", for messages.
std::string HostsText(const std::vector<weftrun::HostSlots>& hosts) {
  std::string text;
  for (const weftrun::HostSlots& host : hosts) {
    if (!text.empty()) text += ',';
    text += host.name + ":" + std::to_string(host.slots);
  }
  return text;
}

// The hidden options the top weftrun passes to a remote part (remote_host.cc, RemoteCommand).
int ParseRemoteOption(std::string_view name, const std::string& value,
                      weftrun::LaunchOptions* options) {
  if (!options->remote) options->remote.emplace();
  weftrun::RemotePart& part = *options->remote;
  bool ok = true;
  if (name == "--remote-part") {
    // Only marks the mode; the values follow.
  } else if (name == "--remote-host") {
    part.host = value;
  } else if (name == "--remote-first-rank") {
    ok = ParseCount(value, 0, &part.first_rank);
  } else if (name == "--remote-count") {
    ok = ParseCount(value, 1, &part.count);
  } else if (name == "--remote-root") {
    part.root_addr = value;
  } else if (name == "--remote-wdir") {
    part.wdir = value;
  } else {
    return UsageError("unknown option '" + std::string(name) + "'");
  }
  if (!ok) return UsageError("invalid " + std::string(name) + " '" + value + "'");
  return -1;
}

bool IsBindMode(const std::string& mode) {
  return mode == "core" || mode == "none" || mode == "auto";
}

// Fills *options from argv. Returns -1 to go on and run the job, or the status to exit with.
// Options end at "--" or at the first argument that is not an option, so that the program's
// own options (even "-n") are passed to it untouched.
int ParseArguments(int argc, char** argv, weftrun::LaunchOptions* options) {
  int i = 1;
  for (; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg.size() < 2 || arg[0] != '-') break;
    // Long options also take their value as "--name=value".
    std::string_view name = arg;
    std::optional<std::string> value;
    size_t equals = arg.find('=');
    if (arg.starts_with("--") && equals != std::string_view::npos) {
      name = arg.substr(0, equals);
      value = std::string(arg.substr(equals + 1));
    }
    auto take_value = [&]() -> bool {
      if (value) return true;
      if (i + 1 >= argc) return false;
      value = argv[++i];
      return true;
    };
    if (name == "-h" || name == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (name == "--version") {
      std::puts("weftrun " WEFT_VERSION_STRING);
      return 0;
    }
    if (name == "--tag-output" && !value) {
      options->tag_output = true;
    } else if (name == "--keep-going" && !value) {
      options->keep_going = true;
    } else if (name == "-n" || name == "-np" || name == "--np") {
      if (!take_value()) return UsageError(std::string(name) + " needs a number of ranks");
      if (!ParseCount(*value, 1, &options->nranks)) {
        return UsageError("invalid number of ranks '" + *value + "' (1.." +
                          std::to_string(weftrun::kMaxRanks) + ")");
      }
    } else if (name == "-H" || name == "--host") {
      if (!take_value()) return UsageError(std::string(name) + " needs a list of hosts");
      if (!options->hosts.empty()) return UsageError("give the hosts once: -H or --hostfile");
      std::string error;
      if (!weftrun::ParseHostList(*value, &options->hosts, &error)) return UsageError(error);
    } else if (name == "--hostfile") {
      if (!take_value()) return UsageError("--hostfile needs a file name");
      if (!options->hosts.empty()) return UsageError("give the hosts once: -H or --hostfile");
      std::string error;
      if (!weftrun::ReadHostfile(*value, &options->hosts, &error)) return UsageError(error);
    } else if (name == "--launch-agent") {
      if (!take_value()) return UsageError("--launch-agent needs a command");
      std::istringstream words(*value);
      options->launch_agent.clear();
      for (std::string word; words >> word;) options->launch_agent.push_back(word);
      if (options->launch_agent.empty()) return UsageError("--launch-agent: empty command");
    } else if (name == "--weftrun-path") {
      if (!take_value() || value->empty()) return UsageError("--weftrun-path needs a path");
      options->remote_weftrun = *value;
    } else if (name.starts_with("--remote-")) {
      // The hidden mode in which the top weftrun starts this one on another host.
      if (name != "--remote-part" && !take_value()) {
        return UsageError(std::string(name) + " needs a value");
      }
      int status = ParseRemoteOption(name, value.value_or(""), options);
      if (status >= 0) return status;
    } else if (name == "-x") {
      if (!take_value()) return UsageError("-x needs NAME or NAME=VALUE");
      std::string variable = value->substr(0, value->find('='));
      if (variable.empty()) return UsageError("-x " + *value + ": empty variable name");
      if (weftrun::IsWeftrunOwnedVariable(variable)) {
        return UsageError("-x " + variable + ": weftrun sets this variable itself");
      }
      options->exports.push_back(*value);
    } else if (name == "--bind-to") {
      if (!take_value()) return UsageError("--bind-to needs core, none or auto");
      if (!IsBindMode(*value)) {
        return UsageError("invalid --bind-to '" + *value + "' (core, none or auto)");
      }
      options->bind_to = *value;
    } else if (name == "--timeout" || name == "--grace") {
      if (!take_value()) return UsageError(std::string(name) + " needs a number of seconds");
      double seconds = 0;
      bool is_timeout = name == "--timeout";
      if (!ParseSeconds(*value, /*allow_zero=*/!is_timeout, &seconds)) {
        return UsageError("invalid " + std::string(name) + " '" + *value + "'");
      }
      if (is_timeout) {
        options->timeout_s = seconds;
      } else {
        options->grace_s = seconds;
      }
    } else {
      return UsageError("unknown option '" + std::string(arg) + "'");
    }
  }
  if (options->bind_to.empty()) {
    // Resolved here, so that the hosts a remote part runs on bind as this one says.
    const char* inherited = std::getenv("WEFT_BIND");
    options->bind_to = inherited != nullptr && *inherited != '\0' ? inherited : "auto";
    if (!IsBindMode(options->bind_to)) {
      return UsageError("WEFT_BIND='" + options->bind_to +
                        "' in weftrun's environment: core, none or auto");
    }
  }
  if (!options->hosts.empty()) {
    int slots = 0;
    for (const weftrun::HostSlots& host : options->hosts) slots += host.slots;
    if (options->nranks > slots) {
      return UsageError("-n " + std::to_string(options->nranks) + " exceeds the " +
                        std::to_string(slots) + " slot" + (slots == 1 ? "" : "s") +
                        " of the hosts given (" + HostsText(options->hosts) + ")");
    }
  } else if (options->nranks == 0) {
    return UsageError("missing -n N (the number of ranks) or -H/--hostfile");
  }
  if (options->remote) {
    const weftrun::RemotePart& part = *options->remote;
    if (part.host.empty() || part.count < 1 || part.root_addr.empty() || options->nranks == 0 ||
        part.first_rank + part.count > options->nranks) {
      return UsageError("--remote-part: incomplete or inconsistent (it is started by weftrun)");
    }
  }
  if (i >= argc) return UsageError("missing the program to run");
  options->command.assign(argv + i, argv + argc);
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  weftrun::LaunchOptions options;
  int status = ParseArguments(argc, argv, &options);
  if (status >= 0) return status;
  return weftrun::RunJob(options);
}
