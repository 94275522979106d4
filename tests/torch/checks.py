"""What the collective cases share: inputs, local references and the comparisons.

Inputs are small integers in every dtype, drawn from a seed of (case, rank), so that each rank can
regenerate every other rank's input and fold the reference itself where gloo (torch 1.13) lacks
an op, a dtype or a collective; see collectives_test.py for the equality rules.

`Checker` holds one rank's state (rank, size, the gloo group, the current case and the count of
checks) with the expect_* comparisons and the references; the case modules are mixins on it.
Imported by the ranks only, after torch.
"""

import functools
import os
import zlib
from datetime import timedelta

import torch
import torch.distributed as dist

FLOATS = (torch.float32, torch.float64, torch.float16, torch.bfloat16)
INTS = (torch.int32, torch.int64, torch.int8, torch.uint8)
ALL_DTYPES = FLOATS + INTS + (torch.bool,)
# What gloo's collectives accept in torch 1.13 (no bfloat16, no bool).
GLOO_DTYPES = (torch.float32, torch.float64, torch.float16) + INTS
COUNTS = (0, 1, 7, 1000, 1 << 18)
ARITH_OPS = ("SUM", "PRODUCT", "MIN", "MAX", "AVG")
BIT_OPS = ("BAND", "BOR", "BXOR")


def weft_group_with(variable, value):
    """A new weft group of every rank, created with `variable` set to `value` (the backend reads
    its WEFT_TORCH_* variables when a group is created); the environment is restored after."""
    saved = os.environ.get(variable)
    os.environ[variable] = value
    try:
        return dist.new_group(backend="weft", timeout=timedelta(seconds=60))
    finally:
        if saved is None:
            del os.environ[variable]
        else:
            os.environ[variable] = saved


def dname(dtype):
    return str(dtype).replace("torch.", "")


def ops_for(dtype):
    if dtype == torch.bool:
        # AVG is meaningless on bool (NCCL rejects it); SUM means logical OR as in NCCL.
        return ("SUM", "PRODUCT", "MIN", "MAX") + BIT_OPS
    if dtype in FLOATS:
        return ARITH_OPS
    return ARITH_OPS + BIT_OPS


def gloo_reduces(dtype, opname):
    return dtype in GLOO_DTYPES and opname != "AVG"


def red_op(opname):
    return getattr(dist.ReduceOp, opname)


def value_kind(opname):
    if opname == "PRODUCT":
        return "product"
    if opname in BIT_OPS:
        return "bits"
    return "sum"


def value_range(dtype, kind):
    # Ranges keep every SUM / PRODUCT of up to 4 ranks exact in the dtype (bfloat16 holds
    # integers exactly up to 256, float16 up to 2048).
    if kind == "product":
        return (0, 3) if dtype == torch.uint8 else (-2, 2)
    if kind == "bits":
        return {torch.int8: (-128, 127), torch.uint8: (0, 255),
                torch.int32: (-(1 << 31), (1 << 31) - 1),
                torch.int64: (-(1 << 62), 1 << 62)}[dtype]
    if dtype in (torch.float32, torch.float64, torch.int32, torch.int64):
        return (-1000, 1000)
    if dtype == torch.uint8:
        return (0, 60)
    return (-30, 30)


def make(dtype, shape, rank, salt, kind="sum"):
    """The input of `rank` for case `salt`: the same on every rank that asks."""
    gen = torch.Generator().manual_seed(zlib.crc32(f"{salt}|{rank}".encode()))
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=gen).bool()
    lo, hi = value_range(dtype, kind)
    return torch.randint(lo, hi + 1, shape, generator=gen, dtype=torch.int64).to(dtype)


def fold(opname, tensors, nranks):
    """The reduction of `tensors` (one per rank) computed locally, exactly."""
    dtype = tensors[0].dtype
    if dtype == torch.bool:
        as_int = torch.stack([t.to(torch.uint8) for t in tensors])
        if opname in ("SUM", "MAX", "BOR"):
            return as_int.amax(0).bool()
        if opname in ("PRODUCT", "MIN", "BAND"):
            return as_int.amin(0).bool()
        return functools.reduce(torch.bitwise_xor, tensors)
    if opname in BIT_OPS:
        fn = {"BAND": torch.bitwise_and, "BOR": torch.bitwise_or, "BXOR": torch.bitwise_xor}
        return functools.reduce(fn[opname], tensors)
    wide = torch.float64 if dtype.is_floating_point else torch.int64
    stacked = torch.stack([t.to(wide) for t in tensors])
    if opname == "SUM":
        return stacked.sum(0).to(dtype)
    if opname == "PRODUCT":
        return stacked.prod(0).to(dtype)
    if opname == "MIN":
        return stacked.amin(0).to(dtype)
    if opname == "MAX":
        return stacked.amax(0).to(dtype)
    assert opname == "AVG"
    return average(stacked.sum(0).to(dtype), nranks)


