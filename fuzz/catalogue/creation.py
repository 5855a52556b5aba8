"""Op family: creation. Ops that make a tensor from a shape (zeros, full, arange, eye, ...) or
from another tensor's shape (the ``*_like`` ops). Their values are exactly known."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import numpy as np

from .. import dims as D
from ..model import TensorTy
from .spec import (ALL_DTYPES, FLOATS, INTS, ConstArg, OpSpec, PrimArg, ShapeArg, cast,
                   is_float)

# Fill values exactly representable in every dtype they are sampled for (incl. bfloat16).
_FILL_FLOAT = (0.0, 1.0, -1.0, 2.5, -0.75, 3.0, 100.0, -7.25)
_FILL_INT = (0, 1, -1, 3, -7, 100)


def _fill_value(ctx, dtype: str):
    if dtype == "bool":
        return ctx.ch.choice([True, False])
    vals = _FILL_FLOAT if is_float(dtype) else _FILL_INT
    if dtype == "uint8":
        vals = [v for v in vals if v >= 0]
    return ctx.ch.choice(vals)


def _cast_scalar(value, dtype: str) -> float:
    """``value`` as TVM's cast to ``dtype`` gives it (truncation toward zero for ints)."""
    return float(cast(np.array(value), dtype))


def _fits(value, dtype: str) -> bool:
    """Whether ``value`` converts to ``dtype`` without leaving its range (a negative float to
    uint8 is undefined behaviour in LLVM)."""
    v = float(value)
    if dtype in INTS:
        return (0 if dtype == "uint8" else -128) <= v <= 127
    return True


def _shape_source(ctx, rank=(0, 3)) -> list:
    """A shape whose symbolic dims are defined: a value's shape in scope (possibly a new
    parameter's, which defines its vars), else a static shape."""
    if ctx.ch.boolean(0.6):
        v = ctx.pick(dtypes=ALL_DTYPES, rank=rank)
        return list(v.shape)
    lo, hi = rank
    return ctx.shape(ctx.ch.integer(lo, hi), static=True)


def _dims(shape, env):
    return [D.evaluate(d, env) for d in shape]


@dataclass
class Filled(OpSpec):
    """zeros / ones / full and their ``_like`` forms: a constant over a shape."""

    fill: Optional[float] = None      # None: the fill value is an operand (full, full_like)
    like: bool = False
    dtypes: tuple = ALL_DTYPES
    uses_env: bool = True

    def sample(self, ctx):
        attrs = {}
        ins = []
        if self.like:
            x = ctx.pick(dtypes=ALL_DTYPES, rank=(0, 4))
            ins = [x]
            dtype = ctx.dtype(self.dtypes) if ctx.ch.boolean(0.5) else None
            attrs["dtype"] = dtype
            out_dtype = dtype or x.dtype
        else:
            attrs["shape"] = _shape_source(ctx)
            out_dtype = ctx.dtype(self.dtypes)
            attrs["dtype"] = out_dtype
        if self.fill is None:
            # The fill constant's dtype may differ from the result's: it is cast.
            fdt = ctx.dtype(ALL_DTYPES) if ctx.ch.boolean(0.5) else out_dtype
            val = _fill_value(ctx, fdt)
            if not _fits(val, out_dtype):
                fdt, val = out_dtype, _fill_value(ctx, out_dtype)
            attrs["fill_value"] = val
            attrs["fill_dtype"] = fdt
            if not self.like and fdt == out_dtype and ctx.ch.boolean(0.3):
                attrs["dtype"] = None   # full() defaults to the fill value's dtype
        return ins, attrs

    def _value(self, attrs, dtype):
        v = self.fill if self.fill is not None else attrs["fill_value"]
        return _cast_scalar(v, dtype)

    def infer(self, tys, attrs):
        if self.like:
            return TensorTy(tys[0].shape, attrs["dtype"] or tys[0].dtype)
        return TensorTy(attrs["shape"], attrs["dtype"] or attrs["fill_dtype"])

    def interval(self, ins, attrs, out):
        v = self._value(attrs, out.dtype)
        return (v, v)

    def exact(self, ins, attrs, out):
        return True

    def reference(self, xs, attrs, env=None):
        dtype = attrs["dtype"] or (_dtype_name(xs[0]) if self.like else attrs["fill_dtype"])
        shape = xs[0].shape if self.like else _dims(attrs["shape"], env)
        return np.full(shape, self._value(attrs, dtype))   # cast to dtype by the caller

    def call(self, args, attrs):
        pos = list(args) if self.like else [ShapeArg(tuple(attrs["shape"]))]
        if self.fill is None:
            pos.append(ConstArg(attrs["fill_value"], attrs["fill_dtype"]))
        return pos, {"dtype": attrs["dtype"]}


