#!/usr/bin/env python3
"""What a torch.distributed group costs to create: dist.new_group() then its first barrier, weft
(with and without a communicator of its own for point-to-point calls) against gloo.

    PYTHONPATH=build/python /usr/bin/python3 perf/torch_group_setup.py --nprocs 4 --rounds 3

Backends, taken in turn each round: `weft` (each group splits a second communicator for its
sends and receives, the default), `weft_shared` (WEFT_TORCH_P2P_COMM=0: one communicator per
group) and `gloo`. Each round spawns --nprocs ranks on 127.0.0.1; after init and a warm-up
group, every rank creates --groups groups of every rank one after another, each followed by a
barrier on it and destroyed after; rank 0 reports the mean milliseconds per group. The table
gives the median over rounds and the spread (min-max).
"""

import argparse
import statistics
import time
from datetime import timedelta

import torch.distributed as dist
import torch.multiprocessing as mp

from torch_allreduce import free_port, init_rank  # the same script directory


def rank_main(rank, nprocs, port, backend, groups, queue):
    init_rank(rank, nprocs, port, backend, timeout=timedelta(seconds=60))
    name = "weft" if backend.startswith("weft") else backend

    def one_group():
        group = dist.new_group(backend=name)
        dist.barrier(group=group)
        dist.destroy_process_group(group)

    one_group()  # the first pays for imports and the store's first keys
    dist.barrier()
    start = time.perf_counter()
    for _ in range(groups):
        one_group()
    took = (time.perf_counter() - start) / groups
    if rank == 0:
        queue.put(took * 1e3)
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nprocs", type=int, default=4)
    parser.add_argument("--groups", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--backends", default="weft,weft_shared,gloo")
    args = parser.parse_args()
    backends = args.backends.split(",")
    context = mp.get_context("spawn")
    results = {b: [] for b in backends}
    for round_ in range(args.rounds):
        for backend in backends:
            queue = context.Queue()
            mp.spawn(rank_main, args=(args.nprocs, free_port(), backend, args.groups, queue),
                     nprocs=args.nprocs)
            results[backend].append(queue.get())
            print(f"round {round_} {backend:11s} {results[backend][-1]:8.2f} ms per group",
                  flush=True)
    print(f"median over {args.rounds} rounds, {args.nprocs} ranks (ms per group: new_group, "
          "a barrier, destroy; min-max):")
    for backend in backends:
        values = results[backend]
        print(f"  {backend:11s} {statistics.median(values):8.2f}  "
              f"({min(values):.2f}-{max(values):.2f})")


if __name__ == "__main__":
    main()
