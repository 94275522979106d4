#!/usr/bin/env python3
"""DistributedDataParallel training of a small CNN over torch.distributed, on weft or gloo.

The model is the seed document's benchmark CNN (about 141k parameters, i.e. a ~563 KB gradient)
trained on synthetic 1x28x28 images in 10 classes. The data are seeded, so every run sees the
same samples; each rank trains on its own shard. Rank 0 prints its loss every step, and at the
end the mean step time, the time DDP's gradient synchronisation took per step (measured in a
communication hook that does what DDP's default hook does: from this rank's call, and from the
last rank's call, when all have joined, to the last completion), how much of that sync the
backward pass hid (with several buckets: the time an all-reduce was in flight before the last
bucket's hook call) and how much it left exposed (from the last bucket's hook call, which comes
when backward has computed every gradient, to the last completion), and the time of a plain
blocking all-reduce of a tensor the size of the gradient ("standalone all-reduce": DDP overlaps
its all-reduce with the backward pass, so the hook's figure alone says little about the link).

One command on one machine (the script spawns the ranks; ranks meet on 127.0.0.1):

    PYTHONPATH=<build>/python python3 examples/torch_ddp_cnn.py --nprocs 4 --backend weft
    python3 examples/torch_ddp_cnn.py --nprocs 4 --backend gloo

Under torchrun, or anything else that sets RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT:

    PYTHONPATH=<build>/python torchrun --nproc_per_node 4 examples/torch_ddp_cnn.py --backend weft

Options: --steps, --warmup (steps left out of the means), --batch (per rank), --lr,
--bucket-cap-mb, --hook allreduce|two_level|barrier|none (two_level: the seed's gloo hook, from
perf/; barrier: a barrier in place of each all-reduce, the step without the gradient's data;
none: no communication in the step, the compute alone),
--losses-out FILE (rank 0's losses, one repr(float) a line, for comparing backends), --json-out
FILE (the timings). Needs torch; the weft backend also needs weft_torch
(PYTHONPATH=<build>/python).
"""

import argparse
import ctypes
import datetime
import json
import os
import signal
import socket
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

NUM_CLASSES = 10
IMAGE_SHAPE = (1, 28, 28)


class SmallCNN(nn.Module):
    """conv 1->16, 16->32, 32->64 (3x3, padding 1, each followed by 2x2 max-pooling: 28 -> 14 ->
    7 -> 3), then 576 -> 200 -> 10: 140,706 parameters."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.conv3 = nn.Conv2d(32, 64, 3, padding=1)
        self.fc1 = nn.Linear(64 * 3 * 3, 200)
        self.fc2 = nn.Linear(200, NUM_CLASSES)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = F.max_pool2d(F.relu(self.conv3(x)), 2)
        x = F.relu(self.fc1(torch.flatten(x, 1)))
        return self.fc2(x)


def synthetic_shard(seed, samples, rank, world_size):
    """This rank's shard of a fixed data set: each class is a random template image, each sample
    its class's template plus noise as strong (so the loss falls over tens of steps, not at once).
    Every rank builds the whole set from the same seed and keeps every world_size-th sample, so
    the shards are disjoint and do not depend on the backend."""
    gen = torch.Generator().manual_seed(seed)
    templates = torch.randn((NUM_CLASSES,) + IMAGE_SHAPE, generator=gen)
    labels = torch.randint(NUM_CLASSES, (samples,), generator=gen)
    images = 1.0 * templates[labels] + torch.randn((samples,) + IMAGE_SHAPE, generator=gen)
    return images[rank::world_size].contiguous(), labels[rank::world_size].contiguous()


class SyncTimer:
    """State of the timing communication hook: the seconds from each bucket's hook call to the
    completion of its all-reduce, summed over the buckets of the current step. Buckets in flight
    at the same time are each counted in full, so with several buckets this can exceed the wall
    time spent synchronising."""

    def __init__(self, group, world_size):
        self.group = group
        self.world_size = world_size
        self.seconds = 0.0
        self.buckets = 0
        # Wall-clock (hook call, completion) of each bucket of the step: shared by every process
        # of one machine, so across ranks they give the sync time once all have joined.
        self.intervals = []


def overlap_split(intervals):
    """(hidden, exposed) seconds of one rank's step: the time some bucket's all-reduce was in
    flight before the last bucket's hook call (the backward pass ran meanwhile), and the time
    from that call to the last completion (backward waited)."""
    last_call = max(call for call, _ in intervals)
    exposed = max(done for _, done in intervals) - last_call
    hidden, covered_to = 0.0, float("-inf")
    for call, done in sorted(intervals):
        start, end = max(call, covered_to), min(done, last_call)
        if end > start:
            hidden += end - start
        covered_to = max(covered_to, done)
    return hidden, max(exposed, 0.0)


def timed_allreduce_hook(state, bucket):
    """DDP's default hook (average = all-reduce of the bucket divided by the world size), timed.
    The then() callback runs where the backend completes the future (gloo's and weft's worker
    threads), right when the all-reduce is done, not when DDP gets round to waiting for it."""
    start = time.perf_counter()
    called = time.time()
    tensor = bucket.buffer()
    tensor.div_(state.world_size)
    fut = dist.all_reduce(tensor, group=state.group, async_op=True).get_future()

    def done(f):
        state.seconds += time.perf_counter() - start
        state.buckets += 1
        state.intervals.append((called, time.time()))
        return f.value()[0]

    return fut.then(done)


def timed_barrier_hook(state, bucket):
    """No gradient exchange, only a barrier where the all-reduce would be: the ranks still meet
    once per bucket, so the step time with this hook is the step without the all-reduce's data,
    and the difference to the default hook's step is what the data adds (the gradients stay
    local, so the ranks' models drift apart: a timing baseline, not training)."""
    start = time.perf_counter()
    called = time.time()
    dist.barrier(group=state.group)
    state.seconds += time.perf_counter() - start
    state.buckets += 1
    state.intervals.append((called, time.time()))
    fut = torch.futures.Future()
    fut.set_result(bucket.buffer())
    return fut


