"""The reduction cases: all_reduce, reduce and reduce_scatter.

all_reduce in every dtype, op and count, on non-contiguous tensors and coalesced; reduce to every
root; reduce_scatter in its list and flat forms. A mixin on checks.Checker, run by
collectives_test.py.
"""

import torch
import torch.distributed as dist

from checks import (ALL_DTYPES, ARITH_OPS, COUNTS, dname, fold, gloo_reduces, make, ops_for,
                    red_op, value_kind)


class ReductionCases:
    """all_reduce, reduce, reduce_scatter."""

    def allreduce_matrix(self):
        for dtype in ALL_DTYPES:
            self.section(f"all_reduce {dname(dtype)}")
            for opname in ops_for(dtype):
                kind = value_kind(opname)
                for count in COUNTS:
                    self.case = f"all_reduce {dname(dtype)} {opname} count={count}"
                    salt = self.case
                    x = make(dtype, self.shape_of(count), self.rank, salt, kind)
                    got = x.clone()
                    dist.all_reduce(got, op=red_op(opname))
                    want = self.allreduce_reference(x, opname, salt, kind)
                    self.expect_reduced(self.case, got, want, opname)

    def weft_memory(self):
        """Tensors from weft_torch.empty (weftMemAlloc): all_reduce, broadcast and all_gather read
        them in place where every rank's come from there; here one rank's in three does not, then
        all do, at sizes on both sides of the shared-memory direct threshold."""
        import weft_torch
        self.section("weft_torch.empty tensors")
        for mixed in (True, False):
            for count in (7, 40000, 1 << 20):
                use_weft = not (mixed and self.rank % 3 == 1)
                def alloc(n, dtype=torch.float32):
                    return weft_torch.empty(n, dtype=dtype) if use_weft else torch.empty(n, dtype=dtype)
                tag = f"count={count} {'mixed' if mixed else 'all weft'}"
                self.case = f"all_reduce weft memory {tag}"
                x = make(torch.float32, (count,), self.rank, self.case)
                got = alloc(count)
                got.copy_(x)
                dist.all_reduce(got)
                self.expect_reduced(self.case, got,
                                    self.allreduce_reference(x, "SUM", self.case, "sum"), "SUM")
                self.case = f"broadcast weft memory {tag}"
                got = alloc(count)
                got.copy_(make(torch.float32, (count,), self.rank, self.case))
                dist.broadcast(got, src=self.n - 1)
                self.expect_equal(self.case, got,
                                  make(torch.float32, (count,), self.n - 1, self.case))
                self.case = f"all_gather weft memory {tag}"
                mine = alloc(count)
                mine.copy_(make(torch.float32, (count,), self.rank, self.case))
                outs = [alloc(count) for _ in range(self.n)]
                dist.all_gather(outs, mine)
                for r in range(self.n):
                    self.expect_equal(f"{self.case} block {r}", outs[r],
                                      make(torch.float32, (count,), r, self.case))

    def allreduce_noncontiguous(self):
        self.section("all_reduce non-contiguous")
        for dtype in (torch.float32, torch.int64, torch.float16, torch.bool):
            for opname in ("SUM", "MAX", "BXOR"):
                if opname not in ops_for(dtype) or (dtype == torch.bool and opname == "SUM"):
                    continue
                kind = value_kind(opname)
                self.case = f"all_reduce {dname(dtype)} {opname} transposed"
                base = make(dtype, (7, 9), self.rank, self.case, kind)
                got = base.clone()
                view = got.t()
                assert not view.is_contiguous()
                dist.all_reduce(view, op=red_op(opname))
                want = self.allreduce_reference(base, opname, self.case, kind)
                self.expect_equal(self.case, got, want)

                # Every other column: the columns in between must stay as they were.
                self.case = f"all_reduce {dname(dtype)} {opname} strided slice"
                base = make(dtype, (6, 10), self.rank, self.case, kind)
                got = base.clone()
                dist.all_reduce(got[:, ::2], op=red_op(opname))
                want = base.clone()
                if gloo_reduces(dtype, opname):
                    want[:, ::2] = self.allreduce_reference(base[:, ::2].contiguous(), opname,
                                                            self.case, kind)
                else:
                    want[:, ::2] = fold(opname, [t[:, ::2] for t in self.inputs_of_all(
                        dtype, (6, 10), self.case, kind)], self.n)
                self.expect_equal(self.case, got, want)

    def allreduce_coalesced(self):
        self.section("all_reduce_coalesced")
        shapes = [(3,), (5, 2), (0,), (1000,)]
        for dtype in (torch.float32, torch.float64, torch.int32, torch.int64, torch.uint8,
                      torch.float16, torch.bfloat16):
            for opname in ARITH_OPS:
                kind = value_kind(opname)
                self.case = f"all_reduce_coalesced {dname(dtype)} {opname}"
                xs = [make(dtype, s, self.rank, f"{self.case}/{i}", kind)
                      for i, s in enumerate(shapes)]
                got = [x.clone() for x in xs]
                # One member is a transposed view: its result must land in the view's layout.
                got[1] = got[1].t().contiguous().t()
                assert not got[1].is_contiguous()
                dist.all_reduce_coalesced(got, op=red_op(opname))
                for i, (g, x) in enumerate(zip(got, xs)):
                    want = self.allreduce_reference(x, opname, f"{self.case}/{i}", kind)
                    self.expect_reduced(f"{self.case} tensors[{i}]", g, want, opname)

    def reduce(self):
        self.section("reduce")
        for root in range(self.n):
            for dtype in ALL_DTYPES:
                for opname in ops_for(dtype):
                    kind = value_kind(opname)
                    counts = (1, 1000, 1 << 18) if (root, dtype, opname) == (
                        0, torch.float32, "SUM") else (1, 1000)
                    for count in counts:
                        self.case = f"reduce {dname(dtype)} {opname} count={count} dst={root}"
                        x = make(dtype, self.shape_of(count), self.rank, self.case, kind)
                        got = x.clone()
                        dist.reduce(got, dst=root, op=red_op(opname))
                        if gloo_reduces(dtype, opname):
                            ref = x.clone()
                            dist.reduce(ref, dst=root, op=red_op(opname), group=self.gloo)
                            want = ref if self.rank == root else None
                        else:
                            want = fold(opname, self.inputs_of_all(dtype, x.shape, self.case,
                                                                   kind), self.n)
                        if self.rank == root:
                            self.expect_reduced(self.case, got, want, opname)
                        else:
                            # weft (like NCCL) leaves the other ranks' tensors as they were.
                            self.expect_equal(self.case + " (non-root unchanged)", got, x)
            self.case = f"reduce transposed dst={root}"
            base = make(torch.int32, (7, 9), self.rank, self.case)
            got = base.clone()
            dist.reduce(got.t(), dst=root, op=dist.ReduceOp.MAX)
            want = fold("MAX", self.inputs_of_all(torch.int32, (7, 9), self.case), self.n)
            self.expect_equal(self.case, got, want if self.rank == root else base)

    def reduce_scatter(self):
        # gloo in torch 1.13 has neither reduce_scatter nor _reduce_scatter_base: the reference
        # is the local fold of every rank's block for this rank.
        self.section("reduce_scatter / _reduce_scatter_base")
        dtypes = (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32,
                  torch.int64, torch.int8, torch.uint8)
        for dtype in dtypes:
            for opname in ARITH_OPS:
                kind = value_kind(opname)
                for count in (0, 1, 7, 1000):
                    shape = self.shape_of(count)
                    self.case = f"reduce_scatter {dname(dtype)} {opname} count={count}"
                    ins = [make(dtype, shape, self.rank, f"{self.case}/{k}", kind)
                           for k in range(self.n)]
                    got = torch.empty(shape, dtype=dtype)
                    dist.reduce_scatter(got, ins, op=red_op(opname))
                    want = fold(opname, [make(dtype, shape, r, f"{self.case}/{self.rank}", kind)
                                         for r in range(self.n)], self.n)
                    self.expect_reduced(self.case, got, want, opname)

                    self.case = f"_reduce_scatter_base {dname(dtype)} {opname} count={count}"
                    x = make(dtype, (self.n * count,), self.rank, self.case, kind)
                    got = torch.empty(count, dtype=dtype)
                    dist._reduce_scatter_base(got, x, op=red_op(opname))
                    block = slice(self.rank * count, (self.rank + 1) * count)
                    want = fold(opname, [t[block] for t in self.inputs_of_all(
                        dtype, x.shape, self.case, kind)], self.n)
                    self.expect_reduced(self.case, got, want, opname)
        for dtype in (torch.float32, torch.int32):
            self.case = f"reduce_scatter_tensor stacked large {dname(dtype)} SUM"
            count = 1 << 16
            x = make(dtype, (self.n, count), self.rank, self.case)
            got = torch.empty(count, dtype=dtype)
            dist.reduce_scatter_tensor(got, x)
            want = fold("SUM", [t[self.rank] for t in self.inputs_of_all(
                dtype, x.shape, self.case)], self.n)
            self.expect_equal(self.case, got, want)
        self.case = "reduce_scatter bool MAX/MIN"
        for opname in ("MAX", "MIN"):
            x = make(torch.bool, (self.n * 33,), self.rank, self.case + opname)
            got = torch.empty(33, dtype=torch.bool)
            dist.reduce_scatter_tensor(got, x, op=red_op(opname))
            block = slice(self.rank * 33, (self.rank + 1) * 33)
            want = fold(opname, [t[block] for t in self.inputs_of_all(
                torch.bool, x.shape, self.case + opname)], self.n)
            self.expect_equal(f"{self.case} {opname}", got, want)
