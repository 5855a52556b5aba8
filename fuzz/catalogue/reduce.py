"""Op family: reduce. Reductions over axes (sum, prod, mean, max, min, std, variance, median),
argmax/argmin, the scans cumsum/cumprod, and collapse_sum_to/like.

Also the shared helpers of the accumulating families (reduce, linalg, sort): bounds on dims
and reduction lengths, axis sampling, and the low-precision accumulation budget.

Semantics followed here, from TVM 0.27's legalization (relax/transform/legalize_ops/):
* integer mean divides the sum by the count with C (truncating) division; variance is
  mean((x - mean(x, keepdims))**2) with that integer mean. Integer std is expected as
  trunc(sqrt(variance)) in the input dtype, the only value its integer type can hold.
* median is the lower median (the element at (n - 1) // 2 of the stable ascending sort); with
  one axis it returns (values, int64 indices into that axis), with axis=None only values.
* argmax/argmin pick the first occurrence of ties.

Known TVM 0.27 bugs these specs reach on purpose, at rate KNOWN_BUG_P where marked (*) (legal
by Relax's own type inference):
* (*) std on integer tensors returns a float32 tensor at run time (type says the int dtype);
  integer mean and variance return int64 (the count they divide by is int64). The values
  agree, so one-op checks pass, but a consumer that checks argument types fails to build
  (mean of int32 then cumprod: "Argument 0 type mismatch: expected ... int32, given int64").
* (*) median: with axis=None and keepdims on rank != 1 it returns shape (1,) (type: () or all
  ones); with several axes, or axis=[], type and run-time value disagree (tuple vs tensor);
  bfloat16 median sorts garbage (contrib sort does not handle bfloat16, see sort.py).
* argmax/argmin on a 0-d tensor: "Cannot reduce a 0 dim Tensor" at build; on bfloat16:
  a StructuralEqual check fails at build.
* argmax/argmin return -1 where every element along the axis is the dtype's minimum
  (maximum for argmin): the reducer starts from (-1, min_value) and only replaces on a strict
  comparison. Valid programs reach it with uint8 zeros.
Not sampled (refused by TVM with an explicit error, not a wrong answer): bool inputs to
max/min/argmax/argmin ("Cannot decide min_value"), bool cumsum/cumprod without a dtype,
int8/uint8/bool median ("Unsupported input dtype"); duplicate axes (near-valid only).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from .. import dims as D
from ..model import TensorTy, TupleTy
from .spec import (DEFAULT_TOL, FLOATS, INTS, NUMERIC, OpSpec, Value, cast, f64, is_float,
                   norm_axis, within)

INF = math.inf
SYM_MAX = 8          # fuzz.inputs binds symbolic dims to at most 8
BIG_DIM = 1 << 20    # bound for a dim expression that is not monotone in its variables

# --- shared helpers ------------------------------------------------------------------------
_NON_MONOTONE = re.compile(r"(-|//)\s*[A-Za-z_(]|%")


def dim_hi(d) -> int:
    """An upper bound on a dim's run-time value."""
    if isinstance(d, int):
        return d
    if _NON_MONOTONE.search(d):
        return BIG_DIM
    return D.evaluate(d, {v: SYM_MAX for v in D.free_vars(d)})


def dim_lo(d) -> int:
    """A lower bound on a dim's run-time value (symbolic variables are at least 1)."""
    if isinstance(d, int):
        return d
    if _NON_MONOTONE.search(d):
        return 0
    return max(0, D.evaluate(d, {v: 1 for v in D.free_vars(d)}))


def count_range(dims) -> tuple[int, int]:
    """(min, max) of the number of elements spanned by ``dims``."""
    return math.prod(dim_lo(d) for d in dims), math.prod(dim_hi(d) for d in dims)


def mag(v: Value) -> float:
    return max(abs(v.lo), abs(v.hi))


def finite(v: Value) -> bool:
    return within(v.dtype, v.lo, v.hi)


def exact_if_float(v: Value) -> bool:
    """Discontinuous ops see float inputs only when they are exactly known."""
    return v.exact or not is_float(v.dtype)


