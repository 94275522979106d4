#!/usr/bin/env python3
"""Point-to-point latency through torch.distributed: a ping-pong of send/recv (or isend/irecv
with wait) between 2 ranks, weft against gloo (and `weft_shared`: weft with
WEFT_TORCH_P2P_COMM=0, its sends and receives on the group's communicator).

    PYTHONPATH=build/python /usr/bin/python3 perf/torch_p2p.py --rounds 3

For each backend in turn (alternating, --rounds times) spawns 2 ranks on 127.0.0.1; for each
size, 20 warm-up exchanges, then --calls exchanges timed as one block; prints half the round
trip per exchange (rank 0's), and the median over the rounds at the end. Sizes are float32
element counts (--counts).
"""

import argparse
import statistics
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from torch_allreduce import free_port, init_rank  # the same script directory


def rank_main(rank, port, backend, counts, calls, nonblocking, queue):
    init_rank(rank, 2, port, backend)
    peer = 1 - rank

    def send(tensor):
        if nonblocking:
            dist.isend(tensor, dst=peer).wait()
        else:
            dist.send(tensor, dst=peer)

    def recv(tensor):
        if nonblocking:
            dist.irecv(tensor, src=peer).wait()
        else:
            dist.recv(tensor, src=peer)

    for count in counts:
        out, got = torch.ones(count), torch.empty(count)

        def exchange():
            if rank == 0:
                send(out)
                recv(got)
            else:
                recv(got)
                send(out)

        for _ in range(20):
            exchange()
        dist.barrier()
        start = time.perf_counter()
        for _ in range(calls):
            exchange()
        took = time.perf_counter() - start
        if rank == 0:
            queue.put((count, took / calls / 2 * 1e6))
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counts", default="1,1024,262144")
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--backends", default="weft,gloo")
    parser.add_argument("--nonblocking", action="store_true",
                        help="isend/irecv followed by wait() instead of send/recv")
    args = parser.parse_args()
    counts = [int(c) for c in args.counts.split(",")]
    backends = args.backends.split(",")
    context = mp.get_context("spawn")
    results = {(b, c): [] for b in backends for c in counts}
    for round_ in range(args.rounds):
        for backend in backends:
            queue = context.Queue()
            mp.spawn(rank_main, args=(free_port(), backend, counts, args.calls, args.nonblocking,
                                      queue), nprocs=2)
            for _ in counts:
                count, micros = queue.get()
                results[(backend, count)].append(micros)
                print(f"round {round_} {backend:5s} {count * 4:>9d} B  {micros:8.2f} us",
                      flush=True)
    print("median over rounds (us per one-way message):")
    for count in counts:
        row = "  ".join(f"{b} {statistics.median(results[(b, count)]):8.2f}" for b in backends)
        print(f"{count * 4:>9d} B  {row}")


if __name__ == "__main__":
    main()
