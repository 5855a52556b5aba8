"""Op family: grad. The ops ``relax.transform.Gradient`` emits, usable on their own:
``no_grad``, ``start_checkpoint`` and ``end_checkpoint`` (identities that mark regions for the
gradient pass) and ``take_backward`` (the gradient of ``take``: zeros of ``x``'s shape with
``output_grad``'s slices added at ``indices`` along ``axis``; repeated indices accumulate, so
float results are compared with the summation tolerance, integer ones exactly).

``avg_pool2d_backward`` is the adjoint of the catalogue's avg_pool2d: each output gradient
divided by its window's divisor and added to the window's inputs (dilation 1 only: TOPI's
pool_grad has none, and the legalizer says so and leaves the op unlowered).
max_pool2d_backward sends each output gradient to its window's first maximum.

``nll_loss_backward(output_grad, predictions, targets[, weights])`` is the gradient of
``nll_loss`` with respect to predictions, as TVM's legalizer computes it
(``legalize_ops/grad.py``): ``grad[n, c, ...] = -w'[t] * g'`` where ``c == t[n, ...]``, else 0,
with ``w'`` the weights (ones when absent) whose ``ignore_index`` entry is zeroed when
``ignore_index >= 0``, and ``g'`` the output gradient itself (``none``), broadcast to the
targets' shape (``sum``), or that divided by ``sum(w'[t])`` (``mean``). It does not read the
predictions' values, only their shape.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .. import dims as D
from ..model import TensorTy
from .spec import ALL_DTYPES, FLOATS, OpSpec, f64, within


@dataclass
class Identity(OpSpec):
    dtypes: tuple = ALL_DTYPES

    def sample(self, ctx):
        return [ctx.pick(dtypes=self.dtypes, rank=(0, 4),
                         pred=lambda v: within(v.dtype, v.lo, v.hi))], {}

    def infer(self, tys, attrs):
        return tys[0]

    def interval(self, ins, attrs, out):
        return (ins[0].lo, ins[0].hi)

    def exact(self, ins, attrs, out):
        return ins[0].exact

    def reference(self, xs, attrs):
        return xs[0]


@dataclass
class TakeBackward(OpSpec):
    dtypes: tuple = FLOATS + ("int32", "int64")

    def sample(self, ctx):
        ch = ctx.ch
        x = ctx.pick(dtypes=self.dtypes, rank=(1, 3),
                     pred=lambda v: any(D.is_static(d) and d >= 1 for d in v.shape))
        axes = [i for i, d in enumerate(x.shape) if D.is_static(d) and d >= 1]
        if not axes:
            return None
        axis = ch.choice(axes) if ch.boolean(0.8) or x.rank != 1 else None
        d = x.shape[axis if axis is not None else 0]
        n = ch.integer(1, 6)
        idx = ctx.pick(dtypes=("int32", "int64"), rank=1, new_shape=[n], new_range=(0, d - 1),
                       pred=lambda v: v.exact and 0 <= v.lo and v.hi <= d - 1)
        if not (idx.exact and 0 <= idx.lo and idx.hi <= d - 1) or not D.is_static(idx.shape[0]):
            return None
        a = axis if axis is not None else 0
        gshape = list(x.shape[:a]) + [idx.shape[0]] + list(x.shape[a + 1:])
        g = ctx.pick(dtypes=(x.dtype,), rank=len(gshape), new_shape=gshape,
                     pred=lambda v: within(v.dtype, v.lo, v.hi) and abs(v.lo) < 1e4
                     and abs(v.hi) < 1e4)
        return [g, x, idx], {"axis": axis}

    def infer(self, tys, attrs):
        return TensorTy(tys[1].shape, tys[1].dtype)

    def interval(self, ins, attrs, out):
        n = ins[2].shape[0]
        g = ins[0]
        return (min(0, n * g.lo), max(0, n * g.hi))

    def exact(self, ins, attrs, out):
        return ins[0].exact and ins[2].exact and out.dtype not in FLOATS

    def reference(self, xs, attrs):
        g, x, idx = xs
        out = np.zeros(x.shape, dtype=np.float64 if x.dtype.kind == "f" or
                       "bfloat16" in str(x.dtype) else np.int64)
        axis = attrs["axis"]
        idx = idx.astype(np.int64)
        if axis is None:
            np.add.at(out.reshape(-1), idx, g.astype(out.dtype).reshape(-1))
        else:
            moved = np.moveaxis(out, axis, 0)
            np.add.at(moved, idx, np.moveaxis(g.astype(out.dtype), axis, 0))
        return out

    def call(self, args, attrs):
        return list(args), {"axis": attrs["axis"]}


@dataclass
class AvgPool2dBackward(OpSpec):
    kind: str = "avg"

    def sample(self, ctx):
        from .nn import Pool

        fwd = Pool(f"relax.nn.{self.kind}_pool2d", nd=2, kind=self.kind, dtypes=self.dtypes)
        got = fwd.sample(ctx)
        if got is None:
            return None
        (x,), attrs = got
        if not x.static() or (self.kind == "max" and not x.exact):
            return None   # max: which element is largest must be exactly known
        attrs["dilation"] = [1, 1]
        oshape = fwd.infer([x.ty], attrs).shape
        g = ctx.pick(dtypes=(x.dtype,), rank=4, new_shape=oshape,
                     pred=lambda v: within(v.dtype, v.lo, v.hi) and abs(v.lo) < 1e4
                     and abs(v.hi) < 1e4)
        return [g, x], attrs

    def infer(self, tys, attrs):
        return TensorTy(tys[1].shape, tys[1].dtype)

    def interval(self, ins, attrs, out):
        n = max(1, attrs["pool_size"][0] * attrs["pool_size"][1])
        g = ins[0]
        return (min(0, n * g.lo), max(0, n * g.hi))

    def reference(self, xs, attrs):
        from .nn import _pool_out, _to_canon, _from_canon

        g, x = xs
        layout = attrs["layout"]
        gc = _to_canon(g.astype(np.float64), layout, "NCHW")
        xc = _to_canon(x, layout, "NCHW")
        ins = xc.shape[2:]
        ks, strides = attrs["pool_size"], attrs["strides"]
        pb, pa = attrs["padding"][:2], attrs["padding"][2:]
        osz = gc.shape[2:]
        tail = [max(0, (o - 1) * s + (k - 1) - p0 - (n - 1))
                for o, s, k, p0, n in zip(osz, strides, ks, pb, ins)]
        real = np.pad(np.ones(ins), list(zip(pb, tail)))
        inpad = np.zeros([p0 + t + n for p0, t, n in zip(pb, tail, ins)])
        inpad[tuple(slice(0, p0 + n + p1) for p0, n, p1 in zip(pb, ins, pa))] = 1
        n_real, n_inpad = np.zeros(osz), np.zeros(osz)
        sls = []
        for kpos in np.ndindex(*ks):
            sl = tuple(slice(kp, kp + s * (o - 1) + 1, s)
                       for kp, s, o in zip(kpos, strides, osz))
            sls.append(sl)
            n_real += real[sl]
            n_inpad += inpad[sl]
        gp = np.zeros(gc.shape[:2] + real.shape)
        if self.kind == "max":   # all to the first maximum of each window
            xp = np.pad(f64(xc), [(0, 0), (0, 0)] + list(zip(pb, tail)),
                        constant_values=-np.inf)
            wins = np.stack([xp[(slice(None), slice(None)) + sl] for sl in sls])
            first = np.argmax(wins, axis=0)
            for i, sl in enumerate(sls):
                gp[(slice(None), slice(None)) + sl] += np.where(first == i, gc, 0.0)
        else:
            div = n_inpad if attrs["count_include_pad"] else np.maximum(n_real, 1)
            share = gc / div
            for sl in sls:
                gp[(slice(None), slice(None)) + sl] += share
        out = gp[(slice(None), slice(None)) + tuple(slice(p0, p0 + n) for p0, n in zip(pb, ins))]
        assert _pool_out(ins[0], ks[0], strides[0], 1, pb[0], pa[0], attrs["ceil_mode"]) == osz[0]
        return _from_canon(out, layout, "NCHW")

    def call(self, args, attrs):
        return list(args), dict(attrs)


def _lowp_tol():
    from .reduce import LOWP_TOL

    return dict(LOWP_TOL)


@dataclass
class NLLLossBackward(OpSpec):
    """Inputs drawn as nll_loss's (nn.NLLLoss.sample: predictions, targets in [0, C), weights
    in [0.5, 2] half the time, ignore_index in range only without ``mean``, where it could
    leave 0 / 0), then an output gradient of nll_loss's result type."""

    tol: dict = field(default_factory=_lowp_tol)

    def sample(self, ctx):
        from .nn import NLLLoss

        fwd = NLLLoss("relax.nn.nll_loss", dtypes=self.dtypes)
        got = fwd.sample(ctx)
        if got is None:
            return None
        ins, attrs = got
        if attrs["reduction"] == "mean":
            # mean divides by sum(w'[t]), which float16 sums in float16 (measured: 1024 targets
            # of weight 1.25 give a mean 14% off): inside the low-precision accumulation budget
            # only, else the sum's rounding is all the comparison would see
            from .nn import _numel_max
            from .reduce import lowp_ok

            n = _numel_max(ins[1].shape) if ins[1].rank else 1
            if not lowp_ok(ins[0].dtype, n, 2.0 if len(ins) > 2 else 1.0):
                attrs["reduction"] = "sum"
        oty = fwd.infer([v.ty for v in ins], attrs)
        g = ctx.pick(dtypes=(ins[0].dtype,), rank=len(oty.shape), new_shape=list(oty.shape),
                     pred=lambda v: within(v.dtype, v.lo, v.hi) and abs(v.lo) < 1e4
                     and abs(v.hi) < 1e4)
        if not _same_dims(g.shape, oty.shape):
            return None
        return [g] + ins, attrs

    def infer(self, tys, attrs):
        return TensorTy(tys[1].shape, tys[1].dtype)

    def interval(self, ins, attrs, out):
        g = max(abs(ins[0].lo), abs(ins[0].hi))
        # mean: w'[t] / sum(w'[t]) <= 1 (weights positive); else |w| <= 2 or 1
        w = 1.0 if attrs["reduction"] == "mean" or len(ins) < 4 else \
            max(abs(ins[3].lo), abs(ins[3].hi))
        return (min(0.0, -g * w), max(0.0, g * w))

    def reference(self, xs, attrs):
        g, p, t = f64(xs[0]), xs[1], xs[2].astype(np.int64)
        C = p.shape[1] if p.ndim > 1 else p.shape[0]
        w = f64(xs[3]).copy() if len(xs) > 3 else np.ones(C)
        ign = attrs["ignore_index"]
        if 0 <= ign < C:
            w[ign] = 0.0
        wt = w[t]                                   # targets' shape
        red = attrs["reduction"]
        if red == "sum":
            g = np.broadcast_to(g, t.shape)
        elif red == "mean":
            g = np.broadcast_to(g, t.shape) / wt.sum()
        val = -wt * g                               # targets' shape
        if p.ndim == 1:
            out = np.zeros(C)
            out[t] = val
            return out
        onehot = np.arange(C).reshape([1, C] + [1] * (p.ndim - 2)) == np.expand_dims(t, 1)
        return np.where(onehot, np.expand_dims(val, 1), 0.0)


def _same_dims(a, b) -> bool:
    return len(a) == len(b) and all(D.same(x, y) for x, y in zip(a, b))


SPECS: list[OpSpec] = [
    Identity("relax.grad.no_grad", weight=0.3),
    Identity("relax.grad.start_checkpoint", weight=0.3),
    Identity("relax.grad.end_checkpoint", weight=0.3),
    TakeBackward("relax.grad.take_backward", weight=0.5),
    AvgPool2dBackward("relax.grad.avg_pool2d_backward", weight=0.4),
    AvgPool2dBackward("relax.grad.max_pool2d_backward", weight=0.4, kind="max",
                      discontinuous=True),
    NLLLossBackward("relax.grad.nll_loss_backward", weight=0.4),
]