def local_hook(state, bucket):
    """No communication at all: each rank keeps its own gradient. The step with this hook is the
    compute alone (forward, backward, optimizer and DDP's bookkeeping), the floor that no
    gradient sync can go below; a timing baseline, not training."""
    called = time.time()
    state.buckets += 1
    state.intervals.append((called, called))
    fut = torch.futures.Future()
    fut.set_result(bucket.buffer())
    return fut


def die_with_launcher(launcher_pid):
    # A spawned rank whose launcher was killed (a timeout, ^C) would otherwise go on until its
    # collectives time out; Linux can kill it along with the launcher instead.
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        PR_SET_PDEATHSIG = 1
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except OSError:
        return
    # Starting a rank (importing torch) takes seconds on a busy machine: the launcher may have
    # died before the request above was in place.
    if os.getppid() != launcher_pid:
        os._exit(1)


def train(rank, world_size, args):
    torch.set_num_threads(1)  # ranks share a few cores; more threads per rank only contend
    if args.backend == "weft":
        try:
            import weft_torch  # noqa: F401  (registers the backend)
        except ImportError as e:
            sys.exit(f"rank {rank}: cannot import weft_torch ({e}); set PYTHONPATH=<build>/python")
    dist.init_process_group(args.backend, init_method="env://", rank=rank, world_size=world_size,
                            timeout=datetime.timedelta(seconds=args.timeout))
    log = print if rank == 0 else (lambda *a, **k: None)

    # Equal initial weights on every rank without relying on DDP's broadcast from rank 0, so
    # runs on different backends start from the same model.
    torch.manual_seed(args.seed)
    model = SmallCNN()
    params = sum(p.numel() for p in model.parameters())
    # DDP's first bucket has a cap of its own (1 MiB), above this whole gradient; without
    # lowering it too, a smaller --bucket-cap-mb would still give one bucket.
    cap_bytes = int(args.bucket_cap_mb * 1024 * 1024)
    if hasattr(dist, "_DEFAULT_FIRST_BUCKET_BYTES"):
        dist._DEFAULT_FIRST_BUCKET_BYTES = min(dist._DEFAULT_FIRST_BUCKET_BYTES, cap_bytes)
    ddp = DDP(model, bucket_cap_mb=args.bucket_cap_mb)
    if args.hook == "two_level":
        # The seed's gloo hook, kept with the benchmarks (perf/two_level_hook.py).
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "perf"))
        from two_level_hook import TwoLevelState, two_level_hook
        timer = TwoLevelState(world_size)
        ddp.register_comm_hook(timer, two_level_hook)
    else:
        timer = SyncTimer(dist.group.WORLD, world_size)
        hook = {"barrier": timed_barrier_hook, "none": local_hook}.get(args.hook,
                                                                     timed_allreduce_hook)
        ddp.register_comm_hook(timer, hook)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=args.lr, momentum=0.9)

    images, labels = synthetic_shard(args.seed, args.samples, rank, world_size)
    if images.shape[0] < args.batch:
        sys.exit(f"rank {rank}: shard of {images.shape[0]} samples < batch {args.batch}; "
                 "raise --samples")
    batches_per_epoch = images.shape[0] // args.batch
    flat = torch.zeros(params)  # the standalone all-reduce's tensor: one gradient's worth

    log(f"backend {args.backend}, {world_size} ranks, torch {torch.__version__}; "
        f"model {params} parameters ({params * 4} bytes of float32 gradient); "
        f"batch {args.batch} per rank, {args.steps} steps, {args.warmup} warm-up")

    losses, step_s, hook_s, standalone_s, sync_window = [], [], [], [], []
    hidden_s, exposed_s, cpu_s = [], [], []
    for step in range(args.steps):
        first = (step % batches_per_epoch) * args.batch
        x, y = images[first:first + args.batch], labels[first:first + args.batch]

        timer.seconds, timer.buckets, timer.intervals = 0.0, 0, []
        start, cpu_start = time.perf_counter(), time.process_time()
        optimizer.zero_grad(set_to_none=True)
        loss = F.cross_entropy(ddp(x), y)
        loss.backward()  # returns once DDP's all-reduces are done and the gradients averaged
        optimizer.step()
        step_s.append(time.perf_counter() - start)
        cpu_s.append(time.process_time() - cpu_start)
        hook_s.append(timer.seconds)
        sync_window.append((min(call for call, _ in timer.intervals),
                            max(done for _, done in timer.intervals)))
        hidden, exposed = overlap_split(timer.intervals)
        hidden_s.append(hidden)
        exposed_s.append(exposed)

        # After the step, not inside it, so it does not inflate the step time; the ranks left
        # DDP's all-reduce together, so little of this is one rank waiting for another.
        start = time.perf_counter()
        dist.all_reduce(flat)
        standalone_s.append(time.perf_counter() - start)

        losses.append(loss.item())
        log(f"step {step:4d}  loss {losses[-1]:.6f}  step {step_s[-1] * 1e3:8.2f} ms  "
            f"sync (hook, {timer.buckets} bucket{'s' if timer.buckets != 1 else ''}) "
            f"{hook_s[-1] * 1e3:8.2f} ms  standalone all-reduce {standalone_s[-1] * 1e3:8.2f} ms")

    def mean(values):
        kept = values[args.warmup:]
        return sum(kept) / len(kept) if kept else float("nan")

    # Every rank's means, so the report shows how far the ranks differ, not only rank 0.
    mine = torch.tensor([mean(step_s), mean(hook_s), mean(standalone_s), mean(hidden_s),
                         mean(exposed_s), mean(cpu_s)], dtype=torch.float64)
    gathered = [torch.zeros_like(mine) for _ in range(world_size)]
    dist.all_gather(gathered, mine)
    per_rank = [g.tolist() for g in gathered]

    # The gradient sync proper: from the moment the last rank calls the hook (before that, the
    # others wait for its backward pass, which is compute, not communication) to the last
    # completion. Needs every rank's timestamps on one clock: ranks of one machine share it.
    windows = torch.tensor(sync_window, dtype=torch.float64)
    all_windows = [torch.zeros_like(windows) for _ in range(world_size)]
    dist.all_gather(all_windows, windows)
    stacked = torch.stack(all_windows)  # [rank, step, (first call, last done)]
    joined_s = (stacked[:, :, 1].max(dim=0).values - stacked[:, :, 0].max(dim=0).values).tolist()

    # Hidden and exposed sync: every rank's own, averaged over the ranks.
    mean_hidden = sum(r[3] for r in per_rank) / world_size
    mean_exposed = sum(r[4] for r in per_rank) / world_size
    # CPU time of each rank's process (every thread) per step, summed over the ranks: where
    # ranks outnumber cores, the step can be no shorter than this over the cores they share.
    total_cpu = sum(r[5] for r in per_rank)

    if rank == 0:
        measured = args.steps - args.warmup
        print(f"means over {measured} steps (after {args.warmup} warm-up), rank 0: "
              f"step {mean(step_s) * 1e3:.3f} ms, "
              f"gradient sync (hook) {mean(hook_s) * 1e3:.3f} ms, "
              f"gradient sync once all ranks joined {mean(joined_s) * 1e3:.3f} ms, "
              f"standalone all-reduce {mean(standalone_s) * 1e3:.3f} ms, "
              f"sync hidden by backward {mean_hidden * 1e3:.3f} ms, "
              f"exposed {mean_exposed * 1e3:.3f} ms (all ranks), "
              f"CPU time per step {total_cpu * 1e3:.3f} ms (all ranks' processes)")
        for r, (s, h, a, hid, exp, cpu) in enumerate(per_rank):
            print(f"  rank {r}: step {s * 1e3:.3f} ms, hook {h * 1e3:.3f} ms, "
                  f"standalone {a * 1e3:.3f} ms, hidden {hid * 1e3:.3f} ms, "
                  f"exposed {exp * 1e3:.3f} ms, CPU {cpu * 1e3:.3f} ms")
        if args.losses_out:
            with open(args.losses_out, "w") as f:
                f.writelines(f"{value!r}\n" for value in losses)
        if args.json_out:
            with open(args.json_out, "w") as f:
                json.dump({
                    "backend": args.backend, "hook": args.hook, "world_size": world_size,
                    "torch": torch.__version__, "parameters": params,
                    "gradient_bytes": params * 4, "batch_per_rank": args.batch,
                    "steps": args.steps, "warmup": args.warmup, "measured_steps": measured,
                    "mean_step_s": mean(step_s), "mean_hook_sync_s": mean(hook_s),
                    "mean_sync_after_all_joined_s": mean(joined_s),
                    "mean_standalone_allreduce_s": mean(standalone_s),
                    "mean_sync_hidden_s": mean_hidden, "mean_sync_exposed_s": mean_exposed,
                    "cpu_per_step_all_ranks_s": total_cpu,
                    "per_rank_means_s": [
                        {"rank": r, "step": s, "hook_sync": h, "standalone_allreduce": a,
                         "sync_hidden": hid, "sync_exposed": exp, "cpu": cpu}
                        for r, (s, h, a, hid, exp, cpu) in enumerate(per_rank)],
                    "step_s": step_s, "hook_sync_s": hook_s, "sync_after_all_joined_s": joined_s,
                    "standalone_allreduce_s": standalone_s,
                    "sync_hidden_s": hidden_s, "sync_exposed_s": exposed_s, "cpu_s": cpu_s,
                    "losses": losses,
                }, f, indent=1)
                f.write("\n")

    dist.destroy_process_group()


