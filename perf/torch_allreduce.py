#!/usr/bin/env python3
"""Blocking dist.all_reduce latency through torch.distributed, weft against gloo.

    PYTHONPATH=build/python /usr/bin/python3 perf/torch_allreduce.py --nprocs 4

Spawns the ranks on 127.0.0.1 for each backend in turn; for each size, 5 warm-up calls, then
30 calls each preceded by a barrier (so every call starts with all ranks present); prints rank
0's median and minimum. Sizes are float32 element counts (--counts).
"""

import argparse
import os
import socket
import statistics
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def init_rank(rank, nprocs, port, backend, **options):
    """One rank's default group on 127.0.0.1:port. `backend` is gloo, weft, or weft_shared: weft
    with WEFT_TORCH_P2P_COMM=0 (sends and receives on the group's own communicator)."""
    if backend.startswith("weft"):
        import weft_torch  # noqa: F401  (registers the backend)
        os.environ["WEFT_TORCH_P2P_COMM"] = "0" if backend == "weft_shared" else "1"
    torch.set_num_threads(1)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("weft" if backend.startswith("weft") else backend, rank=rank,
                            world_size=nprocs, **options)


def rank_main(rank, nprocs, port, backend, counts, calls):
    init_rank(rank, nprocs, port, backend)
    for count in counts:
        tensor = torch.ones(count)
        for _ in range(5):
            dist.all_reduce(tensor)
        times = []
        for _ in range(calls):
            dist.barrier()
            start = time.perf_counter()
            dist.all_reduce(tensor)
            times.append(time.perf_counter() - start)
        if rank == 0:
            print(f"{backend:5s} {count * 4:>10d} B  median {statistics.median(times) * 1e6:8.0f} us"
                  f"  min {min(times) * 1e6:8.0f} us", flush=True)
    dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nprocs", type=int, default=4)
    parser.add_argument("--counts", default="1,1024,140706,1048576")
    parser.add_argument("--calls", type=int, default=30)
    parser.add_argument("--backends", default="weft,gloo")
    args = parser.parse_args()
    counts = [int(c) for c in args.counts.split(",")]
    for backend in args.backends.split(","):
        mp.spawn(rank_main, args=(args.nprocs, free_port(), backend, counts, args.calls),
                 nprocs=args.nprocs)


if __name__ == "__main__":
    main()