def scale(lo: float, hi: float, cmin: int, cmax: int) -> tuple[float, float]:
    """Bounds of a sum of c terms each in [lo, hi], c in [cmin, cmax]."""
    ends = [c * x for c in (cmin, cmax) for x in (lo, hi)]
    return min(ends), max(ends)


def power_bound(m: float, cmax: int) -> float:
    """Bound on |product| of up to cmax terms of magnitude <= m (empty product: 1)."""
    if m <= 1:
        return 1.0
    try:
        return m ** cmax
    except OverflowError:
        return INF


# float16/bfloat16 reductions accumulate in their own precision, rounding every partial
# result, so the error grows with (length x magnitude of the terms) while the reference
# rounds once. Measured on TVM 0.27 llvm (sum, cumsum, matmul; length x term magnitude at
# the budget, mixed-sign and same-sign terms): the worst atol needed beside the default rtol
# was 0.026 (float16) and 0.083 (bfloat16); LOWP_TOL adds a margin. Beyond the budget the
# comparison would be noise, so samplers keep low-precision reductions inside it.
LOWP_BUDGET = {"float16": 128, "bfloat16": 48}
LOWP_TOL = dict(DEFAULT_TOL, float16=(1e-2, 4e-2), bfloat16=(3e-2, 1e-1))


# A product's relative error grows with its length (about length x unit roundoff): keep it
# under the default rtol.
PROD_MAX_LEN = {"float16": 16, "bfloat16": 6}


# A scan has an output per partial sum, and some of them sit near zero after cancellation
# while carrying the rounding of everything before: even float32 then needs an atol that
# grows with the length (measured: 1.6e-5 at 512 terms of U(-2, 2), 4.6e-5 at 2048).
SCAN_BUDGET = dict(LOWP_BUDGET, float32=4096)
SCAN_TOL = dict(LOWP_TOL, float32=(1e-4, 1e-4))


def lowp_ok(dtype: str, length: int, magnitude: float, budgets=LOWP_BUDGET) -> bool:
    budget = budgets.get(dtype)
    return budget is None or length * magnitude <= budget


def lowp_prod_ok(dtype: str, length: int) -> bool:
    return length <= PROD_MAX_LEN.get(dtype, length)


# Inputs and attributes that trigger a known TVM bug (listed in the module docstrings) are
# sampled at this rate: the bug stays reachable without drowning the op's other paths.
KNOWN_BUG_P = 0.1


def rarely(ctx, dtypes, rare) -> tuple:
    """``dtypes`` with the ``rare`` ones dropped, except with probability KNOWN_BUG_P."""
    return tuple(dtypes) if ctx.ch.boolean(KNOWN_BUG_P) else \
        tuple(d for d in dtypes if d not in rare)


def sample_axis(ctx, rank: int, single: bool = False):
    """None, an int, or a list of distinct ints (some negative) for a rank-``rank`` input.
    ``single``: None or one int only."""
    if rank == 0 or ctx.ch.boolean(0.2):
        return None
    if single or ctx.ch.boolean(0.35):
        a = ctx.ch.integer(0, rank - 1)
        return a - rank if ctx.ch.boolean(0.4) else a
    if ctx.ch.boolean(0.05):
        return []
    axes = ctx.ch.sample(range(rank), ctx.ch.integer(1, rank))
    return [a - rank if ctx.ch.boolean(0.4) else a for a in axes]


def axes_of(axis, rank: int) -> list[int]:
    """The normalized, sorted reduced axes."""
    if axis is None:
        return list(range(rank))
    if isinstance(axis, int):
        axis = [axis]
    return sorted(norm_axis(a, rank) for a in axis)


def reduced_shape(shape, axes, keepdims: bool) -> list:
    if keepdims:
        return [1 if i in axes else d for i, d in enumerate(shape)]
    return [d for i, d in enumerate(shape) if i not in axes]


def dtype_name(x: np.ndarray) -> str:
    return "bfloat16" if "bfloat16" in str(x.dtype) else str(x.dtype)


