#!/usr/bin/env python3
"""weft's torch.distributed backend ("weft") checked against gloo, collective by collective.

`collectives_test.py --nranks N` spawns N ranks on 127.0.0.1. Each rank initialises the default
group with backend "weft", creates a gloo group over the same ranks, and runs every collective
the backend supports on identical inputs through both groups: weft's result must equal gloo's.
Where gloo (torch 1.13) lacks an op, a dtype or a collective (AVG, bfloat16, bool,
reduce_scatter, _allgather_base, alltoall with tensor lists, ...), the reference is computed
locally instead: every input derives from a seed of (case, rank), so each rank can regenerate
every other rank's input.

Equality: inputs are small integers in every dtype, so that every SUM, PRODUCT, MIN and MAX
result is exactly representable and any reduction order gives the same bits. Floating results
are therefore compared exactly (torch.equal), like integers. The one exception is AVG on floating
types, which weft computes as sum * (1/N): it must be within 2 ulps (2 * eps of the dtype,
relative) of sum / N. Bool results are compared as bytes, so a bool holding a value other than
0 or 1 fails.

Also covered: counts 0, 1, 7, 1000 and 1 << 18; non-contiguous tensors; async Work (wait with a
timeout, is_completed, get_future); the fast path's held calls (cases_deferred.py); a new_group()
subgroup and a rank outside it; send/recv, isend/irecv and batch_isend_irecv; uneven all-to-all;
and argument errors, which must raise a RuntimeError starting "weft:" that names the argument and leave the group usable.

The parent process only launches and supervises (rank_launcher.py): a rank that fails prints
"FAIL rank R case C" and exits 1; the parent then stops the others, and kills every rank at
--timeout. The cases live in cases_reduction.py, cases_movement.py, cases_p2p.py and
cases_deferred.py, mixins on checks.Checker (inputs, references, comparisons); this script
composes them into Rank and runs them in the order of CASES.
"""

import argparse
import sys
import time
import warnings
from datetime import timedelta

import rank_launcher

# Run in this order; each names a method of one of the case mixins. Kept here rather than in the
# mixins so that the parent can check --only without importing torch.
CASES = ("allreduce_matrix", "allreduce_noncontiguous", "allreduce_coalesced", "broadcast",
         "reduce", "all_gather", "all_gather_base", "all_gather_coalesced", "gather_scatter",
         "reduce_scatter", "all_to_all", "point_to_point", "p2p_beside_collectives", "batch_p2p",
         "async_work", "deferred_calls", "subgroup", "weft_memory", "errors")


def rank_main(args):
    rank_launcher.rank_setup(args.parent_pid)
    import torch
    import torch.distributed as dist
    import weft_torch  # noqa: F401  (registers the backend)
    from cases_deferred import DeferredCases
    from cases_movement import MovementCases
    from cases_p2p import PeerCases
    from cases_reduction import ReductionCases
    from checks import Checker

    class Rank(ReductionCases, MovementCases, PeerCases, DeferredCases, Checker):
        def run_all(self, only=None):
            for name in CASES:
                if not only or name in only:
                    getattr(self, name)()
            self.section("barrier")
            dist.barrier()
            dist.barrier(group=self.gloo)

    torch.set_num_threads(1)
    # torch.distributed's deprecation notices for _all_gather_base and the like.
    warnings.filterwarnings("ignore", category=UserWarning, module="torch.distributed")

    started = time.monotonic()
    checker = None
    try:
        dist.init_process_group("weft", init_method="env://", rank=args.rank,
                                world_size=args.nranks, timeout=timedelta(seconds=60))
        gloo = dist.new_group(backend="gloo", timeout=timedelta(seconds=60))
        checker = Rank(args.rank, args.nranks, gloo)
        checker.run_all(args.only.split(",") if args.only else None)
        checker.case = "shutdown"
        dist.destroy_process_group(gloo)
        dist.destroy_process_group()
    except BaseException as e:  # SystemExit and KeyboardInterrupt too: the rank must report
        rank_launcher.fail_rank(args.rank, checker.case if checker else "init_process_group", e)
    print(f"PASS rank {args.rank}: {checker.checks} checks in "
          f"{time.monotonic() - started:.1f} s", flush=True)
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nranks", type=int, required=True)
    parser.add_argument("--timeout", type=float, default=110,
                        help="seconds before every rank is killed")
    parser.add_argument("--only", help="comma-separated cases to run (of: %s)"
                        % ", ".join(CASES))
    parser.add_argument("--rank", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--parent-pid", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.nranks < 2:
        parser.error("--nranks must be at least 2")
    unknown = set(args.only.split(",")) - set(CASES) if args.only else set()
    if unknown:
        parser.error(f"--only: no case {', '.join(sorted(unknown))}")
    if args.rank is None:
        return rank_launcher.launch(__file__, args.nranks, args.timeout, "collectives_test",
                                    ["--only", args.only] if args.only else [])
    return rank_main(args)


if __name__ == "__main__":
    sys.exit(main())
