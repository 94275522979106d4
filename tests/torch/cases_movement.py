"""The data movement cases: broadcast, the all_gather family, gather / scatter, all-to-all.

A mixin on checks.Checker, run by collectives_test.py.
"""

import torch
import torch.distributed as dist

from checks import ALL_DTYPES, COUNTS, GLOO_DTYPES, dname, make


class MovementCases:
    """broadcast, all_gather*, gather, scatter, all_to_all*."""

    def broadcast(self):
        self.section("broadcast")
        for root in range(self.n):
            for dtype in ALL_DTYPES:
                # The large count once per dtype keeps the run short.
                for count in COUNTS if root == self.n - 1 else COUNTS[:-1]:
                    self.case = f"broadcast {dname(dtype)} count={count} src={root}"
                    x = make(dtype, self.shape_of(count), self.rank, self.case)
                    got = x.clone()
                    dist.broadcast(got, src=root)
                    self.expect_equal(self.case, got,
                                      make(dtype, self.shape_of(count), root, self.case))
                    if dtype in GLOO_DTYPES:
                        ref = x.clone()
                        dist.broadcast(ref, src=root, group=self.gloo)
                        self.expect_equal(self.case + " vs gloo", got, ref)
            self.case = f"broadcast transposed src={root}"
            base = make(torch.float64, (7, 9), self.rank, self.case)
            got = base.clone()
            dist.broadcast(got.t(), src=root)
            self.expect_equal(self.case, got, make(torch.float64, (7, 9), root, self.case))

    def all_gather(self):
        self.section("all_gather")
        for dtype in ALL_DTYPES:
            for count in COUNTS:
                self.case = f"all_gather {dname(dtype)} count={count}"
                shape = self.shape_of(count)
                x = make(dtype, shape, self.rank, self.case)
                outs = [torch.empty(shape, dtype=dtype) for _ in range(self.n)]
                dist.all_gather(outs, x)
                if self.gloo_moves(dtype, count):
                    refs = [torch.empty(shape, dtype=dtype) for _ in range(self.n)]
                    dist.all_gather(refs, x, group=self.gloo)
                else:
                    refs = self.inputs_of_all(dtype, shape, self.case)
                for r in range(self.n):
                    self.expect_equal(f"{self.case} tensor_list[{r}]", outs[r], refs[r])
        self.case = "all_gather transposed input and outputs"
        base = make(torch.int64, (7, 9), self.rank, self.case)
        outs = [torch.empty(9, 7, dtype=torch.int64).t() for _ in range(self.n)]
        dist.all_gather(outs, base.t().contiguous().t())
        for r, want in enumerate(self.inputs_of_all(torch.int64, (7, 9), self.case)):
            self.expect_equal(f"{self.case} tensor_list[{r}]", outs[r], want)

    def all_gather_base(self):
        # gloo in torch 1.13 has no _allgather_base: the reference is the local concatenation.
        self.section("_all_gather_base / all_gather_into_tensor")
        for dtype in ALL_DTYPES:
            for count in COUNTS:
                self.case = f"_all_gather_base {dname(dtype)} count={count}"
                x = make(dtype, (count,), self.rank, self.case)
                out = torch.empty(self.n * count, dtype=dtype)
                dist._all_gather_base(out, x)
                want = torch.cat(self.inputs_of_all(dtype, (count,), self.case))
                self.expect_equal(self.case, out, want)
        for dtype in (torch.float32, torch.uint8):
            self.case = f"all_gather_into_tensor stacked {dname(dtype)}"
            x = make(dtype, (4, 3), self.rank, self.case)
            out = torch.empty(self.n, 4, 3, dtype=dtype)
            dist.all_gather_into_tensor(out, x)
            self.expect_equal(self.case, out,
                              torch.stack(self.inputs_of_all(dtype, (4, 3), self.case)))
        self.case = "_all_gather_base non-contiguous output and input"
        x = make(torch.float32, (3, 5), self.rank, self.case)
        out = torch.empty(5, 3 * self.n).t()
        dist._all_gather_base(out, x.t().contiguous().t())
        self.expect_equal(self.case, out,
                          torch.cat(self.inputs_of_all(torch.float32, (3, 5), self.case)))

    def all_gather_coalesced(self):
        self.section("all_gather_coalesced")
        shapes = [(3,), (2, 4), (0,), (1000,)]
        for dtype in (torch.float32, torch.int64, torch.uint8, torch.float16, torch.bool,
                      torch.bfloat16):
            self.case = f"all_gather_coalesced {dname(dtype)}"
            xs = [make(dtype, s, self.rank, f"{self.case}/{i}") for i, s in enumerate(shapes)]
            outs = [[torch.empty(s, dtype=dtype) for s in shapes] for _ in range(self.n)]
            dist.all_gather_coalesced(outs, xs)
            if dtype in GLOO_DTYPES:
                refs = [[torch.empty(s, dtype=dtype) for s in shapes] for _ in range(self.n)]
                dist.all_gather_coalesced(refs, xs, group=self.gloo)
            else:
                refs = [[make(dtype, s, r, f"{self.case}/{i}") for i, s in enumerate(shapes)]
                        for r in range(self.n)]
            for r in range(self.n):
                for i in range(len(shapes)):
                    self.expect_equal(f"{self.case} output_tensor_lists[{r}][{i}]", outs[r][i],
                                      refs[r][i])

    def gather_scatter(self):
        self.section("gather / scatter")
        for root in range(self.n):
            for dtype in ALL_DTYPES:
                for count in (0, 1, 7, 1000):
                    shape = self.shape_of(count)
                    self.case = f"gather {dname(dtype)} count={count} dst={root}"
                    x = make(dtype, shape, self.rank, self.case)
                    is_root = self.rank == root
                    outs = [torch.empty(shape, dtype=dtype) for _ in range(self.n)]
                    dist.gather(x, outs if is_root else None, dst=root)
                    if self.gloo_moves(dtype, count):
                        refs = [torch.empty(shape, dtype=dtype) for _ in range(self.n)]
                        dist.gather(x, refs if is_root else None, dst=root, group=self.gloo)
                    else:
                        refs = self.inputs_of_all(dtype, shape, self.case)
                    if is_root:
                        for r in range(self.n):
                            self.expect_equal(f"{self.case} gather_list[{r}]", outs[r], refs[r])

                    self.case = f"scatter {dname(dtype)} count={count} src={root}"
                    pieces = [make(dtype, shape, root, f"{self.case}/{r}")
                              for r in range(self.n)]
                    got = torch.empty(shape, dtype=dtype)
                    dist.scatter(got, pieces if is_root else None, src=root)
                    self.expect_equal(self.case, got, pieces[self.rank])
                    if self.gloo_moves(dtype, count):
                        ref = torch.empty(shape, dtype=dtype)
                        dist.scatter(ref, pieces if is_root else None, src=root,
                                     group=self.gloo)
                        self.expect_equal(self.case + " vs gloo", got, ref)
            self.case = f"scatter transposed output src={root}"
            pieces = [make(torch.float32, (7, 9), root, f"{self.case}/{r}")
                      for r in range(self.n)]
            got = torch.empty(9, 7).t()
            dist.scatter(got, pieces if self.rank == root else None, src=root)
            self.expect_equal(self.case, got, pieces[self.rank])

    def rows_sent(self, src, dst):
        # Uneven and sometimes empty; what src sends dst is what dst expects from src.
        return (src + 2 * dst) % 3

    def all_to_all(self):
        self.section("all_to_all_single / all_to_all")
        for dtype in ALL_DTYPES:
            for count in (0, 1, 7, 1000):
                self.case = f"all_to_all_single even {dname(dtype)} rows={count}"
                x = make(dtype, (self.n * count, 3), self.rank, self.case)
                got = torch.empty_like(x)
                dist.all_to_all_single(got, x)
                if self.gloo_moves(dtype, count):
                    want = torch.empty_like(x)
                    dist.all_to_all_single(want, x, group=self.gloo)
                else:
                    want = torch.cat([t[self.rank * count:(self.rank + 1) * count] for t in
                                      self.inputs_of_all(dtype, x.shape, self.case)])
                self.expect_equal(self.case, got, want)

            self.case = f"all_to_all_single uneven {dname(dtype)}"
            in_splits = [self.rows_sent(self.rank, d) for d in range(self.n)]
            out_splits = [self.rows_sent(s, self.rank) for s in range(self.n)]
            x = make(dtype, (sum(in_splits), 5), self.rank, self.case)
            got = torch.empty(sum(out_splits), 5, dtype=dtype)
            dist.all_to_all_single(got, x, out_splits, in_splits)
            blocks = []
            for src in range(self.n):
                sent = make(dtype, (sum(self.rows_sent(src, d) for d in range(self.n)), 5), src,
                            self.case)
                start = sum(self.rows_sent(src, d) for d in range(self.rank))
                blocks.append(sent[start:start + self.rows_sent(src, self.rank)])
            self.expect_equal(self.case, got, torch.cat(blocks))
            if dtype in GLOO_DTYPES:
                ref = torch.empty_like(got)
                dist.all_to_all_single(ref, x, out_splits, in_splits, group=self.gloo)
                self.expect_equal(self.case + " vs gloo", got, ref)

        self.case = "all_to_all_single uneven, non-contiguous input and output"
        in_splits = [self.rows_sent(self.rank, d) for d in range(self.n)]
        out_splits = [self.rows_sent(s, self.rank) for s in range(self.n)]
        x = make(torch.int32, (sum(in_splits), 5), self.rank, self.case)
        got = torch.empty(5, sum(out_splits), dtype=torch.int32).t()
        dist.all_to_all_single(got, x.t().contiguous().t(), out_splits, in_splits)
        ref = torch.empty(sum(out_splits), 5, dtype=torch.int32)
        dist.all_to_all_single(ref, x, out_splits, in_splits, group=self.gloo)
        self.expect_equal(self.case, got, ref)

        # gloo in torch 1.13 has no alltoall with tensor lists: the reference is local.
        for dtype in (torch.float32, torch.int64, torch.bool, torch.bfloat16):
            self.case = f"all_to_all lists {dname(dtype)}"
            ins = [make(dtype, (self.rows_sent(self.rank, d), 2), self.rank, f"{self.case}/{d}")
                   for d in range(self.n)]
            outs = [torch.empty(self.rows_sent(s, self.rank), 2, dtype=dtype)
                    for s in range(self.n)]
            dist.all_to_all(outs, ins)
            for s in range(self.n):
                want = make(dtype, (self.rows_sent(s, self.rank), 2), s, f"{self.case}/{self.rank}")
                self.expect_equal(f"{self.case} output_tensor_list[{s}]", outs[s], want)
