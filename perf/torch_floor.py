#!/usr/bin/env python3
"""Blocking dist.all_reduce through torch.distributed against weft's own C call, side by side.

    PYTHONPATH=build/python /usr/bin/python3 perf/torch_floor.py --nprocs 2

For each round (--rounds, default 3) it runs, in turn: weft through torch, gloo through torch,
and all_reduce_perf -z 2 (weft's blocking C call, in place, as torch's all-reduce is). Each
times --iters back-to-back blocking calls per size (a tenth of them above 64 KiB) after a barrier
and a warm-up, as nccl-tests does, and takes rank 0's mean per call; the table gives the median
over rounds and the spread (min-max).

For weft it also splits a call into phases, timed on rank 0 in separate loops of the same
length: "dispatch" is torch.distributed's Python wrapper (dist.all_reduce against calling the
group's allreduce directly), "issue" the backend call up to the returned Work, "wait" the
Work.wait() that runs the collective. Sizes are in bytes of float32 (--sizes).
"""

import argparse
import os
import re
import socket
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def timed_loop(call, iters, warmup, barrier):
    for _ in range(warmup):
        call()
    barrier()
    start = time.perf_counter()
    for _ in range(iters):
        call()
    return (time.perf_counter() - start) / iters


def rank_main(rank, nprocs, port, backend, sizes, iters, queue):
    import torch
    import torch.distributed as dist
    if backend == "weft":
        import weft_torch  # noqa: F401  (registers the backend)
    torch.set_num_threads(1)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group(backend, rank=rank, world_size=nprocs)
    group = dist.distributed_c10d._get_default_group()
    results = {}
    for size in sizes:
        tensor = torch.ones(max(1, size // 4))
        n = max(100, iters if size <= 65536 else iters // 10)
        whole = timed_loop(lambda: dist.all_reduce(tensor), n, 20, dist.barrier)
        phases = {}
        if backend == "weft":
            opts = dist.AllreduceOptions()
            direct = timed_loop(lambda: group.allreduce([tensor], opts).wait(), n, 20,
                                dist.barrier)
            issue_total = 0.0
            wait_total = 0.0
            dist.barrier()
            for _ in range(n):
                t0 = time.perf_counter()
                work = group.allreduce([tensor], opts)
                t1 = time.perf_counter()
                work.wait()
                t2 = time.perf_counter()
                issue_total += t1 - t0
                wait_total += t2 - t1
            phases = {"dispatch": whole - direct, "issue": issue_total / n,
                      "wait": wait_total / n}
        results[size] = (whole, phases)
    if rank == 0:
        queue.put(results)
    dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_torch(backend, args, sizes):
    import torch.multiprocessing as mp
    ctx = mp.get_context("spawn")
    queue = ctx.SimpleQueue()
    mp.spawn(rank_main, args=(args.nprocs, free_port(), backend, sizes, args.iters, queue),
             nprocs=args.nprocs)
    return queue.get()


def run_c(args, sizes):
    """weft's C call: all_reduce_perf's in-place time per size, in seconds."""
    build = os.environ.get("WEFT_BUILD_DIR", os.path.join(ROOT, "build"))
    times = {}
    for size in sizes:
        n = max(100, args.iters if size <= 65536 else args.iters // 10)
        out = subprocess.run(
            [os.path.join(build, "tools", "weftrun"), "-n", str(args.nprocs),
             os.path.join(build, "perf", "all_reduce_perf"), "-b", str(size), "-e", str(size),
             "-n", str(n), "-w", "20", "-c", "0", "-z", "2"],
            check=True, capture_output=True, text=True).stdout
        for line in out.splitlines():
            fields = line.split()
            if fields and not line.startswith("#") and fields[0] == str(size):
                times[size] = float(fields[9]) * 1e-6  # in-place time (us)
    return times


def fmt(seconds):
    return f"{seconds * 1e6:.2f}" if seconds < 1e-5 else f"{seconds * 1e6:.1f}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nprocs", type=int, default=2)
    parser.add_argument("--sizes", default="4,564000")
    parser.add_argument("--iters", type=int, default=10000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    os.environ.setdefault("WEFT_SOCKET_IFNAME", "lo")
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    runs = {"weft": [], "gloo": [], "C": []}
    for r in range(args.rounds):
        runs["weft"].append(run_torch("weft", args, sizes))
        runs["gloo"].append(run_torch("gloo", args, sizes))
        runs["C"].append(run_c(args, sizes))
        for size in sizes:
            print(f"round {r + 1}: {size:>9d} B  weft {fmt(runs['weft'][-1][size][0])} us  "
                  f"gloo {fmt(runs['gloo'][-1][size][0])} us  C {fmt(runs['C'][-1][size])} us",
                  flush=True)

    def stats(values):
        return statistics.median(values), min(values), max(values)

    print(f"\n{args.nprocs} ranks, blocking dist.all_reduce of float32, {args.rounds} alternating "
          f"rounds (median, min-max, microseconds per call)\n")
    print("| bytes | weft (torch) | gloo (torch) | weft C call | weft / C | gloo / weft |")
    print("|---:|---:|---:|---:|---:|---:|")
    for size in sizes:
        w = stats([run[size][0] for run in runs["weft"]])
        g = stats([run[size][0] for run in runs["gloo"]])
        c = stats([run[size] for run in runs["C"]])
        print(f"| {size} | {fmt(w[0])} ({fmt(w[1])}-{fmt(w[2])}) | {fmt(g[0])} ({fmt(g[1])}-"
              f"{fmt(g[2])}) | {fmt(c[0])} ({fmt(c[1])}-{fmt(c[2])}) | {w[0] / c[0]:.2f} | "
              f"{g[0] / w[0]:.1f} |")
    print("\nweft's phases (rank 0, median over rounds, microseconds per call)\n")
    print("| bytes | dispatch (dist wrapper) | issue (to the Work) | wait (the collective) |")
    print("|---:|---:|---:|---:|")
    for size in sizes:
        ph = {k: statistics.median(run[size][1][k] for run in runs["weft"])
              for k in ("dispatch", "issue", "wait")}
        print(f"| {size} | {fmt(ph['dispatch'])} | {fmt(ph['issue'])} | {fmt(ph['wait'])} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
