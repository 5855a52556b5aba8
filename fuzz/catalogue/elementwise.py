"""Op family: elementwise unary and binary ops (with broadcasting), comparisons, logical and
bitwise ops, and the elementwise activations of ``relax.nn``."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

from ..model import TensorTy
from .spec import (FLOATS, INTS, NUMERIC, SIGNED, OpSpec, Value, broadcast_dims, cast, f64,
                   is_float, monotone)

INF = math.inf


def _erf(x):
    from math import erf

    return np.vectorize(erf, otypes=[np.float64])(x)


def _unit(lo, hi):
    return (0.0, 1.0)


@dataclass
class Unary(OpSpec):
    fn: Callable = None                       # numpy function, computed in float64 for floats
    out_dtype: Optional[str] = None           # e.g. "bool" for isnan
    domain: Optional[Callable[[Value], bool]] = None
    new_range: Optional[tuple] = None         # range of a new parameter that meets the domain
    rule: Optional[Callable] = None           # interval rule (lo, hi) -> (lo, hi)
    keeps_exact: bool = False                 # no rounding: exact in, exact out
    attrs: dict = field(default_factory=dict)

    def sample(self, ctx):
        pred = self.domain
        if self.discontinuous:
            pred = _and(pred, lambda v: v.exact)
        x = ctx.pick(dtypes=self.dtypes, pred=pred, new_range=self.new_range)
        return [x], dict(self.attrs)

    def infer(self, tys, attrs):
        return TensorTy(tys[0].shape, self.out_dtype or tys[0].dtype)

    def interval(self, ins, attrs, out):
        if self.out_dtype == "bool":
            return (0, 1)
        if self.rule is None:
            return (-INF, INF)
        lo, hi = self.rule(ins[0].lo, ins[0].hi)
        return (min(lo, hi), max(lo, hi))

    def exact(self, ins, attrs, out):
        return super().exact(ins, attrs, out) or (self.keeps_exact and ins[0].exact)

    def reference(self, xs, attrs):
        x = xs[0]
        with np.errstate(all="ignore"):
            y = self.fn(f64(x), **attrs)
        return cast(y, self.out_dtype or _dtype_name(x))


@dataclass
class Binary(OpSpec):
    fn: Callable = None
    out_dtype: Optional[str] = None
    lhs_domain: Optional[Callable[[Value], bool]] = None
    rhs_domain: Optional[Callable[[Value], bool]] = None
    lhs_range: Optional[tuple] = None
    rhs_range: Optional[tuple] = None
    rule: Optional[Callable] = None           # (a_lo, a_hi, b_lo, b_hi) -> (lo, hi)
    keeps_exact: bool = False
    native: bool = False                      # compute in the input dtype (integer semantics)

    def sample(self, ctx):
        pred = self.lhs_domain
        if self.discontinuous:
            pred = _and(pred, lambda v: v.exact)
        a = ctx.pick(dtypes=self.dtypes, pred=pred, new_range=self.lhs_range)
        rpred = self.rhs_domain
        if self.discontinuous:
            rpred = _and(rpred, lambda v: v.exact)
        b = ctx.pick_broadcast(a, pred=rpred, new_range=self.rhs_range)
        if ctx.ch.boolean(0.3):
            a, b = (b, a) if self._symmetric_domain() else (a, b)
        return [a, b], {}

    def _symmetric_domain(self):
        return self.lhs_domain is None and self.rhs_domain is None

    def infer(self, tys, attrs):
        return TensorTy(broadcast_dims(tys[0].shape, tys[1].shape), self.out_dtype or tys[0].dtype)

    def interval(self, ins, attrs, out):
        if self.out_dtype == "bool":
            return (0, 1)
        if self.rule is None:
            return (-INF, INF)
        a, b = ins
        with np.errstate(all="ignore"):
            lo, hi = self.rule(a.lo, a.hi, b.lo, b.hi)
        return (min(lo, hi), max(lo, hi))

    def exact(self, ins, attrs, out):
        return super().exact(ins, attrs, out) or (self.keeps_exact and all(v.exact for v in ins))

    def reference(self, xs, attrs):
        a, b = xs
        dt = _dtype_name(a)
        with np.errstate(all="ignore"):
            if self.native or not is_float(dt):
                y = self.fn(a, b)
            else:
                y = self.fn(f64(a), f64(b))
        return cast(y, self.out_dtype or dt)


def _dtype_name(x: np.ndarray) -> str:
    return "bfloat16" if "bfloat16" in str(x.dtype) else str(x.dtype)


def _and(p, q):
    if p is None:
        return q
    return lambda v: p(v) and q(v)


def _pos(v):
    return v.lo > 0.25


def _nonneg(v):
    return v.lo >= 0


def _open_unit(v):
    return -0.95 <= v.lo and v.hi <= 0.95


def _bounded(limit):
    return lambda v: -limit <= v.lo and v.hi <= limit


def _away_from_zero(v):
    return v.lo >= 0.5 or v.hi <= -0.5


def _products(alo, ahi, blo, bhi):
    ps = [alo * blo, alo * bhi, ahi * blo, ahi * bhi]
    ps = [0.0 if math.isnan(p) else p for p in ps]
    return min(ps), max(ps)


def _quotients(alo, ahi, blo, bhi):
    # b excludes zero (domain), so 1/b is monotone on its interval
    inv = sorted([1 / blo if blo else INF, 1 / bhi if bhi else INF])
    return _products(alo, ahi, inv[0], inv[1])


def _bit_bound(alo, ahi, blo, bhi):
    m = max(abs(alo), abs(ahi), abs(blo), abs(bhi), 1)
    if math.isinf(m):
        return (-INF, INF)
    p = 2 ** math.ceil(math.log2(m + 1))
    return (-p, p) if min(alo, blo) < 0 else (0, p)


FLOAT_MATH = FLOATS
U = Unary
SPECS: list[OpSpec] = [
    # --- unary math, floats ---------------------------------------------------------------
    U("relax.abs", fn=np.abs, dtypes=FLOATS + SIGNED, keeps_exact=True,
      rule=lambda lo, hi: (0 if lo <= 0 <= hi else min(abs(lo), abs(hi)), max(abs(lo), abs(hi)))),
    U("relax.negative", fn=np.negative, dtypes=FLOATS + SIGNED, keeps_exact=True,
      rule=lambda lo, hi: (-hi, -lo)),
    U("relax.exp", fn=np.exp, domain=_bounded(8), rule=monotone(np.exp)),
    U("relax.log", fn=np.log, domain=_pos, new_range=(0.5, 4.0), rule=monotone(np.log)),
    U("relax.sqrt", fn=np.sqrt, domain=_nonneg, new_range=(0.0, 4.0), rule=monotone(np.sqrt)),
    U("relax.rsqrt", fn=lambda x: 1 / np.sqrt(x), domain=_pos, new_range=(0.5, 4.0),
      rule=lambda lo, hi: (1 / math.sqrt(hi), 1 / math.sqrt(lo))),
    U("relax.square", fn=np.square, dtypes=FLOATS + SIGNED,
      rule=lambda lo, hi: (0 if lo <= 0 <= hi else min(lo * lo, hi * hi), max(lo * lo, hi * hi))),
    U("relax.sin", fn=np.sin, domain=_bounded(100), rule=lambda lo, hi: (-1, 1)),
    U("relax.cos", fn=np.cos, domain=_bounded(100), rule=lambda lo, hi: (-1, 1)),
    U("relax.tan", fn=np.tan, domain=_bounded(1.2), new_range=(-1.2, 1.2),
      rule=monotone(np.tan)),
    U("relax.sinh", fn=np.sinh, domain=_bounded(8), rule=monotone(np.sinh)),
    U("relax.cosh", fn=np.cosh, domain=_bounded(8),
      rule=lambda lo, hi: (1, max(math.cosh(lo), math.cosh(hi)))),
    U("relax.tanh", fn=np.tanh, rule=monotone(np.tanh)),
    U("relax.asin", fn=np.arcsin, domain=_open_unit, new_range=(-0.95, 0.95),
      rule=monotone(np.arcsin)),
    U("relax.acos", fn=np.arccos, domain=_open_unit, new_range=(-0.95, 0.95),
      rule=lambda lo, hi: (math.acos(hi), math.acos(lo))),
    U("relax.atan", fn=np.arctan, rule=monotone(np.arctan)),
    U("relax.asinh", fn=np.arcsinh, rule=monotone(np.arcsinh)),
    U("relax.acosh", fn=np.arccosh, domain=lambda v: v.lo >= 1.05, new_range=(1.05, 4.0),
      rule=monotone(np.arccosh)),
    U("relax.atanh", fn=np.arctanh, domain=_open_unit, new_range=(-0.95, 0.95),
      rule=monotone(np.arctanh)),
    U("relax.erf", fn=_erf, rule=lambda lo, hi: (-1, 1)),
    U("relax.sigmoid", fn=lambda x: 1 / (1 + np.exp(-x)), rule=_unit),
    # Rounding ops are discontinuous: fed only exactly-known values, else a 1-ulp difference
    # upstream flips the result. TVM's round is half-to-even like numpy's.
    U("relax.floor", fn=np.floor, discontinuous=True, keeps_exact=True, rule=monotone(np.floor)),
    U("relax.ceil", fn=np.ceil, discontinuous=True, keeps_exact=True, rule=monotone(np.ceil)),
    U("relax.round", fn=np.round, discontinuous=True, keeps_exact=True, rule=monotone(np.round)),
    U("relax.trunc", fn=np.trunc, discontinuous=True, keeps_exact=True, rule=monotone(np.trunc)),
    U("relax.sign", fn=np.sign, dtypes=FLOATS + SIGNED, discontinuous=True, keeps_exact=True,
      rule=lambda lo, hi: (-1, 1)),
    U("relax.isfinite", fn=np.isfinite, out_dtype="bool"),
    U("relax.isinf", fn=np.isinf, out_dtype="bool"),
    U("relax.isnan", fn=np.isnan, out_dtype="bool"),
    U("relax.bitwise_not", fn=np.invert, dtypes=INTS, rule=lambda lo, hi: (-hi - 1, -lo - 1)),
    U("relax.logical_not", fn=np.logical_not, dtypes=("bool",), out_dtype="bool"),
    # --- activations (relax.nn), floats --------------------------------------------------
    U("relax.nn.relu", fn=lambda x: np.maximum(x, 0), keeps_exact=True,
      rule=lambda lo, hi: (max(lo, 0), max(hi, 0))),
    U("relax.nn.silu", fn=lambda x: x / (1 + np.exp(-x)),
      rule=lambda lo, hi: (-0.3, max(hi, 0))),
    U("relax.nn.gelu", fn=lambda x: 0.5 * x * (1 + _erf(x / math.sqrt(2))),
      rule=lambda lo, hi: (-0.2, max(hi, 0))),
    U("relax.nn.gelu_tanh",
      fn=lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3))),
      rule=lambda lo, hi: (-0.2, max(hi, 0))),
    U("relax.nn.selu",
      fn=lambda x: 1.0507009873554804934193349852946 * np.where(
          x > 0, x, 1.6732632423543772848170429916717 * (np.exp(x) - 1)),
      rule=lambda lo, hi: (-1.76, max(hi * 1.06, 0))),
    U("relax.nn.softplus",
      fn=lambda x, beta=1.0, threshold=20.0: np.where(
          x * beta > threshold, x, np.log1p(np.exp(x * beta)) / beta),
      rule=lambda lo, hi: (0, max(hi, 0) + 1), attrs={"beta": 1.0, "threshold": 20.0}),
    U("relax.nn.leakyrelu", fn=lambda x, alpha: np.where(x >= 0, x, x * alpha),
      rule=lambda lo, hi: (min(lo, 0), max(hi, 0)), attrs={"alpha": 0.1}),
    U("relax.clip", fn=lambda x, min, max: np.clip(x, min, max), dtypes=FLOATS + SIGNED,
      keeps_exact=True, rule=lambda lo, hi: (max(lo, -1), min(hi, 1)) if lo <= 1 and hi >= -1
      else (-1, 1), attrs={"min": -1, "max": 1}),
    # --- binary arithmetic (broadcasting) -------------------------------------------------
    Binary("relax.add", fn=np.add, dtypes=NUMERIC,
           rule=lambda a, b, c, d: (a + c, b + d)),
    Binary("relax.subtract", fn=np.subtract, dtypes=NUMERIC,
           rule=lambda a, b, c, d: (a - d, b - c)),
    Binary("relax.multiply", fn=np.multiply, dtypes=NUMERIC, rule=_products),
    Binary("relax.divide", fn=np.divide, dtypes=FLOATS, rhs_domain=_away_from_zero,
           rhs_range=(0.5, 2.0), rule=_quotients),
    Binary("relax.power", fn=np.power, dtypes=FLOATS, lhs_domain=lambda v: v.lo >= 0.25 and
           v.hi <= 4, lhs_range=(0.25, 2.0), rhs_domain=_bounded(3), rhs_range=(-2.0, 2.0),
           rule=lambda a, b, c, d: (0, max(b, 1) ** max(abs(c), abs(d)) * 4 ** 3)),
    Binary("relax.maximum", fn=np.maximum, dtypes=NUMERIC, keeps_exact=True,
           rule=lambda a, b, c, d: (max(a, c), max(b, d))),
    Binary("relax.minimum", fn=np.minimum, dtypes=NUMERIC, keeps_exact=True,
           rule=lambda a, b, c, d: (min(a, c), min(b, d))),
    Binary("relax.atan2", fn=np.arctan2, dtypes=FLOATS, lhs_domain=_away_from_zero,
           lhs_range=(0.5, 2.0), rule=lambda a, b, c, d: (-math.pi, math.pi)),
    Binary("relax.log_add_exp", fn=np.logaddexp, dtypes=FLOATS,
           lhs_domain=_bounded(30), rhs_domain=_bounded(30),
           rule=lambda a, b, c, d: (max(a, c), max(b, d) + 0.7)),
    # Integer division: divisor kept away from zero (SIGFPE is the worker's test, not a
    # valid program). Floor semantics are numpy's.
    Binary("relax.floor_divide", fn=np.floor_divide, dtypes=FLOATS + SIGNED,
           discontinuous=True, rhs_domain=_away_from_zero, rhs_range=(1, 4),
           rule=lambda a, b, c, d: (-max(abs(a), abs(b)) - 1, max(abs(a), abs(b)) + 1)),
    Binary("relax.floor_mod", fn=np.mod, dtypes=FLOATS + SIGNED, discontinuous=True,
           rhs_domain=_away_from_zero, rhs_range=(1, 4),
           rule=lambda a, b, c, d: (-max(abs(c), abs(d)), max(abs(c), abs(d)))),
    Binary("relax.mod", fn=np.fmod, dtypes=FLOATS + SIGNED, discontinuous=True,
           rhs_domain=_away_from_zero, rhs_range=(1, 4),
           rule=lambda a, b, c, d: (-max(abs(c), abs(d)), max(abs(c), abs(d)))),
    # --- comparisons, logical and bitwise ---------------------------------------------------
    *[Binary(f"relax.{n}", fn=f, dtypes=NUMERIC, out_dtype="bool", discontinuous=True)
      for n, f in [("equal", np.equal), ("not_equal", np.not_equal), ("greater", np.greater),
                   ("greater_equal", np.greater_equal), ("less", np.less),
                   ("less_equal", np.less_equal)]],
    *[Binary(f"relax.{n}", fn=f, dtypes=("bool",), out_dtype="bool")
      for n, f in [("logical_and", np.logical_and), ("logical_or", np.logical_or),
                   ("logical_xor", np.logical_xor)]],
    *[Binary(f"relax.{n}", fn=f, dtypes=INTS, native=True, rule=_bit_bound)
      for n, f in [("bitwise_and", np.bitwise_and), ("bitwise_or", np.bitwise_or),
                   ("bitwise_xor", np.bitwise_xor)]],
    # Shift amounts stay below the bit width (larger shifts are undefined in C and LLVM).
    Binary("relax.left_shift", fn=np.left_shift, dtypes=("int32", "int64"), native=True,
           lhs_domain=_bounded(64), rhs_domain=lambda v: 0 <= v.lo and v.hi <= 4,
           rhs_range=(0, 4), rule=lambda a, b, c, d: (min(a * 16, a), max(b * 16, b))),
    Binary("relax.right_shift", fn=np.right_shift, dtypes=("int32", "int64"), native=True,
           rhs_domain=lambda v: 0 <= v.lo and v.hi <= 4, rhs_range=(0, 4),
           rule=lambda a, b, c, d: (min(a, 0), max(b, 0))),
]
