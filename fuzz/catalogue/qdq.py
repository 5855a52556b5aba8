"""Op family: qdq. ``relax.quantize`` and ``relax.dequantize`` (TVM's QNN-style ops).

quantize: ``clip(round(x / scale) + zero_point, qmin, qmax)`` cast to int8/uint8, where the
division is done in the data's dtype (float32 or float16, both IEEE-rounded, as numpy does)
and round is round-half-to-even (``llvm.nearbyint``). dequantize: ``(int32(x) - zero_point)
* float32(scale)`` in float32, then (float16 output) clipped to +-65504 and cast. Scale and
zero point are 0-d tensors, per-channel 1-D tensors along ``axis``, or scalar constants.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import dims as D
from ..model import TensorTy
from .spec import ConstArg, OpSpec, np_dtype, norm_axis

_Q = {"int8": (-128, 127), "uint8": (0, 255)}
_SCALES = (0.25, 0.5, 1.0, 0.125, 0.75, 1.5, 0.1)


def _qparam(ctx, x, axis: int, dtype: str, lo: float, hi: float, consts):
    """A scale or zero point: a scalar constant, a 0-d tensor, or one value per channel."""
    r = ctx.ch.integer(0, 2)
    if r == 0:
        return ConstArg(ctx.ch.choice(consts), dtype)
    d = x.shape[axis]
    shape = [d] if r == 2 and D.is_static(d) else []
    return ctx.pick(dtypes=(dtype,), rank=len(shape), new_shape=shape, new_range=(lo, hi),
                    pred=lambda v: lo <= v.lo and v.hi <= hi and v.exact)



@dataclass
class _QDQ(OpSpec):
    """Args: data, scale, zero point; a ConstArg stays in attrs (``scale_const`` /
    ``zp_const``) so the op's value inputs are only tensors in scope."""

    def _params(self, ctx, x, axis, scale_dtype, zp_dtype, zp_range):
        ins, attrs = [x], {}
        s = _qparam(ctx, x, axis, scale_dtype, 0.1, 2.0, _SCALES)
        z = _qparam(ctx, x, axis, zp_dtype, *zp_range,
                    tuple(range(int(zp_range[0]), int(zp_range[1]) + 1)))
        for key, p in (("scale", s), ("zp", z)):
            if isinstance(p, ConstArg):
                attrs[key + "_const"] = [p.value, p.dtype]
            else:
                ins.append(p)
                attrs[key + "_const"] = None
        return ins, attrs

    def _split(self, xs, attrs):
        """data, scale, zero point as arrays (constants as 0-d arrays)."""
        it = iter(xs[1:])
        out = [xs[0]]
        for key in ("scale", "zp"):
            c = attrs[key + "_const"]
            out.append(np.array(c[0], dtype=np_dtype(c[1])) if c else next(it))
        return out

    @staticmethod
    def _along(p, axis, rank):
        """A per-channel parameter shaped to broadcast along ``axis``."""
        if p.ndim == 1:
            shape = [1] * rank
            shape[axis] = p.shape[0]
            return p.reshape(shape)
        return p

    def call(self, args, attrs):
        it = iter(args[1:])
        pos = [args[0]]
        for key in ("scale", "zp"):
            c = attrs[key + "_const"]
            pos.append(ConstArg(c[0], c[1]) if c else next(it))
        return pos, {"axis": attrs["axis"], "out_dtype": attrs["out_dtype"]}

    def infer(self, tys, attrs):
        return TensorTy(tys[0].shape, attrs["out_dtype"])


@dataclass
class Quantize(_QDQ):
    dtypes: tuple = ("float32", "float16")
    discontinuous: bool = True

    def sample(self, ctx):
        x = ctx.pick(dtypes=self.dtypes, rank=(1, 4),
                     pred=lambda v: v.exact and abs(v.lo) < 1e3 and abs(v.hi) < 1e3)
        if not x.exact:
            return None
        axis = ctx.ch.integer(-x.rank, x.rank - 1)
        out = ctx.ch.choice(("int8", "uint8"))
        zp_dtype = ctx.ch.choice(("int8", "int32", "uint8"))
        zp_range = (0, 8) if zp_dtype == "uint8" else (-8, 8)
        ins, attrs = self._params(ctx, x, norm_axis(axis, x.rank), x.dtype, zp_dtype,
                                  zp_range)
        return ins, dict(attrs, axis=axis, out_dtype=out)

    def interval(self, ins, attrs, out):
        return _Q[attrs["out_dtype"]]

    def exact(self, ins, attrs, out):
        return ins[0].exact

    def reference(self, xs, attrs):
        x, s, z = self._split(xs, attrs)
        a = norm_axis(attrs["axis"], x.ndim)
        q = x / self._along(s.astype(x.dtype), a, x.ndim)   # IEEE division in x's dtype
        q = np.rint(q.astype(np.float64)) + self._along(z.astype(np.float64), a, x.ndim)
        lo, hi = _Q[attrs["out_dtype"]]
        return np.clip(q, lo, hi).astype(attrs["out_dtype"])


@dataclass
class Dequantize(_QDQ):
    dtypes: tuple = ("int8", "uint8", "int32")

    def sample(self, ctx):
        x = ctx.pick(dtypes=self.dtypes, rank=(1, 4),
                     pred=lambda v: abs(v.lo) < 2 ** 20 and abs(v.hi) < 2 ** 20)
        axis = ctx.ch.integer(-x.rank, x.rank - 1)
        out = ctx.ch.choice(("float32", "float32", "float16"))
        scale_dtype = ctx.ch.choice(("float32", "float16"))
        zp_dtype = ctx.ch.choice(("int8", "int32"))
        ins, attrs = self._params(ctx, x, norm_axis(axis, x.rank), scale_dtype, zp_dtype,
                                  (-8, 8))
        return ins, dict(attrs, axis=axis, out_dtype=out)

    def interval(self, ins, attrs, out):
        m = (max(abs(ins[0].lo), abs(ins[0].hi)) + 8) * 2.0
        return (-min(m, 65504.0), min(m, 65504.0))

    def reference(self, xs, attrs):
        x, s, z = self._split(xs, attrs)
        a = norm_axis(attrs["axis"], x.ndim)
        sub = x.astype(np.int64) - self._along(z.astype(np.int64), a, x.ndim)
        out = sub.astype(np.float32) * self._along(s.astype(np.float32), a, x.ndim)
        if attrs["out_dtype"] == "float16":
            out = np.clip(out, -65504.0, 65504.0)
        return out.astype(attrs["out_dtype"])


SPECS: list[OpSpec] = [
    Quantize("relax.quantize", weight=0.7),
    Dequantize("relax.dequantize", weight=0.7),
]