def trunc_div(s: np.ndarray, n: int) -> np.ndarray:
    """C integer division (TVM's ``/`` on integers)."""
    s = np.asarray(s, dtype=np.int64)
    return np.sign(s) * (np.abs(s) // n)


# --- reductions over axes ------------------------------------------------------------------
@dataclass
class Reduce(OpSpec):
    """relax.<kind>(x, axis, keepdims)."""

    kind: str = "sum"      # sum, prod, mean, max, min, variance, std
    dtypes: tuple = NUMERIC

    def _nonempty(self) -> bool:
        return self.kind not in ("sum", "prod")

    def sample(self, ctx):
        zero_ok = not self._nonempty() and ctx.ch.boolean(0.1)
        dtypes = rarely(ctx, self.dtypes, INTS) if self.kind == "std" else self.dtypes
        x = ctx.pick(dtypes=dtypes, pred=finite, min_dim=0 if zero_ok else 1)
        axis = sample_axis(ctx, x.rank)
        axes = axes_of(axis, x.rank)
        dims = [x.shape[a] for a in axes]
        cmin, cmax = count_range(dims)
        if self._nonempty() and cmin < 1:
            return None
        dt, k = x.dtype, self.kind
        # mean, variance and std sum first, too: the sum (of squared deviations) must stay
        # inside the dtype and, in float16/bfloat16, inside the accumulation budget (past it
        # the partial sums stop absorbing small terms and the mean drifts).
        terms = (x.hi - x.lo) ** 2 if k in ("variance", "std") else mag(x)
        if k not in ("prod", "max", "min") and not lowp_ok(dt, cmax, terms):
            return None
        if k == "prod" and not lowp_prod_ok(dt, cmax):
            return None
        if k in ("mean", "variance", "std") and not within(
                dt, *scale(min(x.lo, 0), max(x.hi, terms if k != "mean" else 0), cmin, cmax)):
            return None
        return [x], {"axis": axis, "keepdims": ctx.ch.boolean(0.3)}

    def infer(self, tys, attrs):
        t = tys[0]
        axes = axes_of(attrs["axis"], t.rank)
        return TensorTy(reduced_shape(t.shape, axes, attrs["keepdims"]), t.dtype)

    def interval(self, ins, attrs, out):
        x = ins[0]
        cmin, cmax = count_range([x.shape[a] for a in axes_of(attrs["axis"], x.rank)])
        k = self.kind
        if k == "sum":
            return scale(x.lo, x.hi, cmin, cmax)
        if k == "prod":
            b = power_bound(mag(x), cmax)
            return (0.0 if x.lo >= 0 else -b, b)
        if k in ("mean", "max", "min"):
            return (x.lo, x.hi)
        width = x.hi - x.lo
        if not is_float(x.dtype):   # integer deviations from a truncated mean
            return (0, width * width if k == "variance" else width)
        half = width / 2 * 1.01      # rounding may nudge past the exact bound
        return (0.0, half * half if k == "variance" else half)

    def exact(self, ins, attrs, out):
        return super().exact(ins, attrs, out) or (self.kind in ("max", "min") and ins[0].exact)

    def reference(self, xs, attrs):
        x = xs[0]
        dt = dtype_name(x)
        axes = tuple(axes_of(attrs["axis"], x.ndim))
        kd = attrs["keepdims"]
        k = self.kind
        v = f64(x) if is_float(dt) else x.astype(np.int64)
        if k in ("sum", "prod", "max", "min"):
            y = getattr(np, k)(v, axis=axes, keepdims=kd)
        elif is_float(dt):
            y = {"mean": np.mean, "variance": np.var, "std": np.std}[k](v, axis=axes,
                                                                        keepdims=kd)
        else:
            n = math.prod(x.shape[a] for a in axes)

            def imean(a, keep):
                return trunc_div(np.sum(a, axis=axes, keepdims=keep), n)

            if k == "mean":
                y = imean(v, kd)
            else:
                y = imean((v - imean(v, True)) ** 2, kd)
                if k == "std":
                    y = np.trunc(np.sqrt(y))
        return cast(y, dt)

    def near_valid_attrs(self, ctx, ins, attrs):
        r = ins[0].rank
        return dict(attrs, axis=ctx.ch.choice([r, -r - 1, [0, -r] if r else [0]]))


# --- argmax / argmin -------------------------------------------------------------------------
@dataclass
class ArgReduce(OpSpec):
    fn: object = None
    dtypes: tuple = NUMERIC
    discontinuous: bool = True

    def sample(self, ctx):
        rank = (0, 4) if ctx.ch.boolean(0.1) else (1, 4)
        x = ctx.pick(dtypes=self.dtypes, rank=rank, pred=exact_if_float)
        axis = sample_axis(ctx, x.rank, single=True)
        if count_range([x.shape[a] for a in axes_of(axis, x.rank)])[0] < 1:
            return None
        return [x], {"axis": axis, "keepdims": ctx.ch.boolean(0.3)}

    def infer(self, tys, attrs):
        t = tys[0]
        return TensorTy(reduced_shape(t.shape, axes_of(attrs["axis"], t.rank),
                                      attrs["keepdims"]), "int64")

    def interval(self, ins, attrs, out):
        x = ins[0]
        return (0, count_range([x.shape[a] for a in axes_of(attrs["axis"], x.rank)])[1] - 1)

    def reference(self, xs, attrs):
        # numpy's argmax/argmin also return the first of ties
        return self.fn(xs[0], axis=attrs["axis"], keepdims=attrs["keepdims"]).astype(np.int64)

    def near_valid_attrs(self, ctx, ins, attrs):
        r = ins[0].rank
        return dict(attrs, axis=ctx.ch.choice([r, -r - 1]))


# --- cumsum / cumprod ------------------------------------------------------------------------
# Accumulator dtypes a scan may be asked for: ones each input converts to exactly (a
# float->int conversion would truncate, a discontinuity, and narrowing can overflow).
WIDER = {
    "int8": ("int32", "int64", "float32", "float64"),
    "uint8": ("int32", "int64", "float32", "float64"),
    "int32": ("int64", "float64"),
    "int64": ("int64",),
    "float16": ("float32", "float64"),
    "bfloat16": ("float32", "float64"),
    "float32": ("float64",),
    "float64": ("float64",),
    "bool": ("int32", "int64", "float32", "float64"),   # bool scans need a dtype (TVM's doc)
}


@dataclass
class Scan(OpSpec):
    """relax.cumsum / relax.cumprod(data, axis, dtype, exclusive)."""

    prod: bool = False
    dtypes: tuple = NUMERIC + ("bool",)

    def sample(self, ctx):
        x = ctx.pick(dtypes=self.dtypes, pred=finite)
        if x.rank == 0 or ctx.ch.boolean(0.25):
            axis = None
        elif ctx.ch.boolean(0.5):   # the last axis, as models scan (top-p sampling's cumsum),
            #                         which GPU targets lower with their own kernels
            axis = -1 if ctx.ch.boolean(0.5) else x.rank - 1
        else:
            axis = sample_axis(ctx, x.rank, single=True)
        dtype = None
        if x.dtype == "bool":
            dtype = ctx.ch.choice(WIDER["bool"])
        elif ctx.ch.boolean(0.3):
            dtype = ctx.ch.choice((x.dtype,) + WIDER[x.dtype])
        attrs = {"axis": axis, "dtype": dtype, "exclusive": ctx.ch.boolean(0.3)}
        length = self._length(x, attrs)[1]
        acc = dtype or x.dtype
        if not self.prod and not lowp_ok(acc, length, mag(x), SCAN_BUDGET):
            return None
        if self.prod and not lowp_prod_ok(acc, length):
            return None
        return [x], attrs

    @staticmethod
    def _length(x, attrs):
        dims = x.shape if attrs["axis"] is None else [x.shape[norm_axis(attrs["axis"], x.rank)]]
        return count_range(dims)

    def infer(self, tys, attrs):
        t = tys[0]
        shape = [D.product(t.shape)] if attrs["axis"] is None else t.shape
        return TensorTy(shape, attrs["dtype"] or t.dtype)

    def interval(self, ins, attrs, out):
        x = ins[0]
        cmax = self._length(x, attrs)[1]
        if self.prod:
            b = power_bound(mag(x), cmax)
            lo, hi = (0.0 if x.lo >= 0 else -b, b)
        else:
            lo, hi = scale(x.lo, x.hi, 1, max(cmax, 1))
        if attrs["exclusive"]:   # the first element is the identity
            ident = 1.0 if self.prod else 0.0
            lo, hi = min(lo, ident), max(hi, ident)
        return lo, hi

    def reference(self, xs, attrs):
        x = xs[0]
        out = attrs["dtype"] or dtype_name(x)
        exact_dt = np.float64 if is_float(dtype_name(x)) or is_float(out) else np.int64
        v = x.astype(exact_dt)
        axis = attrs["axis"]
        if axis is None:
            v, axis = v.reshape(-1), 0
        fn = np.cumprod if self.prod else np.cumsum
        y = fn(v, axis=axis)
        if attrs["exclusive"] and y.shape[axis]:
            ident = np.ones_like if self.prod else np.zeros_like
            first = ident(np.take(y, [0], axis=axis))
            y = np.concatenate([first, np.delete(y, -1, axis=axis)], axis=axis)
        return cast(y, out)

    def near_valid_attrs(self, ctx, ins, attrs):
        r = ins[0].rank
        return dict(attrs, axis=ctx.ch.choice([r, -r - 1]))


# --- median ----------------------------------------------------------------------------------
@dataclass
class Median(OpSpec):
    dtypes: tuple = FLOATS + ("int32", "int64")

    def sample(self, ctx):
        x = ctx.pick(dtypes=rarely(ctx, self.dtypes, ("bfloat16",)), pred=finite)
        bug = ctx.ch.boolean(KNOWN_BUG_P)
        if x.rank == 0 or ctx.ch.boolean(0.4):
            axis = None
        elif bug and ctx.ch.boolean(0.3):
            axis = []
        elif bug and x.rank > 1:
            axis = sample_axis(ctx, x.rank)
        else:
            axis = ctx.ch.integer(-x.rank, x.rank - 1)
            axis = axis if ctx.ch.boolean(0.5) else [axis]
        if count_range([x.shape[a] for a in axes_of(axis, x.rank)])[0] < 1:
            return None
        keep = ctx.ch.boolean(0.3) and (axis is not None or x.rank == 1 or bug)
        return [x], {"axis": axis, "keepdims": keep}

    @staticmethod
    def _tuple(attrs) -> bool:
        """TVM's type: (values, indices) for zero or one axis given, values otherwise."""
        a = attrs["axis"]
        return isinstance(a, int) or (isinstance(a, list) and len(a) <= 1)

    def infer(self, tys, attrs):
        t = tys[0]
        shape = reduced_shape(t.shape, axes_of(attrs["axis"], t.rank), attrs["keepdims"])
        vals = TensorTy(shape, t.dtype)
        return TupleTy([vals, TensorTy(shape, "int64")]) if self._tuple(attrs) else vals

    def interval(self, ins, attrs, out):
        x = ins[0]
        if not self._tuple(attrs):
            return (x.lo, x.hi)
        n = count_range([x.shape[a] for a in axes_of(attrs["axis"], x.rank)])[1]
        return (min(x.lo, 0), max(x.hi, n - 1))   # covers both tuple fields

    def exact(self, ins, attrs, out):
        return ins[0].exact

    def reference(self, xs, attrs):
        x = xs[0]
        axes = axes_of(attrs["axis"], x.ndim)
        keep = [a for a in range(x.ndim) if a not in axes]
        # Move the reduced axes last and flatten them: the lower median of what they span.
        moved = np.transpose(x, keep + axes)
        # An explicit length: -1 cannot be inferred when a kept dim is 0.
        flat = moved.reshape(moved.shape[:len(keep)] + (math.prod(x.shape[a] for a in axes),))
        order = np.argsort(flat, axis=-1, kind="stable")
        mid = (flat.shape[-1] - 1) // 2
        idx = order[..., mid]
        vals = np.take_along_axis(flat, idx[..., None], axis=-1)[..., 0]
        if attrs["keepdims"]:
            shape = [1 if i in axes else d for i, d in enumerate(x.shape)]
            vals, idx = vals.reshape(shape), idx.reshape(shape)
        return (vals, idx.astype(np.int64)) if self._tuple(attrs) else vals


# --- collapse_sum_to / collapse_sum_like ---------------------------------------------------
@dataclass
class CollapseSum(OpSpec):
    """Sum ``x`` down to a shape it broadcasts from (the gradient of broadcasting)."""

    like: bool = False
    dtypes: tuple = NUMERIC

    def sample(self, ctx):
        x = ctx.pick(dtypes=self.dtypes, pred=finite, rank=(1, 4))
        shape = list(x.shape[ctx.ch.integer(0, x.rank):]) if ctx.ch.boolean(0.4) \
            else list(x.shape)
        shape = [1 if ctx.ch.boolean(0.35) else d for d in shape]
        collapsed = self._collapsed(x.shape, shape)
        cmin, cmax = count_range([x.shape[a] for a in collapsed])
        if not lowp_ok(x.dtype, cmax, mag(x)):
            return None
        if self.like:
            y = ctx.pick(dtypes=NUMERIC + ("bool",), rank=len(shape), new_shape=shape)
            return [x, y], {}
        return [x], {"shape": shape}

    @staticmethod
    def _collapsed(xshape, shape) -> list[int]:
        lead = len(xshape) - len(shape)
        return list(range(lead)) + [lead + i for i, d in enumerate(shape)
                                    if d == 1 and not D.same(xshape[lead + i], 1)]

    def _target(self, tys, attrs):
        return tys[1].shape if self.like else attrs["shape"]

    def infer(self, tys, attrs):
        return TensorTy(list(self._target(tys, attrs)), tys[0].dtype)

    def interval(self, ins, attrs, out):
        x = ins[0]
        shape = ins[1].shape if self.like else attrs["shape"]
        return scale(x.lo, x.hi, *count_range(
            [x.shape[a] for a in self._collapsed(x.shape, shape)]))

    def call(self, args, attrs):
        if self.like:
            return list(args), {}
        from .spec import ShapeArg

        return [args[0], ShapeArg(tuple(attrs["shape"]))], {}

    def reference(self, xs, attrs):
        x = xs[0]
        target = xs[1].shape if self.like else None
        if target is None:   # static model dims are ints; symbolic ones equal x's dims
            target = self._runtime_target(x.shape, attrs["shape"])
        lead = x.ndim - len(target)
        axes = tuple(range(lead)) + tuple(lead + i for i, d in enumerate(target)
                                          if d == 1 and x.shape[lead + i] != 1)
        v = f64(x) if is_float(dtype_name(x)) else x.astype(np.int64)
        y = np.sum(v, axis=axes, keepdims=True)
        return cast(y.reshape(y.shape[lead:]), dtype_name(x))

    @staticmethod
    def _runtime_target(xshape, shape):
        lead = len(xshape) - len(shape)
        return tuple(d if isinstance(d, int) else xshape[lead + i] for i, d in enumerate(shape))


SPECS: list[OpSpec] = [
    Reduce("relax.sum", kind="sum", tol=LOWP_TOL),
    Reduce("relax.prod", kind="prod"),
    Reduce("relax.mean", kind="mean"),
    Reduce("relax.max", kind="max"),
    Reduce("relax.min", kind="min"),
    Reduce("relax.variance", kind="variance"),
    Reduce("relax.std", kind="std"),
    ArgReduce("relax.argmax", fn=np.argmax),
    ArgReduce("relax.argmin", fn=np.argmin),
    Scan("relax.cumsum", tol=SCAN_TOL),
    Scan("relax.cumprod", prod=True),
    Median("relax.median", weight=0.5),
    CollapseSum("relax.collapse_sum_to", tol=LOWP_TOL, weight=0.5),
    CollapseSum("relax.collapse_sum_like", like=True, tol=LOWP_TOL, weight=0.5),
]
