#!/usr/bin/env python3
"""Comm.abort() from another thread releases a blocked call, and fails the pending requests.

`abort_test.py --nranks 2` spawns 2 ranks (tests/torch/rank_launcher.py). Rank 0 issues an
all_reduce with async_op=True and then a blocking all_reduce that rank 1 does not join yet; a
second thread aborts the communicator after ABORT_AFTER_S. The blocking call must raise
weft.AbortedError promptly (its wait had released the GIL, so the aborting thread could run), the
request's wait() must raise AbortedError, and a further call must raise InvalidUsageError (the
communicator is gone). Rank 1 joins later and must get a weft.WeftError, not a hang.
"""

import sys
import threading
import time

from weft_ranks import launch, numpy_or_skip, rank_launcher, rank_parser

ABORT_AFTER_S = 0.3
DEADLINE_S = 2.0


class CheckFailed(AssertionError):
    pass


def aborting_rank(comm, np, weft):
    req = comm.all_reduce(np.ones(100, np.float32), async_op=True)
    timer = threading.Timer(ABORT_AFTER_S, comm.abort)
    timer.start()
    started = time.monotonic()
    try:
        comm.all_reduce(np.ones(100, np.float32))
    except weft.AbortedError as e:
        elapsed = time.monotonic() - started
        print(f"blocking all_reduce: AbortedError after {elapsed:.2f} s: {e}")
        if elapsed > ABORT_AFTER_S + DEADLINE_S:
            raise CheckFailed(f"the blocked call was released after {elapsed:.2f} s")
    else:
        raise CheckFailed("the blocking all_reduce returned, although it was aborted")
    timer.join()
    try:
        req.wait()
    except weft.AbortedError as e:
        print(f"request: AbortedError: {e}")
    else:
        raise CheckFailed("the request of an aborted communicator completed")
    try:
        comm.barrier()
    except weft.InvalidUsageError as e:
        print(f"after abort: InvalidUsageError: {e}")
    else:
        raise CheckFailed("a call on an aborted communicator returned")


def late_rank(comm, np, weft):
    time.sleep(ABORT_AFTER_S + 1.0)
    started = time.monotonic()
    try:
        comm.all_reduce(np.ones(100, np.float32))
        comm.all_reduce(np.ones(100, np.float32))
    except weft.WeftError as e:
        print(f"late rank: {type(e).__name__} after {time.monotonic() - started:.2f} s: {e}")
    else:
        raise CheckFailed("the late rank's calls returned, although rank 0 aborted")
    comm.destroy()


def rank_main(args):
    rank_launcher.rank_setup(args.parent_pid)
    import numpy as np
    import weft
    case = "init"
    try:
        comm = weft.Comm.from_env()
        case = "abort" if comm.rank == 0 else "late rank"
        (aborting_rank if comm.rank == 0 else late_rank)(comm, np, weft)
    except BaseException as e:  # the rank must report whatever stopped it
        rank_launcher.fail_rank(args.rank, case, e)
    print(f"PASS rank {args.rank} ({case})", flush=True)
    return 0


def main():
    parser = rank_parser(__doc__, timeout=30, nranks=2)
    args = parser.parse_args()
    if args.rank is not None:
        return rank_main(args)
    if args.nranks != 2:
        parser.error("--nranks must be 2")
    numpy_or_skip("abort_test")
    return launch(__file__, 2, args.timeout, "python abort_test")


if __name__ == "__main__":
    sys.exit(main())
