"""The seed's two-level gradient sync (ADR-0020), the baseline that weft's DDP sync is measured
against: a DDP communication hook on gloo that sums each bucket inside each machine (reduce to
the machine's first rank), all-reduces among one process per machine, and broadcasts back inside
each machine, through new_group subgroups. As the seed's hook does, it runs synchronously inside
backward and returns a completed future.

    from two_level_hook import TwoLevelState, two_level_hook
    state = TwoLevelState(world_size)   # collective: every rank calls it, in the same order
    ddp.register_comm_hook(state, two_level_hook)

Machines are told apart by host name (the emulated cluster gives each node its own).
"""

import socket
import time

import torch
import torch.distributed as dist


class TwoLevelState:
    def __init__(self, world_size):
        hosts = [None] * world_size
        dist.all_gather_object(hosts, socket.gethostname())
        machines = sorted(set(hosts), key=hosts.index)
        members = {host: [r for r, h in enumerate(hosts) if h == host] for host in machines}
        me = dist.get_rank()
        self.world_size = world_size
        # new_group is collective over the whole job: every rank creates every group.
        self.local_group = None
        for host in machines:
            group = dist.new_group(ranks=members[host], backend="gloo")
            if me in members[host]:
                self.local_group = group
        self.local_root = members[hosts[me]][0]
        leaders = [members[host][0] for host in machines]
        leader_group = dist.new_group(ranks=leaders, backend="gloo")
        self.leader_group = leader_group if me in leaders else None
        # Timing, read by the example's step loop like its default hook's (SyncTimer).
        self.seconds = 0.0
        self.buckets = 0
        self.intervals = []  # (hook call, completion) per bucket, wall-clock seconds


def two_level_hook(state, bucket):
    start = time.perf_counter()
    called = time.time()
    tensor = bucket.buffer()
    tensor.div_(state.world_size)
    dist.reduce(tensor, dst=state.local_root, group=state.local_group)
    if state.leader_group is not None:
        dist.all_reduce(tensor, group=state.leader_group)
    dist.broadcast(tensor, src=state.local_root, group=state.local_group)
    state.seconds += time.perf_counter() - start
    state.buckets += 1
    state.intervals.append((called, time.time()))
    future = torch.futures.Future()
    future.set_result(tensor)
    return future
