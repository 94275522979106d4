"""The cases about peers, Work objects and groups rather than one collective's arithmetic.

Point-to-point (send / recv, isend / irecv, batch_isend_irecv), async Work, a new_group()
subgroup with a rank outside it, and argument errors. A mixin on checks.Checker, run by
collectives_test.py.
"""

from datetime import timedelta

import torch
import torch.distributed as dist

from checks import GLOO_DTYPES, average, make, red_op, weft_group_with


def ring_exchange(rank, send, recv, nxt, prv, group):
    """isend to nxt and irecv from prv, even ranks posting the send first; waits for both."""
    post_send = lambda: dist.isend(send, dst=nxt, group=group)  # noqa: E731
    post_recv = lambda: dist.irecv(recv, src=prv, group=group)  # noqa: E731
    order = (post_send, post_recv) if rank % 2 == 0 else (post_recv, post_send)
    for work in [post() for post in order]:
        work.wait()


class PeerCases:
    """send / recv, batch_isend_irecv, async Work, subgroup, errors."""

    def point_to_point(self):
        self.section("send / recv / isend / irecv")
        nxt, prv = (self.rank + 1) % self.n, (self.rank - 1) % self.n
        # Back to back to the same peer: weft matches them in posting order.
        messages = [(torch.float32, (7,)), (torch.int64, (1000,)), (torch.bool, (0,)),
                    (torch.float16, (1 << 18,)), (torch.uint8, (3, 4))]
        for group, name in ((None, "weft"), (self.gloo, "gloo")):
            if group is not None and any(d not in GLOO_DTYPES for d, _ in messages):
                messages = [(d, s) for d, s in messages if d in GLOO_DTYPES]
            self.case = f"send/recv ring ({name})"
            outgoing = [make(d, s, self.rank, f"p2p/{i}") for i, (d, s) in enumerate(messages)]
            incoming = [torch.empty(s, dtype=d) for d, s in messages]
            # Even ranks send first, odd ranks receive first: no cycle of blocked senders.
            for phase in ((0, 1) if self.rank % 2 == 0 else (1, 0)):
                for i in range(len(messages)):
                    if phase == 0:
                        dist.send(outgoing[i], dst=nxt, group=group)
                    else:
                        dist.recv(incoming[i], src=prv, group=group)
            for i, (d, s) in enumerate(messages):
                self.expect_equal(f"{self.case} message {i}", incoming[i],
                                  make(d, s, prv, f"p2p/{i}"))

        self.case = "send/recv non-contiguous"
        x = make(torch.float64, (5, 6), self.rank, self.case)
        got = torch.empty(6, 5, dtype=torch.float64).t()
        if self.rank % 2 == 0:
            dist.send(x.t().contiguous().t(), dst=nxt)
            dist.recv(got, src=prv)
        else:
            dist.recv(got, src=prv)
            dist.send(x.t().contiguous().t(), dst=nxt)
        self.expect_equal(self.case, got, make(torch.float64, (5, 6), prv, self.case))

        # Every rank to every other, all posted before any wait, the pairs in one global order
        # and the lower rank of each sending first.
        self.case = "isend/irecv all pairs"
        peers = [p for p in range(self.n) if p != self.rank]
        works, got = [], {}
        for a in range(self.n):
            for b in range(a + 1, self.n):
                if self.rank not in (a, b):
                    continue
                p = b if self.rank == a else a
                got[p] = torch.empty(1000, dtype=torch.int32)
                out = make(torch.int32, (1000,), self.rank, f"{self.case}/{p}")
                if self.rank == a:
                    works.append(dist.isend(out, dst=p, tag=self.rank))
                    works.append(dist.irecv(got[p], src=p, tag=p))
                else:
                    works.append(dist.irecv(got[p], src=p, tag=p))
                    works.append(dist.isend(out, dst=p, tag=self.rank))
        for w in works:
            w.wait()
        for p in peers:
            self.expect_equal(f"{self.case} from {p}", got[p],
                              make(torch.int32, (1000,), p, f"{self.case}/{self.rank}"))

        self.case = "isend/irecv ring, compared with gloo"
        x = make(torch.float32, (1 << 18,), self.rank, self.case)
        results = []
        for group in (None, self.gloo):
            r = torch.empty_like(x)
            ring_exchange(self.rank, x, r, nxt, prv, group)
            results.append(r)
        self.expect_equal(self.case, results[0], results[1])

        # Every rank posting its send first (or its receive first), as gloo allows: weft leaves
        # each send and receive outstanding, so neither waits behind the other. 4 MiB is far
        # beyond what any transport buffers.
        for first in ("isend", "irecv"):
            self.case = f"isend/irecv ring, every rank posting {first} first"
            x = make(torch.float32, (1 << 20,), self.rank, self.case)
            got = torch.empty_like(x)
            posts = [lambda: dist.isend(x, dst=nxt), lambda: dist.irecv(got, src=prv)]
            if first == "irecv":
                posts.reverse()
            works = [post() for post in posts]
            for w in works:
                w.wait(timeout=timedelta(seconds=30))
            self.expect_equal(self.case, got, make(torch.float32, (1 << 20,), prv, self.case))
        self.sanity("point to point")

    def p2p_beside_collectives(self):
        """Sends and receives left pending while collectives run on the same group.

        gloo matches point-to-point messages apart from collectives'; weft does too, since each
        group's sends and receives run on a communicator of their own (WEFT_TORCH_P2P_COMM).
        On one communicator the pending receive would catch the peer's all-reduce message.
        """
        self.section("point to point beside collectives")
        nxt, prv = (self.rank + 1) % self.n, (self.rank - 1) % self.n

        def collectives(tag):
            x = make(torch.float32, (1 << 16,), self.rank, tag)
            got = x.clone()
            dist.all_reduce(got)
            self.expect_equal(f"{self.case}: all_reduce", got,
                              self.allreduce_reference(x, "SUM", "", "sum"))
            y = make(torch.int64, (5,), self.rank, tag + "/bcast")
            root = self.n - 1
            dist.broadcast(y, src=root)
            self.expect_equal(f"{self.case}: broadcast", y,
                              make(torch.int64, (5,), root, tag + "/bcast"))
            dist.barrier()

        # Every rank's receive is posted before the collectives, its send after them.
        self.case = "irecv pending across collectives"
        got = torch.empty(1000, dtype=torch.float64)
        work = dist.irecv(got, src=prv)
        collectives(self.case)
        dist.send(make(torch.float64, (1000,), self.rank, self.case), dst=nxt)
        work.wait(timeout=timedelta(seconds=30))
        self.expect_equal(self.case, got, make(torch.float64, (1000,), prv, self.case))

        # Every rank's send (4 MiB: no transport holds it all before its receive) is posted
        # before the collectives, its receive after them.
        self.case = "isend pending across collectives"
        x = make(torch.float32, (1 << 20,), self.rank, self.case)
        work = dist.isend(x, dst=nxt)
        collectives(self.case)
        got = torch.empty_like(x)
        dist.recv(got, src=prv)
        work.wait(timeout=timedelta(seconds=30))
        self.expect_equal(self.case, got, make(torch.float32, (1 << 20,), prv, self.case))

        # A batch need not wait for the group's queued collectives: even ranks queue an
        # all-reduce (2 MiB: handed to the completion thread) and then exchange in a batch;
        # odd ranks exchange first. Behind the all-reduce, the even ranks' batches would wait
        # for odd ranks that wait in their own batches.
        self.case = "a queued all_reduce, then a batch, odd ranks the other way round"
        big = make(torch.float32, (1 << 19,), self.rank, self.case + "/big")
        gbig = big.clone()
        to_next = make(torch.float32, (50,), self.rank, self.case + "/ring")
        from_prev = torch.empty(50)

        def batch():
            ops = [dist.P2POp(dist.isend, to_next, nxt), dist.P2POp(dist.irecv, from_prev, prv)]
            for w in dist.batch_isend_irecv(ops):
                w.wait(timeout=timedelta(seconds=30))

        if self.rank % 2 == 0:
            first = dist.all_reduce(gbig, async_op=True)
            batch()
            first.wait()
        else:
            batch()
            dist.all_reduce(gbig)
        self.expect_equal(self.case + " all_reduce", gbig,
                          self.allreduce_reference(big, "SUM", "", "sum"))
        self.expect_equal(self.case + " batch", from_prev,
                          make(torch.float32, (50,), prv, self.case + "/ring"))

        # With WEFT_TORCH_P2P_COMM=0 (read when a group is created) they share the group's
        # communicator: sends and receives that do not overlap a collective still work.
        self.case = "WEFT_TORCH_P2P_COMM=0"
        shared = weft_group_with("WEFT_TORCH_P2P_COMM", "0")
        z = make(torch.float64, (9,), self.rank, self.case)
        got = torch.empty_like(z)
        ring_exchange(self.rank, z, got, nxt, prv, shared)
        self.expect_equal(self.case + " isend/irecv", got,
                          make(torch.float64, (9,), prv, self.case))
        total = z.clone()
        dist.all_reduce(total, group=shared)
        self.expect_equal(self.case + " all_reduce", total,
                          self.allreduce_reference(z, "SUM", "", "sum"))
        dist.destroy_process_group(shared)
        self.sanity("point to point beside collectives")

    def batch_p2p(self):
        self.section("batch_isend_irecv")
        nxt, prv = (self.rank + 1) % self.n, (self.rank - 1) % self.n
        results = {}
        for group, name in ((None, "weft"), (self.gloo, "gloo")):
            self.case = f"batch_isend_irecv ring both ways ({name})"
            to_next = make(torch.float32, (1000,), self.rank, "batch/next")
            to_prev = make(torch.int64, (7,), self.rank, "batch/prev")
            from_prev = torch.empty(1000)
            from_next = torch.empty(7, dtype=torch.int64)
            ops = [dist.P2POp(dist.isend, to_next, nxt, group),
                   dist.P2POp(dist.irecv, from_prev, prv, group),
                   dist.P2POp(dist.isend, to_prev, prv, group),
                   dist.P2POp(dist.irecv, from_next, nxt, group)]
            # Receives first on odd ranks: the batch must progress whatever the order.
            if self.rank % 2 == 1:
                ops = [ops[1], ops[0], ops[3], ops[2]]
            for w in dist.batch_isend_irecv(ops):
                w.wait()
            self.expect_equal(f"{self.case} from prev", from_prev,
                              make(torch.float32, (1000,), prv, "batch/next"))
            self.expect_equal(f"{self.case} from next", from_next,
                              make(torch.int64, (7,), nxt, "batch/prev"))
            results[name] = (from_prev, from_next)
        self.expect_equal("batch_isend_irecv weft vs gloo", results["weft"][0],
                          results["gloo"][0])

        self.case = "batch_isend_irecv large"
        big = make(torch.float32, (1 << 18,), self.rank, self.case)
        got = torch.empty_like(big)
        ops = [dist.P2POp(dist.irecv, got, prv), dist.P2POp(dist.isend, big, nxt)]
        for w in dist.batch_isend_irecv(ops):
            w.wait(timeout=timedelta(seconds=30))
        self.expect_equal(self.case, got, make(torch.float32, (1 << 18,), prv, self.case))
        self.sanity("batch_isend_irecv")

    def async_work(self):
        self.section("async Work")
        self.case = "all_reduce async_op=True"
        x = make(torch.float32, (1000,), self.rank, self.case)
        got = x.clone()
        work = dist.all_reduce(got, async_op=True)
        self.expect(self.case + " wait(timeout) returns True",
                    work.wait(timeout=timedelta(seconds=30)) is True)
        self.expect(self.case + " is_completed after wait", work.is_completed())
        want = self.allreduce_reference(x, "SUM", self.case, "sum")
        self.expect_equal(self.case, got, want)
        value = work.get_future().wait()
        self.expect(self.case + " future value is [tensor]",
                    isinstance(value, list) and len(value) == 1, repr(type(value)))
        self.expect_equal(self.case + " future value", value[0], want)
        self.expect(self.case + " future value is the tensor passed",
                    value[0].data_ptr() == got.data_ptr())

        self.case = "get_future().then() before completion"
        got = make(torch.float64, (7,), self.rank, self.case)
        x = got.clone()
        work = dist.all_reduce(got, op=dist.ReduceOp.MAX, async_op=True)
        chained = work.get_future().then(lambda fut: fut.value()[0] * 2)
        doubled = chained.wait()
        self.expect_equal(self.case, doubled, 2 * self.allreduce_reference(x, "MAX", "", "sum"))

        # Several calls in flight at once, waited for in reverse order.
        self.case = "several async calls, waited in reverse"
        n = self.n
        a = make(torch.int64, (1000,), self.rank, self.case + "/a")
        b = make(torch.float32, (7,), self.rank, self.case + "/b")
        c = make(torch.uint8, (300,), self.rank, self.case + "/c")
        d = make(torch.int32, (n * 5,), self.rank, self.case + "/d")
        ga, gb, gd = a.clone(), b.clone(), torch.empty_like(d)
        gc = [torch.empty_like(c) for _ in range(n)]
        works = [dist.all_reduce(ga, op=dist.ReduceOp.MIN, async_op=True),
                 dist.broadcast(gb, src=n - 1, async_op=True),
                 dist.all_gather(gc, c, async_op=True),
                 dist.all_to_all_single(gd, d, async_op=True),
                 dist.barrier(async_op=True)]
        for w in reversed(works):
            w.wait(timeout=timedelta(seconds=30))
        for w in works:
            self.expect(self.case + " is_completed", w.is_completed())
        self.expect_equal(self.case + " all_reduce", ga,
                          self.allreduce_reference(a, "MIN", "", "sum"))
        self.expect_equal(self.case + " broadcast", gb,
                          make(torch.float32, (7,), n - 1, self.case + "/b"))
        for r in range(n):
            self.expect_equal(self.case + f" all_gather[{r}]", gc[r],
                              make(torch.uint8, (300,), r, self.case + "/c"))
        ref = torch.empty_like(d)
        dist.all_to_all_single(ref, d, group=self.gloo)
        self.expect_equal(self.case + " all_to_all_single", gd, ref)

        # A wait that times out must raise and leave the call running. Rank 1 holds its send
        # back until rank 0 has seen the timeout (told through gloo, which is not blocked).
        self.case = "wait(timeout) expiring"
        flag = torch.zeros(1)
        if self.rank == 0:
            got = torch.empty(5)
            work = dist.irecv(got, src=1)
            try:
                work.wait(timeout=timedelta(milliseconds=100))
            except RuntimeError as e:
                self.expect(self.case + " message starts with 'weft:'",
                            str(e).startswith("weft:"), str(e))
            else:
                self.fail(self.case + ": wait returned before the peer sent")
            self.expect(self.case + " not completed yet", not work.is_completed())
            dist.send(flag, dst=1, group=self.gloo)
            work.wait(timeout=timedelta(seconds=30))
            self.expect(self.case + " completed later", work.is_completed())
            self.expect_equal(self.case, got, make(torch.float32, (5,), 1, self.case))
        elif self.rank == 1:
            dist.recv(flag, src=0, group=self.gloo)
            dist.send(make(torch.float32, (5,), 1, self.case), dst=0)
        self.sanity("an expired wait")

    def subgroup(self):
        self.section("new_group subgroup")
        members = list(range(self.n - 1))
        sub = dist.new_group(members)
        sub_gloo = dist.new_group(members, backend="gloo")
        self.case = f"subgroup {members}"
        if self.rank not in members:
            self.expect(self.case + ": non-member is outside",
                        sub == dist.GroupMember.NON_GROUP_MEMBER and dist.get_rank(sub) == -1)
            x = torch.arange(5.0)
            self.expect(self.case + ": all_reduce on a non-member returns None",
                        dist.all_reduce(x, group=sub) is None)
            self.expect_equal(self.case + ": non-member tensor unchanged", x, torch.arange(5.0))
        else:
            m = len(members)
            self.expect(self.case + " size and rank",
                        dist.get_world_size(sub) == m and dist.get_rank(sub) == self.rank,
                        f"size {dist.get_world_size(sub)}, rank {dist.get_rank(sub)}")
            for opname in ("SUM", "MAX", "AVG"):
                x = make(torch.float32, (1000,), self.rank, f"{self.case}/{opname}")
                got = x.clone()
                dist.all_reduce(got, op=red_op(opname), group=sub)
                ref = x.clone()
                dist.all_reduce(ref, op=red_op("SUM" if opname == "AVG" else opname),
                                group=sub_gloo)
                if opname == "AVG":
                    self.expect_close(f"{self.case} all_reduce AVG", got, average(ref, m))
                else:
                    self.expect_equal(f"{self.case} all_reduce {opname}", got, ref)
            # The last member as root: src is a global rank that torch translates.
            root = members[-1]
            x = make(torch.int64, (7,), self.rank, self.case + "/bcast")
            got, ref = x.clone(), x.clone()
            dist.broadcast(got, src=root, group=sub)
            dist.broadcast(ref, src=root, group=sub_gloo)
            self.expect_equal(self.case + f" broadcast src={root}", got, ref)
            got, ref = x.clone(), x.clone()
            dist.reduce(got, dst=root, group=sub)
            dist.reduce(ref, dst=root, group=sub_gloo)
            self.expect_equal(self.case + f" reduce dst={root}", got,
                              ref if self.rank == root else x)
            outs = [torch.empty(7, dtype=torch.int64) for _ in range(m)]
            refs = [torch.empty(7, dtype=torch.int64) for _ in range(m)]
            dist.all_gather(outs, x, group=sub)
            dist.all_gather(refs, x, group=sub_gloo)
            for r in range(m):
                self.expect_equal(self.case + f" all_gather[{r}]", outs[r], refs[r])
            y = make(torch.float32, (m * 4,), self.rank, self.case + "/a2a")
            got, ref = torch.empty_like(y), torch.empty_like(y)
            dist.all_to_all_single(got, y, group=sub)
            dist.all_to_all_single(ref, y, group=sub_gloo)
            self.expect_equal(self.case + " all_to_all_single", got, ref)
            if m > 1:
                # Peers are global ranks too.
                nxt, prv = members[(self.rank + 1) % m], members[(self.rank - 1) % m]
                z = make(torch.float64, (9,), self.rank, self.case + "/p2p")
                got = torch.empty_like(z)
                ring_exchange(self.rank, z, got, nxt, prv, sub)
                self.expect_equal(self.case + " isend/irecv", got,
                                  make(torch.float64, (9,), prv, self.case + "/p2p"))
            dist.barrier(group=sub)
        self.sanity("subgroup use")
        dist.destroy_process_group(sub_gloo)
        dist.destroy_process_group(sub)

    def errors(self):
        """Bad arguments raise at the call on every rank; the group still works afterwards."""
        self.section("errors")
        n = self.n
        x = torch.ones(4)

        def expect_error(what, call, *names, prefix="weft:"):
            self.case = f"error: {what}"
            try:
                call()
            except RuntimeError as e:
                msg = str(e)
                # torch's own errors can run to pages; the start says whose it is.
                shown = repr(msg if len(msg) < 300 else msg[:300] + "...")
                if prefix:
                    self.expect(f"{self.case}: message starts with '{prefix}'",
                                msg.startswith(prefix), shown)
                for name in names:
                    self.expect(f"{self.case}: message names '{name}'", name in msg, shown)
            else:
                self.fail(f"{self.case}: no RuntimeError raised")
            self.sanity(what)

        expect_error("all_gather with one output too many",
                     lambda: dist.all_gather([torch.empty(4) for _ in range(n + 1)], x),
                     "allgather", "outputs[0]", str(n + 1))
        expect_error("all_gather with one output too few",
                     lambda: dist.all_gather([torch.empty(4) for _ in range(n - 1)], x),
                     "allgather", "outputs[0]")
        expect_error("all_gather output of another size",
                     lambda: dist.all_gather([torch.empty(4)] * (n - 1) + [torch.empty(5)], x),
                     "allgather", f"outputs[0][{n - 1}]", "5 elements")
        expect_error("all_gather_into_tensor output of the wrong size",
                     lambda: dist.all_gather_into_tensor(torch.empty(4 * n + 1), x),
                     "_allgather_base", "output")
        expect_error("send dst out of range", lambda: dist.send(x, dst=n), "send", "dst", str(n))
        expect_error("isend dst negative", lambda: dist.isend(x, dst=-1), "send", "dst")
        expect_error("recv src out of range", lambda: dist.recv(torch.empty(4), src=n),
                     "recv", "src")
        expect_error("broadcast src out of range", lambda: dist.broadcast(x, src=n),
                     "broadcast", "rootRank")
        expect_error("reduce dst out of range", lambda: dist.reduce(x.clone(), dst=n),
                     "reduce", "rootRank")
        expect_error("gather dst out of range", lambda: dist.gather(x, None, dst=n),
                     "gather", "rootRank")
        expect_error("scatter src out of range", lambda: dist.scatter(torch.empty(4), None, src=n),
                     "scatter", "rootRank")
        expect_error("broadcast complex128",
                     lambda: dist.broadcast(torch.zeros(3, dtype=torch.complex128), src=0),
                     "broadcast", "dtype", "ComplexDouble")
        expect_error("all_reduce int16",
                     lambda: dist.all_reduce(torch.zeros(3, dtype=torch.int16)),
                     "allreduce", "dtype", "Short")
        expect_error("all_gather int16",
                     lambda: dist.all_gather([torch.empty(3, dtype=torch.int16)] * n,
                                             torch.zeros(3, dtype=torch.int16)),
                     "allgather", "dtype", "Short")
        expect_error("all_reduce BOR on float32",
                     lambda: dist.all_reduce(x.clone(), op=dist.ReduceOp.BOR),
                     "allreduce", "bitwise")
        expect_error("reduce_scatter_tensor BXOR",
                     lambda: dist.reduce_scatter_tensor(
                         torch.empty(2, dtype=torch.int32), torch.zeros(2 * n, dtype=torch.int32),
                         op=dist.ReduceOp.BXOR),
                     "reduce_scatter", "bitwise")
        expect_error("reduce_scatter with one input too many",
                     lambda: dist.reduce_scatter(torch.empty(4), [x] * (n + 1)),
                     "reduce_scatter", "inputs[0]")
        expect_error("_reduce_scatter_base input of the wrong size",
                     lambda: dist._reduce_scatter_base(torch.empty(4), torch.zeros(4 * n + 2)),
                     "_reduce_scatter_base", "input")
        expect_error("all_to_all_single splits not summing to the rows",
                     lambda: dist.all_to_all_single(torch.empty(n + 1), torch.zeros(n + 1),
                                                    [1] * n, [1] * n),
                     "alltoall_base", "split_sizes")
        expect_error("all_to_all_single with too few splits",
                     lambda: dist.all_to_all_single(torch.empty(n), torch.zeros(n),
                                                    [1] * n, [n]),
                     "alltoall_base", "input_split_sizes")
        expect_error("all_to_all with one tensor too many",
                     lambda: dist.all_to_all([torch.empty(2)] * (n + 1),
                                             [torch.zeros(2)] * (n + 1)),
                     "alltoall", "one input and one output tensor per rank")
        expect_error("all_reduce of a sparse tensor",
                     lambda: dist.all_reduce(torch.zeros(3, 3).to_sparse()),
                     "allreduce", "tensors[0]", "dense")
        # Not an argument error but a feature the backend leaves out: torch's ProcessGroup
        # raises it, so the message is torch's own.
        expect_error("recv from any source", lambda: dist.recv(torch.empty(4)),
                     "recvAnysource", prefix=None)
        expect_error("async all_reduce int16 (raised at the call)",
                     lambda: dist.all_reduce(torch.zeros(3, dtype=torch.int16), async_op=True),
                     "allreduce", "dtype")
