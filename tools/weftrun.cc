// weftrun: starts N local ranks of a program with the WEFT_* environment the library's init
// expects, and supervises them as one job (see launcher/supervisor.h for the exit statuses).
// This file only parses the command line.
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "launcher/launch_options.h"
#include "launcher/rank_env.h"
#include "launcher/supervisor.h"
#include "weft/weft.h"

namespace {

constexpr char kUsage[] =
    R"(Usage: weftrun -n N [options] [--] program [args...]
Starts N ranks of program on this machine and supervises them as one job.

Options:
  -n, -np, --np N     number of ranks, 1..1024 (required)
  --tag-output        prefix every line a rank writes to stdout/stderr with "[rank] "
  -x NAME[=VALUE]     export NAME to the ranks, with VALUE or weftrun's own value (repeatable)
  --timeout SECONDS   end the job if it runs longer than this; weftrun then exits 124
  --grace SECONDS     time between SIGTERM and SIGKILL when ending ranks (default 3)
  --keep-going        when a rank fails, let the others run on (to see how they handle it)
  -h, --help          show this help and exit
  --version           show the version and exit

Each rank gets WEFT_RANK, WEFT_NRANKS, WEFT_LOCAL_RANK, WEFT_LOCAL_NRANKS and WEFT_ROOT_ADDR,
plus WEFT_SECRET and WEFT_SOCKET_IFNAME=lo unless those are already set. Each rank runs in its
own process group; SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 are forwarded to all.
When a rank fails, the others are ended (unless --keep-going) and weftrun exits with the first
failing rank's status (128+N if it was killed by signal N); 127 if the program cannot be found.
)";

// Upper bound for --timeout and --grace: a year, far beyond any job, and small enough that
// converting it to clock ticks cannot overflow.
constexpr double kMaxSeconds = 365.0 * 24 * 3600;

int UsageError(const std::string& message) {
  std::fprintf(stderr, "weftrun: %s\nTry 'weftrun --help' for more information.\n",
               message.c_str());
  return 2;
}

bool ParseRankCount(const std::string& text, int* count) {
  char* end = nullptr;
  errno = 0;
  long value = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0 || value < 1 || value > weftrun::kMaxRanks) {
    return false;
  }
  *count = static_cast<int>(value);
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
      if (!ParseRankCount(*value, &options->nranks)) {
        return UsageError("invalid number of ranks '" + *value + "' (1.." +
                          std::to_string(weftrun::kMaxRanks) + ")");
      }
    } else if (name == "-x") {
      if (!take_value()) return UsageError("-x needs NAME or NAME=VALUE");
      std::string variable = value->substr(0, value->find('='));
      if (variable.empty()) return UsageError("-x " + *value + ": empty variable name");
      if (weftrun::IsWeftrunOwnedVariable(variable)) {
        return UsageError("-x " + variable + ": weftrun sets this variable itself");
      }
      options->exports.push_back(*value);
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
  if (options->nranks == 0) return UsageError("missing -n N (the number of ranks)");
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
