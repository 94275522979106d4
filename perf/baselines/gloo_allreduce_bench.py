"""Baseline for perf/compare.sh: torch.distributed's gloo all_reduce (float32 sum) over a size
sweep, timed like all_reduce_perf (warm-up, then back-to-back iterations, time averaged over
ranks). Prints size, time in microseconds and busbw (2(n-1)/n x bytes / time). Like
all_reduce_perf (and nccl-tests), successive calls walk through a MAX_BYTES allocation, so a size
that fits in cache is not timed from a buffer that one call leaves warm for the next.

    python3 gloo_allreduce_bench.py NRANKS MIN_BYTES MAX_BYTES ITERS WARMUP
Ranks are spawned locally and rendezvous on 127.0.0.1 (GLOO_SOCKET_IFNAME=lo)."""
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def run(rank, nranks, port, min_bytes, max_bytes, iters, warmup):
    os.environ["GLOO_SOCKET_IFNAME"] = "lo"
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=nranks)
    torch.set_num_threads(1)
    if rank == 0:
        print("# size_bytes time_us busbw_GBps", flush=True)
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
        size *= 2
    dist.destroy_process_group()


def main():
    nranks, min_bytes, max_bytes, iters, warmup = (int(a) for a in sys.argv[1:6])
    port = int(os.environ.get("GLOO_BENCH_PORT", "29611"))
    mp.spawn(run, args=(nranks, port, min_bytes, max_bytes, iters, warmup), nprocs=nranks)


if __name__ == "__main__":
    main()
