#include "launcher/rank_env.h"

#include <cstdio>

#include "launcher/job_layout.h"

extern char** environ;

namespace weftrun {
namespace {

// An empty value is treated as unset: an empty secret or interface name is never what was meant.
bool IsSetNonEmpty(const EnvBlock& env, std::string_view name) {
  std::optional<std::string> value = env.Get(name);
  return value && !value->empty();
}

}  // namespace

EnvBlock EnvBlock::FromProcess() {
  EnvBlock block;
  for (char** entry = environ; entry && *entry; ++entry) block.entries_.emplace_back(*entry);
  return block;
}

std::optional<std::string> EnvBlock::Get(std::string_view name) const {
  for (const std::string& entry : entries_) {
    if (entry.size() > name.size() && entry.compare(0, name.size(), name) == 0 &&
        entry[name.size()] == '=') {
      return entry.substr(name.size() + 1);
    }
  }
  return std::nullopt;
}

void EnvBlock::Set(std::string_view name, std::string_view value) {
  std::string entry = std::string(name) + "=" + std::string(value);
  for (std::string& existing : entries_) {
    if (existing.size() > name.size() && existing.compare(0, name.size(), name) == 0 &&
        existing[name.size()] == '=') {
      existing = std::move(entry);
      return;
    }
  }
  entries_.push_back(std::move(entry));
}

std::vector<char*> EnvBlock::Pointers() {
  std::vector<char*> pointers;
  pointers.reserve(entries_.size() + 1);
  for (std::string& entry : entries_) pointers.push_back(entry.data());
  pointers.push_back(nullptr);
  return pointers;
}

bool IsWeftrunOwnedVariable(std::string_view name) {
  return name == "WEFT_RANK" || name == "WEFT_NRANKS" || name == "WEFT_LOCAL_RANK" ||
         name == "WEFT_LOCAL_NRANKS" || name == "WEFT_ROOT_ADDR";
}

void PrepareJobEnvironment(const LaunchOptions& options, const JobLayout& layout, EnvBlock* env) {
  *env = EnvBlock::FromProcess();
  for (const std::string& item : options.exports) {
    size_t equals = item.find('=');
    if (equals != std::string::npos) {
      env->Set(item.substr(0, equals), item.substr(equals + 1));
    } else if (!env->Get(item)) {
      // The ranks inherit weftrun's environment anyway, so "-x NAME" only matters as a check.
      std::fprintf(stderr, "weftrun: warning: -x %s: not set in weftrun's environment\n",
                   item.c_str());
    }
  }
  // As mpirun binds by default: where a machine's ranks outnumber its CPUs, ranks that stay on
  // one CPU run in the same turns every time (the library decides, knowing the whole machine).
  if (!options.bind_to.empty()) env->Set("WEFT_BIND", options.bind_to);
  env->Set("WEFT_NRANKS", std::to_string(layout.nranks));
  env->Set("WEFT_LOCAL_NRANKS", std::to_string(layout.local_ranks.size()));
  env->Set("WEFT_ROOT_ADDR", layout.root_addr);
  env->Set("WEFT_SECRET", layout.secret);
  // When every rank runs on this machine, loopback is the right interface unless told otherwise;
  // across hosts the library chooses one that reaches the others (or -x WEFT_SOCKET_IFNAME).
  if (!layout.several_hosts && !IsSetNonEmpty(*env, "WEFT_SOCKET_IFNAME")) {
    env->Set("WEFT_SOCKET_IFNAME", "lo");
  }
}

EnvBlock RankEnvironment(const EnvBlock& job_env, int rank, int local_rank) {
  EnvBlock env = job_env;
  env.Set("WEFT_RANK", std::to_string(rank));
  env.Set("WEFT_LOCAL_RANK", std::to_string(local_rank));
  return env;
}

}  // namespace weftrun
