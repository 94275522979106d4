#include "topo/process_state.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

using weft::topo::ProcessStat;

TEST_CASE("readProcessStat tells a stopped process and keeps its start time", "[topo][process]") {
  ProcessStat self;
  REQUIRE(weft::topo::readProcessStat(getpid(), &self));
  CHECK(self.state == 'R');  // reading its own stat, it runs
  CHECK(self.startTicks == weft::topo::selfStartTicks());
  CHECK(self.startTicks > 0);

  pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    // A name with spaces and parentheses: fields must count from the last ')'.
    prctl(PR_SET_NAME, "we ft) (x y", 0, 0, 0);
    raise(SIGSTOP);
    _exit(0);
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, WUNTRACED) == child);
  REQUIRE(WIFSTOPPED(status));
  ProcessStat stopped;
  REQUIRE(weft::topo::readProcessStat(child, &stopped));
  CHECK(stopped.state == 'T');
  CHECK(weft::topo::isStopped(stopped.state));
  CHECK(stopped.startTicks >= self.startTicks);

  kill(child, SIGCONT);
  ProcessStat resumed;
  // Until it exits it may be seen running, sleeping or a zombie; never stopped, same start.
  if (weft::topo::readProcessStat(child, &resumed) && resumed.state != 'T') {
    CHECK(resumed.startTicks == stopped.startTicks);
  }
  REQUIRE(waitpid(child, &status, 0) == child);
  ProcessStat gone;
  CHECK_FALSE(weft::topo::readProcessStat(child, &gone));
  CHECK_FALSE(weft::topo::readProcessStat(-1, &gone));
}
