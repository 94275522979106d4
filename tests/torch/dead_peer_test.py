#!/usr/bin/env python3
"""weft's torch.distributed backend when a rank dies: the survivors must get an error, promptly.

`dead_peer_test.py --nranks N` spawns N ranks on 127.0.0.1 (rank_launcher.py) that initialise
the default group with backend "weft" and run a few all_reduce calls; then the last rank, N-1,
ends with os._exit(3): no goodbye, no destroy_process_group. The launcher counts that exit as
the dying rank's success; any survivor failure, or a run past --timeout, fails the test. Four
scenarios, each a run of its own (a group fails only once):

  dead    rank N-1 is gone (reaped) before the survivors call all_reduce;
  dying   the survivors are in all_reduce, or about to be, when rank N-1 exits;
  async   the survivors issue all_reduce(async_op=True), then rank N-1 exits: the Work's wait()
          must raise, and so must its get_future().wait();
  recv    the survivors post irecv(src=N-1), which waits on the group's point-to-point
          communicator, then rank N-1 exits: the Work's wait() must raise.

`--scenario` picks some; the default runs all four in turn, each with its own --timeout.

In each, every survivor's failing call (on a 1000-element tensor; in async, wait() and then the
future's wait()) must raise a RuntimeError whose message starts with "weft:" and names
"rank N-1", within DEADLINE_S of the call; a further
all_reduce on the same group must then raise a RuntimeError starting "weft:" within DEADLINE_S
too, the group having failed. The bound is generous: this checks liveness (an error instead of a
hang until WEFT_TIMEOUT), not how fast a death is noticed. The survivors then destroy the group
and exit normally, which must not hang either.

Rank N-1 exits only once every survivor has finished the all_reduce calls before it (told
through the default group's TCPStore, which rank 0 hosts): otherwise its exit could break a call
that is meant to succeed.
"""

import argparse
import os
import sys
import time
from datetime import timedelta

import rank_launcher

SCENARIOS = ("dead", "dying", "async", "recv")
DEADLINE_S = 2.0
DYING_EXIT = 3


class CheckFailed(AssertionError):
    pass