@dataclass
class Arange(OpSpec):
    dtypes: tuple = FLOATS + INTS

    def sample(self, ctx):
        ch = ctx.ch
        if ch.boolean(0.5):   # integer start/end/step
            start = ch.integer(-10, 10)
            step = ch.choice([1, 1, 2, 3, -1, -2, 5, 7])
            end = start + step * ch.integer(-1, 24) + ch.integer(-1, 1)
            dtype = None if ch.boolean(0.3) else ctx.dtype(FLOATS + INTS)
        else:                 # quarters: exact in every float dtype at these magnitudes
            start = ch.integer(-40, 40) / 4
            step = ch.choice([0.25, 0.5, 1.5, -0.75, 2.0, -1.0])
            end = start + step * ch.integer(0, 20) + ch.choice([0, 0.125, -0.125])
            dtype = None if ch.boolean(0.3) else ctx.dtype(FLOATS)
        attrs = {"start": start, "end": end, "step": step, "dtype": dtype}
        n = self._len(attrs)
        vals = [start, start + step * max(n - 1, 0)]
        dt = self._dtype(attrs)
        if dt in INTS and (min(vals) < (0 if dt == "uint8" else -128) or max(vals) > 127):
            return None
        return [], attrs

    @staticmethod
    def _len(a):
        return max(0, math.ceil((a["end"] - a["start"]) / a["step"]))

    @staticmethod
    def _dtype(a):
        if a["dtype"]:
            return a["dtype"]
        ints = all(isinstance(a[k], int) for k in ("start", "end", "step"))
        return "int64" if ints else "float32"

    def infer(self, tys, attrs):
        return TensorTy([self._len(attrs)], self._dtype(attrs))

    def interval(self, ins, attrs, out):
        n = self._len(attrs)
        a, b = attrs["start"], attrs["start"] + attrs["step"] * max(n - 1, 0)
        return (min(a, b), max(a, b))

    def exact(self, ins, attrs, out):
        return True

    def reference(self, xs, attrs):
        a = attrs
        return cast(a["start"] + a["step"] * np.arange(self._len(a)), self._dtype(a))

    def call(self, args, attrs):
        a = attrs
        return [a["start"], a["end"], a["step"]], {"dtype": a["dtype"]}


def _prim(d):
    """An int (the builder makes it a PrimValue) or a symbolic dim as a PrimValue."""
    return d if isinstance(d, int) else PrimArg(d)


