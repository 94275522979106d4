// The environment each rank starts with: weftrun's own, the -x exports, and the WEFT_* variables
// that the library's environment init reads to find its rank and the job's rendezvous point.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "launcher/launch_options.h"

namespace weftrun {

// An environment as "NAME=VALUE" strings. It keeps the order it was built in, so that a rank sees
// weftrun's environment as it was, with weftrun's additions at the end.
class EnvBlock {
 public:
  static EnvBlock FromProcess();

  std::optional<std::string> Get(std::string_view name) const;
  void Set(std::string_view name, std::string_view value);
  // A null-terminated array for execve; valid until the block is next modified.
  std::vector<char*> Pointers();

 private:
  std::vector<std::string> entries_;
};

// True for the variables weftrun sets differently for every job or rank; -x may not override
// them, since a rank with a wrong WEFT_RANK would deadlock the whole job at init.
bool IsWeftrunOwnedVariable(std::string_view name);

struct JobLayout;

// Everything the ranks of this weftrun share: its environment, the exports, WEFT_NRANKS,
// WEFT_LOCAL_NRANKS, WEFT_ROOT_ADDR, WEFT_SECRET, WEFT_BIND (LaunchOptions::bind_to),
// and WEFT_SOCKET_IFNAME=lo for one-host jobs.
void PrepareJobEnvironment(const LaunchOptions& options, const JobLayout& layout, EnvBlock* env);

// The job environment plus this rank's WEFT_RANK and WEFT_LOCAL_RANK (its index among the ranks
// of its host).
EnvBlock RankEnvironment(const EnvBlock& job_env, int rank, int local_rank);

}  // namespace weftrun