def spawned_rank(rank, world_size, launcher_pid, args):
    die_with_launcher(launcher_pid)
    train(rank, world_size, args)


def free_port():
    # Another process may take the port before rank 0 binds it; rare enough on a test machine.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--backend", choices=["weft", "gloo"], default="weft")
    p.add_argument("--nprocs", type=int, default=None,
                   help="spawn this many ranks here (otherwise RANK/WORLD_SIZE come from the "
                        "environment, as torchrun sets them)")
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--warmup", type=int, default=5, help="first steps left out of the means")
    p.add_argument("--batch", type=int, default=32, help="samples per rank and step")
    p.add_argument("--lr", type=float, default=0.02)
    p.add_argument("--samples", type=int, default=4096, help="size of the whole data set")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--bucket-cap-mb", type=float, default=25.0,
                   help="DDP bucket size; the default puts the whole gradient in one bucket "
                        "(after the first step, several buckets overlap with the backward pass)")
    p.add_argument("--hook", choices=["allreduce", "two_level", "barrier", "none"],
                   default="allreduce",
                   help="allreduce: DDP's default sync, timed; two_level: the seed's gloo hook "
                        "(perf/two_level_hook.py: reduce inside each machine, all-reduce among "
                        "one rank per machine, broadcast back), with --backend gloo; barrier: "
                        "a barrier in place of each all-reduce (the step without the "
                        "gradient's data, a timing baseline); none: no communication in the "
                        "step (the compute alone, a timing baseline)")
    p.add_argument("--timeout", type=float, default=120.0,
                   help="process-group timeout in seconds (WEFT_TIMEOUT, when set, wins for weft)")
    p.add_argument("--losses-out", metavar="FILE", help="rank 0's losses, one a line")
    p.add_argument("--json-out", metavar="FILE", help="the timings, as JSON")
    args = p.parse_args()
    if args.steps <= args.warmup:
        p.error("--steps must exceed --warmup")
    return args


def main():
    args = parse_args()
    if args.nprocs is not None:
        os.environ["MASTER_ADDR"] = "127.0.0.1"
        os.environ["MASTER_PORT"] = str(free_port())
        # All ranks are on this host: keep both backends on loopback unless told otherwise.
        os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
        os.environ.setdefault("WEFT_SOCKET_IFNAME", "lo")
        mp.spawn(spawned_rank, args=(args.nprocs, os.getpid(), args), nprocs=args.nprocs, join=True)
    elif "RANK" in os.environ and "WORLD_SIZE" in os.environ:
        train(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), args)
    else:
        sys.exit("no RANK/WORLD_SIZE in the environment: run under torchrun, or pass --nprocs N")


if __name__ == "__main__":
    main()