@dataclass
class Eye(OpSpec):
    like: bool = False
    dtypes: tuple = ALL_DTYPES
    uses_env: bool = True

    def sample(self, ctx):
        ch = ctx.ch
        attrs = {"k": ch.choice([0, 0, 1, -1, 2, -3, 7, -9])}
        if self.like:
            x = ctx.pick(dtypes=ALL_DTYPES, rank=2)
            attrs["dtype"] = ctx.dtype(self.dtypes) if ch.boolean(0.5) else None
            return [x], attrs
        if ch.boolean(0.4):   # dims of a value in scope: symbolic ones are defined
            shape = ctx.pick(dtypes=ALL_DTYPES, rank=(1, 3)).shape
            n, m = ch.choice(shape), ch.choice(shape)
        else:
            n, m = ctx.dim(static=True), ctx.dim(static=True)
        attrs.update(n=n, m=m, dtype=ctx.dtype(self.dtypes))
        return [], attrs

    def infer(self, tys, attrs):
        if self.like:
            return TensorTy(tys[0].shape, attrs["dtype"] or tys[0].dtype)
        return TensorTy([attrs["n"], attrs["m"]], attrs["dtype"])

    def interval(self, ins, attrs, out):
        return (0, 1)

    def exact(self, ins, attrs, out):
        return True

    def reference(self, xs, attrs, env=None):
        if self.like:
            n, m = xs[0].shape
        else:
            n, m = _dims([attrs["n"], attrs["m"]], env)
        return np.eye(n, m, attrs["k"])   # cast to the result dtype by the caller

    def call(self, args, attrs):
        if self.like:
            return list(args), {"k": attrs["k"], "dtype": attrs["dtype"]}
        return [_prim(attrs["n"]), _prim(attrs["m"]), attrs["k"], attrs["dtype"]], {}


def _dtype_name(x: np.ndarray) -> str:
    return "bfloat16" if "bfloat16" in str(x.dtype) else str(x.dtype)


@dataclass
class HammingWindow(OpSpec):
    dtypes: tuple = FLOATS

    def sample(self, ctx):
        ch = ctx.ch
        attrs = {"window_size": ch.choice([1, 2, 3, 5, 8, ch.integer(1, 64)]),
                 "periodic": ch.boolean(), "alpha": ch.choice([0.54, 0.5, 1.0, 0.25]),
                 "beta": ch.choice([0.46, 0.5, 0.0, -0.25]), "dtype": ctx.dtype(FLOATS)}
        return [], attrs

    def infer(self, tys, attrs):
        return TensorTy([attrs["window_size"]], attrs["dtype"])

    def interval(self, ins, attrs, out):
        a, b = attrs["alpha"], abs(attrs["beta"])
        return (min(a - b, 1.0), max(a + b, 1.0))

    def reference(self, xs, attrs):
        ws = attrs["window_size"]
        if ws == 1:
            return cast(np.ones(1), attrs["dtype"])
        n = ws + 1 if attrs["periodic"] else ws
        w = attrs["alpha"] - attrs["beta"] * np.cos(2 * np.pi * np.arange(n) / (n - 1))
        return cast(w[:ws], attrs["dtype"])

    def call(self, args, attrs):
        a = attrs
        return [a["window_size"], a["periodic"], a["alpha"], a["beta"], a["dtype"]], {}


@dataclass
class Size(OpSpec):
    """relax.size(x): the number of elements, a 0-d int64 tensor."""

    dtypes: tuple = ALL_DTYPES

    def sample(self, ctx):
        return [ctx.pick(dtypes=self.dtypes, rank=(0, 4))], {}

    def infer(self, tys, attrs):
        return TensorTy([], "int64")

    def interval(self, ins, attrs, out):
        return (0, math.prod(d if D.is_static(d) else 8 for d in ins[0].shape))

    def exact(self, ins, attrs, out):
        return True

    def reference(self, xs, attrs):
        return np.array(xs[0].size, dtype=np.int64)



SPECS: list[OpSpec] = [
    Filled("relax.zeros", fill=0),
    Filled("relax.ones", fill=1),
    Filled("relax.full"),
    Filled("relax.zeros_like", fill=0, like=True),
    Filled("relax.ones_like", fill=1, like=True),
    Filled("relax.full_like", like=True),
    Arange("relax.arange"),
    Eye("relax.eye"),
    Eye("relax.eye_like", like=True),
    HammingWindow("relax.hamming_window", weight=0.3),
    Size("relax.size", weight=0.3),
]
