#!/usr/bin/env python3
"""torch CPU tensors through DLPack: the `weft` module takes objects that offer `__dlpack__`
instead of the buffer protocol, bfloat16 included.

`dlpack_test.py --nranks 2` spawns 2 ranks (tests/torch/rank_launcher.py). Each rank checks, on
torch tensors passed as they are: an in-place float32 all_reduce; a bfloat16 all_reduce and an
out-of-place all_gather; an int64 broadcast; an async all_reduce whose tensor is dropped by the
caller before wait() (the request holds it); a transposed (non-contiguous) tensor refused with
InvalidArgumentError naming the argument, the communicator still working after it. Exits 77
(skipped) when torch cannot be imported.
"""

import sys

from weft_ranks import SKIP, launch, rank_launcher, rank_parser


class CheckFailed(AssertionError):
    pass


def expect(condition, what):
    if not condition:
        raise CheckFailed(what)


def run_checks(comm, torch, weft):
    n, r = comm.size, comm.rank
    total = n * (n + 1) / 2

    t = torch.full((1000,), float(r + 1))
    comm.all_reduce(t)
    expect(bool((t == total).all()), f"float32 all_reduce gave {t[:3].tolist()}, not {total}")

    b = torch.full((64,), float(r + 1), dtype=torch.bfloat16)
    comm.all_reduce(b)
    expect(bool((b.float() == total).all()), f"bfloat16 all_reduce gave {b[:3].tolist()}")
    gathered = torch.empty(64 * n, dtype=torch.bfloat16)
    comm.all_gather(b, out=gathered)
    expect(bool((gathered.float() == total).all()), "bfloat16 all_gather")

    i = torch.arange(10, dtype=torch.int64) * (r + 1)
    comm.broadcast(i, root=0)
    expect(i.tolist() == list(range(10)), f"int64 broadcast gave {i.tolist()}")

    req = comm.all_reduce(torch.ones(1 << 16), async_op=True)  # no reference kept here
    result = req.wait()
    expect(result is not None and float(result[0]) == n, "async all_reduce of a dropped tensor")

    try:
        comm.all_reduce(torch.ones(8, 8).t())
    except weft.InvalidArgumentError as e:
        expect("x" in str(e) and "contiguous" in str(e), f"the error does not name x: {e}")
    else:
        raise CheckFailed("a transposed tensor was accepted")
    after = torch.ones(4)
    comm.all_reduce(after)
    expect(after.tolist() == [float(n)] * 4, "the communicator after a refused call")


def rank_main(args):
    rank_launcher.rank_setup(args.parent_pid)
    import torch
    import weft
    case = "init"
    try:
        comm = weft.Comm.from_env()
        case = "dlpack"
        run_checks(comm, torch, weft)
        comm.destroy()
    except BaseException as e:  # the rank must report whatever stopped it
        rank_launcher.fail_rank(args.rank, case, e)
    print(f"PASS rank {args.rank} ({case})", flush=True)
    return 0


def main():
    parser = rank_parser(__doc__, timeout=60, nranks=2)
    args = parser.parse_args()
    if args.rank is not None:
        return rank_main(args)
    try:
        import torch  # noqa: F401
    except ImportError:
        print(f"dlpack_test: SKIP: torch is not installed for {sys.executable}")
        return SKIP
    return launch(__file__, args.nranks, args.timeout, "python dlpack_test")


if __name__ == "__main__":
    sys.exit(main())