def average(total, nranks):
    # weft's AVG: integers divide truncating toward zero; floating point is checked with a
    # tolerance (expect_close), so the exact quotient is the reference.
    if total.dtype.is_floating_point:
        return (total.to(torch.float64) / nranks).to(total.dtype)
    return torch.div(total.to(torch.int64), nranks, rounding_mode="trunc").to(total.dtype)


def describe(t):
    return f"{dname(t.dtype)}{list(t.shape)}"


def raw(t):
    t = t.contiguous()
    return t.view(torch.uint8) if t.dtype == torch.bool else t


def first_difference(got, want):
    g, w = raw(got).reshape(-1), raw(want).reshape(-1)
    diff = (g != w).nonzero()
    if diff.numel() == 0:
        return ""
    i = int(diff[0])
    return (f" ({int(diff.numel())} elements differ; first at flat index {i}: got "
            f"{g[i].item()}, expected {w[i].item()})")


class CheckFailed(AssertionError):
    pass


class Checker:
    """One rank's checking state; the base of collectives_test.Rank."""

    def __init__(self, rank, nranks, gloo):
        self.rank = rank
        self.n = nranks
        self.gloo = gloo
        self.case = "init"
        self.checks = 0

    # -- checking

    def fail(self, message):
        raise CheckFailed(message)

    def expect_equal(self, what, got, want):
        self.checks += 1
        if got.dtype != want.dtype or got.shape != want.shape:
            self.fail(f"{what}: got {describe(got)}, expected {describe(want)}")
        elif not torch.equal(raw(got), raw(want)):
            self.fail(f"{what}: {describe(got)} differs{first_difference(got, want)}")

    def expect_close(self, what, got, want):
        """Within 2 ulps, relative: for results that weft rounds differently (AVG)."""
        self.checks += 1
        if got.dtype != want.dtype or got.shape != want.shape:
            self.fail(f"{what}: got {describe(got)}, expected {describe(want)}")
        rtol = 2 * torch.finfo(want.dtype).eps
        g, w = got.to(torch.float64), want.to(torch.float64)
        bad = ((g - w).abs() > rtol * w.abs()).nonzero()
        if bad.numel():
            i = tuple(bad[0].tolist())
            self.fail(f"{what}: {int(bad.shape[0])} elements beyond {rtol:g} relative; first "
                      f"at {i}: got {g[i].item()!r}, expected {w[i].item()!r}")

    def expect_reduced(self, what, got, want, opname):
        if opname == "AVG" and got.dtype.is_floating_point:
            self.expect_close(what, got, want)
        else:
            self.expect_equal(what, got, want)

    def expect(self, what, condition, detail=""):
        self.checks += 1
        if not condition:
            self.fail(f"{what}{': ' + detail if detail else ''}")

    def section(self, name):
        self.case = name
        print(f"-- {name}", flush=True)

    # -- references

    @staticmethod
    def gloo_moves(dtype, numel):
        """Whether gloo can be the reference for a data-movement collective."""
        # gloo 1.13 dies of SIGFPE on an all_gather of empty tensors.
        return dtype in GLOO_DTYPES and numel > 0

    def inputs_of_all(self, dtype, shape, salt, kind="sum"):
        return [make(dtype, shape, r, salt, kind) for r in range(self.n)]

    def allreduce_reference(self, x, opname, salt, kind):
        """What every rank's all_reduce of `x` must produce: gloo's, or folded locally."""
        if gloo_reduces(x.dtype, opname):
            ref = x.clone()
            dist.all_reduce(ref, op=red_op(opname), group=self.gloo)
            return ref
        if opname == "AVG" and x.dtype in GLOO_DTYPES:
            total = x.clone()
            dist.all_reduce(total, op=dist.ReduceOp.SUM, group=self.gloo)
            return average(total, self.n)
        return fold(opname, self.inputs_of_all(x.dtype, x.shape, salt, kind), self.n)

    def sanity(self, after):
        """The group still works after an error: a plain all_reduce gives the right sum."""
        x = torch.full((7,), float(self.rank + 1))
        dist.all_reduce(x)
        self.expect_equal(f"all_reduce after {after}", x,
                          torch.full((7,), float(self.n * (self.n + 1) // 2)))

    @staticmethod
    def shape_of(count):
        return (20, 50) if count == 1000 else (count,)
