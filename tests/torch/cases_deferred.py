"""How the backend runs calls (bindings/torch/csrc/weft_work.h): a small collective issued while
nothing else is outstanding is held until its Work is waited on, then runs on the waiting
thread; other calls are run in order by the group's completer thread, or by a waiter whose call
is next. These cases check that a held call behaves as any async call must (it progresses while
its issuer does something else, keeps its place in the order of calls, completes when polled or
chained on), that a batch issued on the calling thread stays behind the calls handed over
before it, and that the queued path (WEFT_TORCH_DEFER_BYTES=0) gives the same results.
"""

import time
from datetime import timedelta

import torch
import torch.distributed as dist

from checks import make, weft_group_with


class DeferredCases:
    def deferred_calls(self):
        self.section("deferred calls (the fast path)")
        n = self.n

        # Rank 0 does not wait on its call until rank 1 tells it (through gloo) that its own
        # wait returned; rank 1's wait can only return if rank 0's call ran meanwhile.
        self.case = "an async call progresses while its issuer waits on something else"
        x = make(torch.float32, (100,), self.rank, self.case)
        got = x.clone()
        work = dist.all_reduce(got, async_op=True)
        flag = torch.zeros(1)
        if self.rank == 0:
            dist.recv(flag, src=1, group=self.gloo)
        else:
            work.wait(timeout=timedelta(seconds=30))
            if self.rank == 1:
                dist.send(flag, dst=0, group=self.gloo)
        work.wait()
        self.expect_equal(self.case, got, self.allreduce_reference(x, "SUM", "", "sum"))

        self.case = "polling is_completed() until done"
        got = make(torch.int32, (9,), self.rank, self.case)
        x = got.clone()
        work = dist.all_reduce(got, op=dist.ReduceOp.MAX, async_op=True)
        deadline = time.monotonic() + 30
        while not work.is_completed():
            if time.monotonic() > deadline:
                self.fail(self.case + ": not completed after 30 s of polling")
            time.sleep(0.001)
        self.expect_equal(self.case, got, self.allreduce_reference(x, "MAX", "", "sum"))

        self.case = "a future chained on without a wait"
        got = make(torch.float64, (5,), self.rank, self.case)
        x = got.clone()
        fut = dist.all_reduce(got, async_op=True).get_future().then(lambda f: f.value()[0] + 1)
        deadline = time.monotonic() + 30
        while not fut.done():
            if time.monotonic() > deadline:
                self.fail(self.case + ": the future was not done after 30 s")
            time.sleep(0.001)
        self.expect_equal(self.case, fut.value(), self.allreduce_reference(x, "SUM", "", "sum") + 1)

        # The second call issues the held first one before itself; waiting on the second first
        # must not reorder them (the ranks would disagree on which all-reduce is which).
        self.case = "a held call, then a blocking one, then its wait"
        a = make(torch.float32, (33,), self.rank, self.case + "/a")
        b = make(torch.float32, (33,), self.rank, self.case + "/b")
        ga, gb = a.clone(), b.clone()
        first = dist.all_reduce(ga, async_op=True)
        dist.all_reduce(gb, op=dist.ReduceOp.MIN)
        first.wait()
        self.expect_equal(self.case + " (first)", ga, self.allreduce_reference(a, "SUM", "", "sum"))
        self.expect_equal(self.case + " (second)", gb,
                          self.allreduce_reference(b, "MIN", "", "sum"))

        self.case = "a held broadcast and a large queued all-reduce, waited in reverse"
        c = make(torch.float32, (2,), n - 1, self.case + "/c") if self.rank == n - 1 \
            else torch.zeros(2)
        big = make(torch.float32, (1 << 19,), self.rank, self.case + "/big")  # 2 MiB: queued
        gbig = big.clone()
        works = [dist.broadcast(c, src=n - 1, async_op=True), dist.all_reduce(gbig, async_op=True)]
        for w in reversed(works):
            w.wait()
        self.expect_equal(self.case + " broadcast", c, make(torch.float32, (2,), n - 1,
                                                           self.case + "/c"))
        self.expect_equal(self.case + " all_reduce", gbig,
                          self.allreduce_reference(big, "SUM", "", "sum"))

        # A batch is issued on the calling thread, so it must wait until the completer has run
        # what was handed to it before (else weft would see the batch first on some ranks).
        self.case = "a queued call, then a batch issued on the calling thread"
        nxt, prv = (self.rank + 1) % n, (self.rank - 1) % n
        big = make(torch.float32, (1 << 19,), self.rank, self.case + "/big")
        gbig = big.clone()
        first = dist.all_reduce(gbig, async_op=True)
        to_next = make(torch.float32, (50,), self.rank, self.case + "/ring")
        from_prev = torch.empty(50)
        ops = [dist.P2POp(dist.isend, to_next, nxt), dist.P2POp(dist.irecv, from_prev, prv)]
        if self.rank % 2 == 1:
            ops.reverse()
        for w in dist.batch_isend_irecv(ops):
            w.wait()
        first.wait()
        self.expect_equal(self.case + " all_reduce", gbig,
                          self.allreduce_reference(big, "SUM", "", "sum"))
        self.expect_equal(self.case + " batch", from_prev,
                          make(torch.float32, (50,), prv, self.case + "/ring"))

        # A future's callback runs on the completer thread. If it issues a batch while another
        # call waits in the queue behind, that call can only run on this same thread.
        self.case = "a future's callback issuing a batch, with a call queued behind"
        a = make(torch.float32, (1 << 19,), self.rank, self.case + "/a")
        b = make(torch.float32, (1 << 19,), self.rank, self.case + "/b")
        ga, gb = a.clone(), b.clone()
        to_next = make(torch.float32, (20,), self.rank, self.case + "/ring")
        from_prev = torch.empty(20)

        def exchange(fut):
            ops = [dist.P2POp(dist.isend, to_next, nxt), dist.P2POp(dist.irecv, from_prev, prv)]
            if self.rank % 2 == 1:
                ops.reverse()
            for w in dist.batch_isend_irecv(ops):
                w.wait()
            return fut.value()

        # Both calls are issued before the callback is attached, so every rank's weft sees the
        # two all-reduces and then the batch, wherever the callback runs.
        first = dist.all_reduce(ga, async_op=True)
        second = dist.all_reduce(gb, async_op=True)
        chained = first.get_future().then(exchange)
        chained.wait()
        second.wait()
        self.expect_equal(self.case + " first", ga, self.allreduce_reference(a, "SUM", "", "sum"))
        self.expect_equal(self.case + " second", gb,
                          self.allreduce_reference(b, "SUM", "", "sum"))
        self.expect_equal(self.case + " batch", from_prev,
                          make(torch.float32, (20,), prv, self.case + "/ring"))

        # The last reference to a group can be dropped on its completer thread: here a future's
        # callback holds the group, and nothing else does by the time the call completes (rank
        # 0 joins late). The thread cannot wait for itself; it must finish and clean up.
        self.case = "a group whose last reference goes with a future's callback"
        doomed = dist.new_group(backend="weft", timeout=timedelta(seconds=60))
        big = make(torch.float32, (1 << 19,), self.rank, self.case)
        if self.rank == 0:
            time.sleep(0.3)
        work = dist.all_reduce(big, group=doomed, async_op=True)
        work.get_future().then(lambda fut, group=doomed: group.size())
        dist.destroy_process_group(doomed)
        del doomed, work
        dist.barrier(group=self.gloo)  # every rank's call has completed by now, or is completing

        # The same calls on a group that queues every call (read when the group is created).
        self.case = "WEFT_TORCH_DEFER_BYTES=0: every call queued"
        queued = weft_group_with("WEFT_TORCH_DEFER_BYTES", "0")
        for count in (1, 1000):
            x = make(torch.float32, (count,), self.rank, self.case + str(count))
            got = x.clone()
            dist.all_reduce(got, group=queued)
            self.expect_equal(f"{self.case} count={count}", got,
                              self.allreduce_reference(x, "SUM", "", "sum"))
        work = dist.barrier(group=queued, async_op=True)
        work.wait()
        self.expect(self.case + " barrier completed", work.is_completed())
        dist.destroy_process_group(queued)
        self.sanity("the deferred calls")
