"""Op family: sort. relax.sort, argsort and topk (lowered to tvm.contrib.sort on llvm).

TVM's contrib sort is stable in both directions: equal elements keep their input order whether
ascending or descending (checked on TVM 0.27 llvm), and topk returns the first k of that order.
The references follow it, so ties (common in integer, float16 and exactly-known data) compare
exactly.

Known TVM 0.27 bugs these specs reach on purpose (bfloat16 at rate reduce.KNOWN_BUG_P):
* bfloat16 sort/argsort/topk return garbage values that are not in the input, and corrupt
  the heap: the process may later abort ("corrupted double-linked list") or hang.
* topk with k < -1 fails at run time ("vector::reserve"), though k < 1 is documented to mean
  the whole axis (k = 0 and k = -1 work).
Not sampled (refused with an explicit "Unsupported input/output dtype" at run time, or
rejected by numpy's own rules): int8/uint8/bool input to sort/argsort, bool to topk; int8,
uint8 and float16 index dtypes; 0-d inputs (axis -1 does not exist; TVM segfaults on sort of
a 0-d tensor, near-valid territory); topk with k past the axis length (reads out of bounds).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model import TensorTy, TupleTy
from .reduce import count_range, dtype_name, exact_if_float, finite, rarely
from .spec import FLOATS, INTS, ConstArg, OpSpec, cast, norm_axis

SORTABLE = FLOATS + ("int32", "int64")


def _stable_order(x: np.ndarray, axis: int, descending: bool) -> np.ndarray:
    """Stable argsort; descending keeps equal elements in input order (not reversed)."""
    key = x.astype(np.float64) if dtype_name(x) in FLOATS else x.astype(np.int64)
    return np.argsort(-key if descending else key, axis=axis, kind="stable")


@dataclass
class Sorting(OpSpec):
    """relax.sort(x, axis, descending), relax.argsort(data, axis, descending, dtype)."""

    indices: bool = False
    dtypes: tuple = SORTABLE

    def sample(self, ctx):
        pred = exact_if_float if self.indices else finite
        x = ctx.pick(dtypes=rarely(ctx, self.dtypes, ("bfloat16",)), rank=(1, 4), pred=pred)
        attrs = {"axis": ctx.ch.integer(-x.rank, x.rank - 1),
                 "descending": ctx.ch.boolean(0.5)}
        if self.indices:
            attrs["dtype"] = ctx.ch.choice(("int32", "int64", "int64", "float32", "float64"))
        return [x], attrs

    def infer(self, tys, attrs):
        return TensorTy(tys[0].shape, attrs["dtype"] if self.indices else tys[0].dtype)

    def interval(self, ins, attrs, out):
        x = ins[0]
        if self.indices:
            return (0, count_range([x.shape[norm_axis(attrs["axis"], x.rank)]])[1] - 1)
        return (x.lo, x.hi)

    def exact(self, ins, attrs, out):
        return ins[0].exact   # data movement, or integer indices

    def reference(self, xs, attrs):
        x = xs[0]
        order = _stable_order(x, attrs["axis"], attrs["descending"])
        if self.indices:
            return cast(order, attrs["dtype"])
        return np.take_along_axis(x, order, axis=attrs["axis"])

    def near_valid_attrs(self, ctx, ins, attrs):
        r = ins[0].rank
        return dict(attrs, axis=ctx.ch.choice([r, -r - 1])) if r > 0 else None


@dataclass
class TopK(OpSpec):
    """relax.topk(data, k, axis, ret_type, largest, dtype); k < 1 means the whole axis."""

    dtypes: tuple = FLOATS + INTS
    discontinuous: bool = True   # the indices (and which values make the cut)

    def sample(self, ctx):
        x = ctx.pick(dtypes=rarely(ctx, self.dtypes, ("bfloat16",)), rank=(1, 4),
                     pred=exact_if_float)
        axis = ctx.ch.integer(-x.rank, x.rank - 1)
        d = x.shape[norm_axis(axis, x.rank)]
        if d == 0:
            return None
        r = ctx.ch.integer(0, 9)
        if r < 2 or not isinstance(d, int):
            k = ctx.ch.choice((1, 0, -1) if r >= 2 else (0, -1, -2))   # symbolic: 1 or all
        else:
            k = ctx.ch.choice((1, d, ctx.ch.integer(1, d)))
        return [x], {"k": k, "axis": axis,
                     "ret_type": ctx.ch.choice(("both", "both", "values", "indices")),
                     "largest": ctx.ch.boolean(0.6),
                     "dtype": ctx.ch.choice(("int32", "int64"))}

    def infer(self, tys, attrs):
        t = tys[0]
        ax = norm_axis(attrs["axis"], t.rank)
        shape = list(t.shape)
        if attrs["k"] >= 1:
            shape[ax] = attrs["k"]
        vals, idx = TensorTy(shape, t.dtype), TensorTy(shape, attrs["dtype"])
        return {"both": TupleTy([vals, idx]), "values": vals, "indices": idx}[attrs["ret_type"]]

    def interval(self, ins, attrs, out):
        x = ins[0]
        n = count_range([x.shape[norm_axis(attrs["axis"], x.rank)]])[1]
        rt = attrs["ret_type"]
        if rt == "values":
            return (x.lo, x.hi)
        if rt == "indices":
            return (0, n - 1)
        return (min(x.lo, 0), max(x.hi, n - 1))   # covers both tuple fields

    def exact(self, ins, attrs, out):
        return ins[0].exact

    def reference(self, xs, attrs):
        x = xs[0]
        axis, k = attrs["axis"], attrs["k"]
        order = _stable_order(x, axis, attrs["largest"])
        if k >= 1:
            order = np.take(order, np.arange(k), axis=axis)
        vals = np.take_along_axis(x, order, axis=axis)
        idx = order.astype(attrs["dtype"])
        return {"both": (vals, idx), "values": vals, "indices": idx}[attrs["ret_type"]]

    def near_valid_attrs(self, ctx, ins, attrs):
        x = ins[0]
        if x.rank == 0:
            return None
        d = x.shape[norm_axis(attrs["axis"], x.rank)]
        if isinstance(d, int) and ctx.ch.boolean(0.5):
            return dict(attrs, k=d + ctx.ch.integer(1, 3))   # past the axis length
        return dict(attrs, axis=ctx.ch.choice([x.rank, -x.rank - 1]))


@dataclass
class Bucketize(OpSpec):
    """relax.bucketize(x, boundaries, out_int32, right): torch.bucketize, i.e. numpy's
    searchsorted with side "left" (right=False) or "right". The boundaries must be strictly
    increasing, which no random parameter promises: they are a constant the spec draws."""

    dtypes: tuple = FLOATS + ("int32", "int64")
    discontinuous: bool = True

    def sample(self, ctx):
        ch = ctx.ch
        x = ctx.pick(dtypes=self.dtypes, rank=(0, 4), pred=exact_if_float)
        if not exact_if_float(x):
            return None
        pts = sorted(set(ch.integer(-9, 9) for _ in range(ch.integer(1, 6))))
        if x.dtype in FLOATS and ch.boolean(0.5):
            pts = [p / 2 for p in pts]   # halves: exact in every float dtype
        return [x], {"boundaries": pts, "boundaries_dtype": x.dtype,
                     "out_int32": ch.boolean(0.5), "right": ch.boolean(0.5)}

    def infer(self, tys, attrs):
        return TensorTy(tys[0].shape, "int32" if attrs["out_int32"] else "int64")

    def interval(self, ins, attrs, out):
        return (0, len(attrs["boundaries"]))

    def exact(self, ins, attrs, out):
        return ins[0].exact or ins[0].dtype not in FLOATS

    def call(self, args, attrs):
        return [args[0], ConstArg(list(attrs["boundaries"]), attrs["boundaries_dtype"])], {
            "out_int32": attrs["out_int32"], "right": attrs["right"]}

    def reference(self, xs, attrs):
        x = xs[0]
        b = np.array(attrs["boundaries"], dtype=np.float64)
        return np.searchsorted(b, x.astype(np.float64), side="right" if attrs["right"]
                               else "left")



SPECS: list[OpSpec] = [
    Sorting("relax.sort"),
    Sorting("relax.argsort", indices=True, discontinuous=True),
    TopK("relax.topk"),
    Bucketize("relax.bucketize", weight=0.5),
]
