#!/usr/bin/env python3
"""torch.distributed's gloo backend on CUDA tensors: the all-reduce baseline of the GPU checks.

    torch_gloo_cuda.py [--ranks 2,4] [--min 1M] [--max 1G] [--seconds 60] [--device cpu]

Spawns each rank count's processes on this machine (rank r on GPU r % device count), all-reduces
float32 CUDA tensors (sum) from --min to --max bytes, x4 per step, and prints per size
"size count type time(us) algbw busbw" like all_reduce_perf (busbw = algbw * 2(n-1)/n).
A rank count stops at the first size that would pass the --seconds budget, so a slow machine
still finishes. --device cpu runs the same on CPU tensors (to try the harness without a GPU).
Exits 77 with "SKIP: ..." without torch, torch.distributed, gloo or a GPU.
"""
import argparse
import socket
import sys
import time

SKIP = 77


def parse_bytes(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    if text[-1:].upper() in units:
        return int(float(text[:-1]) * units[text[-1].upper()])
    return int(text)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rank_main(rank, nranks, port, sizes, budget, device, queue):
    import torch
    import torch.distributed as dist

    if device == "cuda":
        torch.cuda.set_device(rank % torch.cuda.device_count())
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=nranks)
    started = time.monotonic()
    for size in sizes:
        tensor = torch.ones(size // 4, dtype=torch.float32, device=device)
        dist.all_reduce(tensor)  # warm-up: connections, pinned buffers
        if device == "cuda":
            torch.cuda.synchronize()
        iters = 5 if size <= (64 << 20) else 2
        dist.barrier()
        start = time.perf_counter()
        for _ in range(iters):
            dist.all_reduce(tensor)
        if device == "cuda":
            torch.cuda.synchronize()
        seconds = (time.perf_counter() - start) / iters
        slowest = torch.tensor([seconds], dtype=torch.float64)
        dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
        if rank == 0:
            queue.put((size, slowest.item()))
        # The next size takes about 4 times as long; every rank must take the same decision.
        projected = time.monotonic() - started + slowest.item() * (iters + 1) * 4
        stop = torch.tensor([1 if projected > budget else 0])
        dist.all_reduce(stop, op=dist.ReduceOp.MAX)
        del tensor
        if stop.item():
            break
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", default="2,4")
    parser.add_argument("--min", default="1M")
    parser.add_argument("--max", default="1G")
    parser.add_argument("--seconds", type=float, default=60.0, help="budget per rank count")
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    args = parser.parse_args()
    try:
        import torch
        import torch.distributed as dist
        import torch.multiprocessing as mp
    except ImportError as error:
        print(f"SKIP: torch is not available ({error})")
        return SKIP
    if not dist.is_available() or not dist.is_gloo_available():
        print("SKIP: torch.distributed with gloo is not available")
        return SKIP
    if args.device == "cuda" and not torch.cuda.is_available():
        print(f"SKIP: no CUDA device for torch {torch.__version__} (torch.cuda.is_available() "
              "is False)")
        return SKIP

    sizes = []
    size = parse_bytes(args.min)
    while size <= parse_bytes(args.max):
        sizes.append(size)
        size *= 4
    context = mp.get_context("spawn")
    for nranks in [int(n) for n in args.ranks.split(",")]:
        where = f"{torch.cuda.device_count()} GPU(s)" if args.device == "cuda" else "the CPU"
        print(f"# torch {torch.__version__} gloo all_reduce, {args.device} float32 tensors, "
              f"{nranks} ranks on {where}")
        print(f"# {'size':>10}  {'count':>12}  {'type':>8}  {'time':>10}  {'algbw':>7}  "
              f"{'busbw':>7}  nranks")
        queue = context.SimpleQueue()
        port = free_port()
        procs = [context.Process(target=rank_main,
                                 args=(r, nranks, port, sizes, args.seconds, args.device, queue))
                 for r in range(nranks)]
        for p in procs:
            p.start()
        for p in procs:
            p.join()
        while not queue.empty():
            size, seconds = queue.get()
            algbw = size / seconds / 1e9
            busbw = algbw * 2 * (nranks - 1) / nranks
            print(f"  {size:>10}  {size // 4:>12}  {'float':>8}  {seconds * 1e6:>10.1f}  "
                  f"{algbw:>7.2f}  {busbw:>7.2f}  {nranks}")
        sys.stdout.flush()
        if any(p.exitcode != 0 for p in procs):
            print(f"gloo with {nranks} ranks failed (exit codes "
                  f"{[p.exitcode for p in procs]})")
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
