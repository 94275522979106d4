"""Baseline for perf/compare.sh: torch.distributed's gloo all_reduce (float32 sum) over a size
sweep, timed like all_reduce_perf (warm-up, then back-to-back iterations, time averaged over
ranks). Prints size, time in microseconds and busbw (2(n-1)/n x bytes / time). Like
all_reduce_perf (and nccl-tests), successive calls walk through a MAX_BYTES allocation, so a size
that fits in cache is not timed from a buffer that one call leaves warm for the next.

    python3 gloo_allreduce_bench.py NRANKS MIN_BYTES MAX_BYTES ITERS WARMUP [FACTOR [MIN_BYTES
                                    MAX_BYTES ITERS WARMUP FACTOR]...]
FACTOR (default 2) is the step between sizes, like all_reduce_perf -f. Further groups of five
run further sweeps in the same job (no second start-up of torch on every rank).
Ranks are spawned locally and rendezvous on 127.0.0.1 (GLOO_SOCKET_IFNAME=lo).

Started once per rank by a launcher instead (torchrun's variables RANK, WORLD_SIZE, MASTER_ADDR
and MASTER_PORT all set, as tests/cluster/cluster.sh runs it in perf/seed_bench.sh), the process
is that one rank: it rendezvous at tcp://MASTER_ADDR:MASTER_PORT and leaves GLOO_SOCKET_IFNAME
to the environment. NRANKS must then equal WORLD_SIZE."""
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def sweep(rank, nranks, min_bytes, max_bytes, iters, warmup, factor):
    whole = torch.ones(max(1, max_bytes // 4), dtype=torch.float32)
    size = min_bytes
    while size <= max_bytes:
        count = max(1, size // 4)
        steps = max(1, whole.numel() // count)
        views = [whole[count * (i % steps):count * (i % steps + 1)] for i in range(min(steps, iters))]
        for i in range(warmup):
            dist.all_reduce(views[i % len(views)])
        dist.barrier()
        start = time.perf_counter()
        for i in range(iters):
            dist.all_reduce(views[i % len(views)])
        elapsed = torch.tensor([(time.perf_counter() - start) / iters], dtype=torch.float64)
        dist.all_reduce(elapsed)
        seconds = elapsed.item() / nranks
        busbw = size / seconds / 1e9 * 2 * (nranks - 1) / nranks
        if rank == 0:
            print(f"{size} {seconds * 1e6:.2f} {busbw:.3f}", flush=True)
        size *= factor


def run(rank, nranks, init_method, sweeps):
    if init_method.startswith("tcp://127.0.0.1:"):
        os.environ["GLOO_SOCKET_IFNAME"] = "lo"
    dist.init_process_group("gloo", init_method=init_method, rank=rank, world_size=nranks)
    torch.set_num_threads(1)
    if rank == 0:
        print("# size_bytes time_us busbw_GBps", flush=True)
    for min_bytes, max_bytes, iters, warmup, factor in sweeps:
        sweep(rank, nranks, min_bytes, max_bytes, iters, warmup, factor)
    dist.destroy_process_group()


def launched_rank():
    """This process's rank when a launcher started one process per rank, else None."""
    names = ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
    if not all(name in os.environ for name in names):
        return None
    return int(os.environ["RANK"])


def parse_sweeps(args):
    """MIN MAX ITERS WARMUP [FACTOR [MIN MAX ITERS WARMUP FACTOR]...] -> list of 5-tuples."""
    numbers = [int(a) for a in args]
    if len(numbers) < 4 or (len(numbers) > 5 and len(numbers) % 5 != 0):
        sys.exit(__doc__)
    if len(numbers) == 4:
        numbers.append(2)
    return [(lo, hi, iters, warmup, max(2, factor))
            for lo, hi, iters, warmup, factor in zip(*[iter(numbers)] * 5)]


def main():
    if len(sys.argv) < 6:
        sys.exit(__doc__)
    nranks = int(sys.argv[1])
    sweeps = parse_sweeps(sys.argv[2:])
    rank = launched_rank()
    if rank is not None:
        if int(os.environ["WORLD_SIZE"]) != nranks:
            sys.exit(f"NRANKS={nranks} but WORLD_SIZE={os.environ['WORLD_SIZE']}")
        run(rank, nranks, f"tcp://{os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}", sweeps)
        return
    port = int(os.environ.get("GLOO_BENCH_PORT", "29611"))
    mp.spawn(run, args=(nranks, f"tcp://127.0.0.1:{port}", sweeps), nprocs=nranks)


if __name__ == "__main__":
    main()
