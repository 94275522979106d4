#!/usr/bin/env python3
"""The `weft` module when a rank dies: every survivor gets an exception, promptly, never a hang.

`dead_peer_test.py --nranks N` spawns N ranks (tests/torch/rank_launcher.py). After a few
all_reduce calls and a barrier, once every survivor has reported leaving the barrier (a file in
a temporary directory), rank N-1 ends with os._exit(3) (no destroy). Each survivor then issues an
all_reduce with async_op=True that rank N-1 never joins: its Request.wait() must raise a
weft.RemoteError naming "rank N-1" within DEADLINE_S, a blocking all_reduce afterwards must raise
at once (the communicator has failed), async_error() must report it, and destroy() must return.
WEFT_TIMEOUT (set small by ctest) bounds a regression to a failure instead of a hang.
"""

import argparse
import os
import sys
import tempfile
import time

from weft_ranks import launch, numpy_or_skip, rank_launcher, rank_parser

DEADLINE_S = 2.0
DYING_EXIT = 3


class CheckFailed(AssertionError):
    pass


def expect_failure(weft, what, call, dead):
    started = time.monotonic()
    try:
        call()
    except weft.WeftError as e:
        elapsed = time.monotonic() - started
        print(f"{what}: {type(e).__name__} (code {e.code}) after {elapsed * 1e3:.1f} ms: {e}",
              flush=True)
        if elapsed > DEADLINE_S:
            raise CheckFailed(f"{what}: raised after {elapsed:.2f} s, over {DEADLINE_S} s")
        if not isinstance(e, weft.RemoteError):
            raise CheckFailed(f"{what}: {type(e).__name__}, expected RemoteError: {e}")
        if f"rank {dead}" not in str(e):
            raise CheckFailed(f"{what}: the message does not name rank {dead}: {e}")
        return elapsed
    raise CheckFailed(f"{what}: returned, although rank {dead} is dead")


def wait_for_files(paths, seconds=20):
    limit = time.monotonic() + seconds
    while not all(os.path.exists(p) for p in paths):
        if time.monotonic() > limit:
            raise CheckFailed(f"the survivors did not all report ready within {seconds} s")
        time.sleep(0.002)


def rank_main(args):
    rank_launcher.rank_setup(args.parent_pid)
    import numpy as np
    import weft
    n, dying = args.nranks, args.nranks - 1
    case = "init"
    try:
        comm = weft.Comm.from_env()
        for i in range(3):
            case = f"all_reduce {i} before the death"
            x = np.full(1000, comm.rank + 1, np.float32)
            comm.all_reduce(x)
            if not (x == n * (n + 1) // 2).all():
                raise CheckFailed(f"{case}: wrong sum {x[:4]}")
        case = "barrier before the death"
        comm.barrier()
        if comm.rank == dying:
            # Only once every survivor has left the barrier: otherwise the death could fail a
            # call that is meant to succeed.
            case = "waiting for the survivors"
            wait_for_files([os.path.join(args.ready_dir, f"ready{r}") for r in range(dying)])
            print(f"PASS rank {comm.rank}: 3 all_reduce calls, then os._exit({DYING_EXIT})",
                  flush=True)
            os._exit(DYING_EXIT)
        open(os.path.join(args.ready_dir, f"ready{comm.rank}"), "w").close()
        case = "async all_reduce that the dead rank never joins"
        req = comm.all_reduce(np.ones(1000, np.float32), async_op=True)
        first = expect_failure(weft, case, req.wait, dying)
        case = "a further all_reduce on the failed communicator"
        later = expect_failure(weft, case, lambda: comm.all_reduce(np.ones(10)), dying)
        case = "async_error"
        if not isinstance(comm.async_error(), weft.WeftError):
            raise CheckFailed(f"{case}: {comm.async_error()!r}")
        case = "destroy after the failure"
        started = time.monotonic()
        comm.destroy()
        took = time.monotonic() - started
    except BaseException as e:  # the rank must report whatever stopped it
        rank_launcher.fail_rank(args.rank, case, e)
    print(f"PASS rank {args.rank}: wait raised after {first * 1e3:.0f} ms, the next call after "
          f"{later * 1e3:.0f} ms, destroy took {took * 1e3:.0f} ms", flush=True)
    return 0


def main():
    parser = rank_parser(__doc__, timeout=30)
    parser.add_argument("--ready-dir", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.nranks < 2:
        parser.error("--nranks must be at least 2")
    if args.rank is not None:
        return rank_main(args)
    numpy_or_skip("dead_peer_test")
    with tempfile.TemporaryDirectory(prefix="weft_python_dead_peer.") as ready_dir:
        return launch(__file__, args.nranks, args.timeout,
                      f"python dead_peer_test np{args.nranks}", ["--ready-dir", ready_dir],
                      expected_exit={args.nranks - 1: DYING_EXIT})


if __name__ == "__main__":
    sys.exit(main())
