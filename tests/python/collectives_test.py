#!/usr/bin/env python3
"""The `weft` module (ctypes, no torch) at N ranks on 127.0.0.1, over numpy arrays.

`collectives_test.py --nranks N` spawns N ranks (tests/torch/rank_launcher.py) that make a
communicator with weft.Comm.from_env() and check, against values computed locally: every
collective in place and out of place over several dtypes (float16 and int8 included), the five
ops, async requests (wait, test, buffers kept alive by the request), groups of send/recv, other
buffer types (memoryview, bytearray, array.array), split, a communicator made from a unique id,
that the GIL is released while a call waits, and argument errors (named argument, communicator
still usable). Exit 77 (skip) without numpy.
"""

import array
import sys
import threading
import time

from weft_ranks import launch, numpy_or_skip, rank_launcher, rank_parser

DTYPES = ("float32", "float64", "float16", "int8", "uint8", "int32", "uint32", "int64",
          "uint64")


class CheckFailed(AssertionError):
    pass


def expect_equal(what, got, want):
    import numpy as np
    if not np.array_equal(np.asarray(got), np.asarray(want)):
        raise CheckFailed(f"{what}: got {np.asarray(got)[:8]}, want {np.asarray(want)[:8]}")


class Checks:
    def __init__(self, comm, np, weft):
        self.comm, self.np, self.weft = comm, np, weft
        self.r, self.n = comm.rank, comm.size
        self.case = "init"

    def mine(self, dtype, count=5, rank=None):
        """Rank `rank`'s input: rank+1 plus the element index (small enough for int8 sums)."""
        rank = self.r if rank is None else rank
        return (self.np.arange(count) % 3 + rank + 1).astype(dtype)

    def reduction(self, op, dtype, count=5):
        np = self.np
        inputs = [self.mine(dtype, count, r).astype(np.float64) for r in range(self.n)]
        if op == "sum":
            result = sum(inputs)
        elif op == "prod":
            result = np.prod(inputs, axis=0)
        elif op == "max":
            result = np.max(inputs, axis=0)
        elif op == "min":
            result = np.min(inputs, axis=0)
        else:
            result = sum(inputs) / self.n
            if np.dtype(dtype).kind in "iu":
                result = np.floor(result)
        return result.astype(dtype)

    def all_reduce(self):
        for dtype in DTYPES:
            self.case = f"all_reduce {dtype} in place"
            x = self.mine(dtype)
            if self.comm.all_reduce(x) is not x:
                raise CheckFailed(f"{self.case}: did not return x")
            expect_equal(self.case, x, self.reduction("sum", dtype))
            self.case = f"all_reduce {dtype} out of place"
            x, out = self.mine(dtype), self.np.zeros(5, dtype)
            self.comm.all_reduce(x, out=out)
            expect_equal(self.case, out, self.reduction("sum", dtype))
            expect_equal(self.case + " (x untouched)", x, self.mine(dtype))
        for dtype in ("float32", "int32", "float16"):
            for op in ("prod", "max", "min", "avg"):
                self.case = f"all_reduce {dtype} {op}"
                x = self.mine(dtype)
                self.comm.all_reduce(x, op=getattr(self.weft, op.upper()))
                expect_equal(self.case, x, self.reduction(op, dtype))
                y = self.mine(dtype)
                self.comm.all_reduce(y, op=op)  # the op's name works too
                expect_equal(self.case + " (by name)", y, x)

    def rooted(self):
        np, n, root = self.np, self.n, self.n - 1
        for dtype in ("float16", "int8", "float64"):
            self.case = f"broadcast {dtype} in place"
            x = self.mine(dtype)
            self.comm.broadcast(x, root=root)
            expect_equal(self.case, x, self.mine(dtype, rank=root))
            self.case = f"broadcast {dtype} out of place"
            out = np.zeros(5, dtype)
            self.comm.broadcast(self.mine(dtype), out=out, root=0)
            expect_equal(self.case, out, self.mine(dtype, rank=0))
            self.case = f"reduce {dtype} in place"
            x = self.mine(dtype)
            self.comm.reduce(x, root=root, op="max")
            want = self.reduction("max", dtype) if self.r == root else self.mine(dtype)
            expect_equal(self.case, x, want)
            self.case = f"reduce {dtype} out of place"
            out = np.zeros(5, dtype)
            self.comm.reduce(self.mine(dtype), out=out, root=0)
            if self.r == 0:
                expect_equal(self.case, out, self.reduction("sum", dtype))
            self.case = f"gather {dtype}"
            out = np.zeros(5 * n, dtype) if self.r == root else None
            got = self.comm.gather(self.mine(dtype), out=out, root=root)
            if self.r == root:
                expect_equal(self.case, got, np.concatenate(
                    [self.mine(dtype, rank=r) for r in range(n)]))
            self.case = f"scatter {dtype}"
            src = np.arange(4 * n).astype(dtype) if self.r == 0 else None
            out = np.zeros(4, dtype)
            self.comm.scatter(src, out, root=0)
            expect_equal(self.case, out, np.arange(4 * self.r, 4 * self.r + 4).astype(dtype))

    def blocks(self):
        np, n, r = self.np, self.n, self.r
        for dtype in ("float32", "int8", "float16", "uint64"):
            everyone = np.concatenate([self.mine(dtype, 3, k) for k in range(n)])
            self.case = f"all_gather {dtype} out of place"
            out = np.zeros(3 * n, dtype)
            self.comm.all_gather(self.mine(dtype, 3), out=out)
            expect_equal(self.case, out, everyone)
            self.case = f"all_gather {dtype} in place"
            x = np.zeros(3 * n, dtype)
            x[3 * r:3 * r + 3] = self.mine(dtype, 3)
            self.comm.all_gather(x)
            expect_equal(self.case, x, everyone)
            total = self.reduction("sum", dtype, 3 * n)
            self.case = f"reduce_scatter {dtype} out of place"
            out = np.zeros(3, dtype)
            self.comm.reduce_scatter(self.mine(dtype, 3 * n), out=out)
            expect_equal(self.case, out, total[3 * r:3 * r + 3])
            self.case = f"reduce_scatter {dtype} in place"
            x = self.mine(dtype, 3 * n)
            self.comm.reduce_scatter(x)
            expect_equal(self.case, x[3 * r:3 * r + 3], total[3 * r:3 * r + 3])
            # Block j of rank k's x holds 10k + j: rank r receives 10k + r from every k.
            want = np.array([10 * k + r for k in range(n) for _ in range(2)], dtype)
            self.case = f"all_to_all {dtype} out of place"
            x = np.repeat(np.arange(n) + 10 * r, 2).astype(dtype)
            out = np.zeros(2 * n, dtype)
            self.comm.all_to_all(x, out=out)
            expect_equal(self.case, out, want)
            self.case = f"all_to_all {dtype} in place"
            self.comm.all_to_all(x)
            expect_equal(self.case, x, want)

    def point_to_point(self):
        np, n, r = self.np, self.n, self.r
        self.case = "send/recv ring in a group"
        got = np.zeros(4, np.int32)
        with self.weft.group():
            # Temporaries on purpose: the group keeps their buffers until group_end.
            self.comm.send(np.full(4, r, np.int32), (r + 1) % n)
            self.comm.recv(got, (r - 1) % n)
        expect_equal(self.case, got, np.full(4, (r - 1) % n, np.int32))
        self.case = "send/recv pairs, blocking"
        if r % 2 == 0 and r + 1 < n:
            self.comm.send(np.arange(3, dtype=np.float16), r + 1)
        elif r % 2 == 1:
            x = self.comm.recv(np.zeros(3, np.float16), r - 1)
            expect_equal(self.case, x, np.arange(3, dtype=np.float16))
        self.case = "barrier"
        self.comm.barrier()

    def asynchronous(self):
        np = self.np
        self.case = "async all_reduce, wait"
        x = self.mine("float32", 100000)
        req = self.comm.all_reduce(x, async_op=True)
        if req.wait(timeout=30) is not x or not req.done:
            raise CheckFailed(f"{self.case}: wait() did not return x")
        expect_equal(self.case, x, self.reduction("sum", "float32", 100000))
        self.case = "async all_gather, test until done"
        out = np.zeros(2 * self.n, np.int64)
        req = self.comm.all_gather(np.full(2, self.r, np.int64), out=out, async_op=True)
        deadline = time.monotonic() + 30
        while not req.test():
            if time.monotonic() > deadline:
                raise CheckFailed(f"{self.case}: test() still False after 30 s")
            time.sleep(0.001)
        expect_equal(self.case, out, np.repeat(np.arange(self.n), 2))
        self.case = "async calls on dropped temporaries, then one wait"
        # The requests hold the inputs; the last one's result proves the order and the data.
        reqs = [self.comm.all_reduce(self.mine("int32", 1000), async_op=True)
                for _ in range(4)]
        out = np.zeros(1000, np.int32)
        last = self.comm.all_reduce(self.mine("int32", 1000), out=out, async_op=True)
        last.wait()
        for req in reqs:
            req.wait()
        expect_equal(self.case, out, self.reduction("sum", "int32", 1000))
        self.case = "async barrier"
        if self.comm.barrier(async_op=True).wait() is not None:
            raise CheckFailed(f"{self.case}: wait() returned something")

    def other_buffers(self):
        self.case = "array.array"
        a = array.array("d", [self.r] * 3)
        self.comm.all_reduce(a)
        if list(a) != [float(sum(range(self.n)))] * 3:
            raise CheckFailed(f"{self.case}: {list(a)}")
        self.case = "bytearray, broadcast"
        b = bytearray(b"weft" if self.r == 0 else b"....")
        self.comm.broadcast(b)
        if b != bytearray(b"weft"):
            raise CheckFailed(f"{self.case}: {b!r}")
        self.case = "memoryview of a numpy array, out of place"
        out = self.np.zeros(4, self.np.float32)
        self.comm.all_reduce(memoryview(self.np.ones(4, self.np.float32)), out=memoryview(out),
                             op="max")
        expect_equal(self.case, out, self.np.ones(4))

    def errors(self):
        np, weft = self.np, self.weft
        cases = [
            ("int16 input", lambda: self.comm.all_reduce(np.ones(4, np.int16)), "all_reduce: x"),
            ("float32 input, float64 out",
             lambda: self.comm.all_reduce(np.ones(4, np.float32), out=np.ones(4)),
             "all_reduce: out"),
            ("out too small", lambda: self.comm.all_gather(np.ones(4), out=np.ones(4)),
             "all_gather: out"),
            ("read-only out", lambda: self.comm.broadcast(np.ones(4), out=bytes(32)),
             "broadcast: out"),
            ("non-contiguous x", lambda: self.comm.all_reduce(np.ones(8)[::2]), "all_reduce: x"),
            ("x not divisible", lambda: self.comm.all_to_all(np.ones(self.n * 2 + 1)),
             "all_to_all: x"),
            ("no buffer protocol", lambda: self.comm.all_reduce([1.0, 2.0]), "all_reduce: x"),
            ("unknown op", lambda: self.comm.all_reduce(np.ones(2), op="xor"), "op 'xor'"),
            ("peer out of range (found by libweft)",
             lambda: self.comm.send(np.ones(2), self.n + 3), "peer"),
        ]
        for name, call, words in cases:
            self.case = f"error: {name}"
            try:
                call()
            except weft.InvalidArgumentError as e:
                if words not in str(e) or e.code != 4:
                    raise CheckFailed(f"{self.case}: message {e!s} does not name {words!r}")
            else:
                raise CheckFailed(f"{self.case}: no InvalidArgumentError")
        self.case = "all_reduce after the errors"
        x = self.mine("int8")
        self.comm.all_reduce(x)
        expect_equal(self.case, x, self.reduction("sum", "int8"))

    def gil_released(self):
        """While rank 0 waits in a barrier for ranks that sleep, its other thread keeps running."""
        self.case = "GIL released while a call waits"
        self.comm.barrier()  # the ranks leave it together, so the others' sleep is rank 0's wait
        if self.r != 0:
            time.sleep(0.5)
            self.comm.barrier()
            return
        ticks, stop = [0], threading.Event()

        def spin():
            while not stop.is_set():
                ticks[0] += 1

        thread = threading.Thread(target=spin)
        thread.start()
        time.sleep(0.05)
        before = ticks[0]
        started = time.monotonic()
        self.comm.barrier()
        waited = time.monotonic() - started
        during = ticks[0] - before
        stop.set()
        thread.join()
        print(f"barrier waited {waited:.2f} s; the other thread counted {during} meanwhile")
        if waited < 0.25 or during < 1000:
            raise CheckFailed(f"{self.case}: waited {waited:.2f} s, other thread counted "
                              f"only {during}")

    def comms(self):
        np, weft = self.np, self.weft
        self.case = "split by parity"
        sub = self.comm.split(self.r % 2)
        with sub:
            members = [k for k in range(self.n) if k % 2 == self.r % 2]
            if sub.size != len(members) or sub.rank != members.index(self.r):
                raise CheckFailed(f"{self.case}: rank {sub.rank} of {sub.size}")
            x = np.full(2, self.r, np.int64)
            sub.all_reduce(x)
            expect_equal(self.case, x, np.full(2, sum(members)))
        self.case = "split with color None"
        if self.comm.split(None if self.r == 0 else 1) is not None and self.r == 0:
            raise CheckFailed(f"{self.case}: rank 0 got a communicator")
        self.case = "init_rank from a unique id broadcast over the first communicator"
        uid = bytearray(weft.get_unique_id() if self.r == 0 else weft.UNIQUE_ID_BYTES)
        self.comm.broadcast(uid)
        with weft.Comm.init_rank(self.n, bytes(uid), self.r) as other:
            x = np.ones(3, np.float16)
            other.all_reduce(x)
            expect_equal(self.case, x, np.full(3, self.n))

    def run(self):
        for step in (self.all_reduce, self.rooted, self.blocks, self.point_to_point,
                     self.asynchronous, self.other_buffers, self.errors, self.gil_released,
                     self.comms):
            step()


def rank_main(args):
    rank_launcher.rank_setup(args.parent_pid)
    import numpy as np
    import weft
    checks = None
    try:
        comm = weft.Comm.from_env()
        checks = Checks(comm, np, weft)
        started = time.monotonic()
        checks.run()
        checks.case = "destroy"
        comm.destroy()
    except BaseException as e:  # the rank must report whatever stopped it
        rank_launcher.fail_rank(args.rank, checks.case if checks else "init", e)
    print(f"PASS rank {args.rank}: weft {weft.version()} ({weft.library_path()}), every check in "
          f"{time.monotonic() - started:.1f} s", flush=True)
    return 0


def main():
    parser = rank_parser(__doc__, timeout=60)
    args = parser.parse_args()
    if args.rank is not None:
        return rank_main(args)
    numpy_or_skip("collectives_test")
    return launch(__file__, args.nranks, args.timeout,
                                f"python collectives_test np{args.nranks}")


if __name__ == "__main__":
    sys.exit(main())