def wait_until_gone(pid, seconds):
    """Until `pid` has exited (a zombie, or reaped by the launcher)."""
    limit = time.monotonic() + seconds
    while time.monotonic() < limit:
        try:
            with open(f"/proc/{pid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return
        if state in ("Z", "X"):
            return
        time.sleep(0.005)
    raise CheckFailed(f"pid {pid} still running {seconds} s after it should have exited")


class Survivor:
    def __init__(self, rank, nranks, dist, torch):
        self.rank = rank
        self.dead = nranks - 1
        self.dist = dist
        self.torch = torch
        self.case = "init"
        self.times = []

    def tensor(self):
        return self.torch.ones(1000)

    def expect_failure(self, what, call, started=None):
        """`call` must raise a RuntimeError from weft naming the dead rank, within DEADLINE_S
        of `started` (the call itself by default). Returns the message."""
        self.case = what
        started = time.monotonic() if started is None else started
        try:
            call()
        except RuntimeError as e:
            elapsed = time.monotonic() - started
            msg = str(e)
        else:
            raise CheckFailed(f"{what}: returned, although rank {self.dead} is dead")
        print(f"{what}: RuntimeError after {elapsed * 1e3:.1f} ms: {msg}", flush=True)
        self.times.append(f"{what} {elapsed * 1e3:.1f} ms")
        if not msg.startswith("weft:"):
            raise CheckFailed(f"{what}: message does not start with 'weft:': {msg!r}")
        if elapsed > DEADLINE_S:
            raise CheckFailed(f"{what}: raised after {elapsed:.2f} s, over {DEADLINE_S} s")
        return msg

    def expect_names_dead_rank(self, what, msg):
        if f"rank {self.dead}" not in msg:
            raise CheckFailed(f"{what}: message does not name 'rank {self.dead}': {msg!r}")

    def first_failure(self, scenario, store):
        dist = self.dist
        x = self.tensor()
        if scenario == "async":
            work = dist.all_reduce(x, async_op=True)
            store.set(f"ready{self.rank}", "1")
            what = "Work.wait() of an all_reduce issued before the death"
            self.expect_names_dead_rank(what, self.expect_failure(what, work.wait))
            # The future carries the same error: torch rethrows it as it was set.
            what = "Work.get_future().wait() of the same all_reduce"
            future = work.get_future()
            self.expect_names_dead_rank(what, self.expect_failure(what, future.wait))
            return
        if scenario == "recv":
            work = dist.irecv(x, src=self.dead)
            store.set(f"ready{self.rank}", "1")
            what = f"Work.wait() of an irecv from rank {self.dead}, which dies"
            self.expect_names_dead_rank(what, self.expect_failure(what, work.wait))
            return
        store.set(f"ready{self.rank}", "1")
        if scenario == "dead":
            self.case = "waiting for rank N-1 to exit"
            wait_until_gone(int(store.get("dying_pid")), 20)
        what = f"all_reduce with rank {self.dead} {scenario}"
        self.expect_names_dead_rank(what, self.expect_failure(what, lambda: dist.all_reduce(x)))

    def run(self, scenario, store):
        self.first_failure(scenario, store)
        # The group has failed: a further call must not wait for the dead rank either.
        self.expect_failure("a further all_reduce on the failed group",
                            lambda: self.dist.all_reduce(self.tensor()))
        # Python holds no reference to the failed calls' tensors any more: the backend's
        # completer may drop the last one while destroy waits for it, which needs the GIL
        # that destroy was called with (it must let go of it while waiting).
        self.case = "destroy_process_group after the failure"
        started = time.monotonic()
        self.dist.destroy_process_group()
        self.times.append(f"destroy {(time.monotonic() - started) * 1e3:.1f} ms")


def rank_main(args):
    rank_launcher.rank_setup(args.parent_pid)
    import torch
    import torch.distributed as dist
    import weft_torch  # noqa: F401  (registers the backend)
    torch.set_num_threads(1)

    n, dying = args.nranks, args.nranks - 1
    case = "init_process_group"
    try:
        dist.init_process_group("weft", init_method="env://", rank=args.rank, world_size=n,
                                timeout=timedelta(seconds=60))
        store = dist.distributed_c10d._get_default_store()
        for i in range(3):
            case = f"all_reduce {i} before the death"
            x = torch.full((1000,), float(args.rank + 1))
            dist.all_reduce(x)
            if not torch.equal(x, torch.full((1000,), float(n * (n + 1) // 2))):
                raise CheckFailed(f"{case}: wrong sum {x[:4].tolist()}...")
        if args.rank == dying:
            case = "waiting for the survivors"
            store.set("dying_pid", str(os.getpid()))
            store.wait([f"ready{r}" for r in range(dying)], timedelta(seconds=30))
            print(f"PASS rank {args.rank}: 3 all_reduce calls, then os._exit({DYING_EXIT}) "
                  f"({args.scenario})", flush=True)
            os._exit(DYING_EXIT)
        survivor = Survivor(args.rank, n, dist, torch)
        try:
            survivor.run(args.scenario, store)
        finally:
            case = survivor.case
    except BaseException as e:  # SystemExit and KeyboardInterrupt too: the rank must report
        rank_launcher.fail_rank(args.rank, f"{args.scenario}: {case}", e)
    print(f"PASS rank {args.rank} ({args.scenario}): {'; '.join(survivor.times)}", flush=True)
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nranks", type=int, required=True)
    parser.add_argument("--timeout", type=float, default=15,
                        help="seconds before every rank is killed, per scenario")
    parser.add_argument("--scenario", default=",".join(SCENARIOS),
                        help="comma-separated scenarios to run in turn (of: %s)"
                        % ", ".join(SCENARIOS))
    parser.add_argument("--rank", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--parent-pid", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.nranks < 2:
        parser.error("--nranks must be at least 2")
    scenarios = args.scenario.split(",")
    unknown = set(scenarios) - set(SCENARIOS)
    if unknown:
        parser.error(f"--scenario: no scenario {', '.join(sorted(unknown))}")
    if args.rank is not None:
        if len(scenarios) != 1:
            parser.error("a rank runs one scenario")
        return rank_main(args)
    failed = []
    for scenario in scenarios:
        print(f"-- scenario {scenario}", flush=True)
        if rank_launcher.launch(__file__, args.nranks, args.timeout,
                                f"dead_peer_test {scenario}", ["--scenario", scenario],
                                expected_exit={args.nranks - 1: DYING_EXIT}):
            failed.append(scenario)
    if failed:
        print(f"dead_peer_test: failed: {', '.join(failed)}")
        return 1
    print(f"dead_peer_test: {args.nranks} ranks, scenarios {', '.join(scenarios)} passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
