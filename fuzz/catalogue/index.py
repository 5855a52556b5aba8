"""Op family: index. Slicing, gathers and scatters driven by integer index tensors, ``where``,
``one_hot`` and the triangle masks.

Index tensors are parameters (or values in scope) whose integer range lies inside the indexed
dim, so every valid program stays in bounds; that dim must be static to know the range.
Scatters with "update"-like reductions get no duplicate indices: their result would depend on
the order TVM applies them in.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import numpy as np

from .. import dims as D
from ..model import TensorTy
from .spec import (ALL_DTYPES, FLOATS, INTS, NUMERIC, SIGNED, OpSpec, PrimArg, ShapeArg,
                   TupleArg, Value, broadcast_dims, norm_axis)

INF = math.inf


def _hull(*vs: Value) -> tuple[float, float]:
    return (min(v.lo for v in vs), max(v.hi for v in vs))


def _static_axes(x: Value, min_dim: int = 1) -> list[int]:
    return [i for i, d in enumerate(x.shape) if D.is_static(d) and d >= min_dim]


def _pick_data(ctx, dtypes=ALL_DTYPES, rank=(1, 4)) -> Optional[Value]:
    """A tensor with at least one static dim >= 1 (index ranges come from static dims)."""
    x = ctx.pick(dtypes=dtypes, rank=rank, static=ctx.ch.boolean(0.4),
                 pred=lambda v: bool(_static_axes(v)))
    return x if _static_axes(x) else None


def _pick_index(ctx, lo: int, hi: int, shape: Optional[list] = None, rank=(0, 2),
                dtypes=INTS) -> Value:
    """An integer tensor with values in [lo, hi]: a value in scope or a new parameter."""
    dtypes = [t for t in dtypes if (t != "uint8" or lo >= 0) and (t != "int8" or hi <= 127)]
    return ctx.pick(dtypes=dtypes, rank=len(shape) if shape is not None else rank,
                    new_shape=shape, new_range=(lo, hi),
                    pred=lambda v: _idx_ok(v, lo, hi))


def _idx_ok(v: Value, lo, hi) -> bool:
    return v.exact and lo <= v.lo and v.hi <= hi


def _axis_attr(ctx, axis: int, rank: int) -> int:
    return axis - rank if ctx.ch.boolean(0.3) else axis


def _sub_shape(ctx, shape: list, keep: int) -> list:
    """``shape`` with dims other than ``keep`` possibly shrunk (static ones) for the
    gather/scatter_elements family, whose indices may be smaller than the data."""
    out = []
    for i, d in enumerate(shape):
        if i != keep and D.is_static(d) and d > 1 and ctx.ch.boolean(0.3):
            d = ctx.ch.integer(1, d)
        out.append(d)
    return out


class _DataMove(OpSpec):
    """Results are elements of the inputs: same interval, exact if the inputs are."""

    def interval(self, ins, attrs, out):
        return _hull(ins[0])

    def exact(self, ins, attrs, out):
        return all(v.exact for v in ins)


# --- strided_slice --------------------------------------------------------------------------
def _slice_len(b: int, e: int, s: int, d: int) -> int:
    # TVM canonicalizes like Python slices: negative indices count from the end, then clamp
    # to [0, d] (s > 0) or [-1, d - 1] (s < 0).
    return len(range(*slice(b, e, s).indices(d)))


def _inbound(b, e, s, d) -> bool:
    """Slice b:e:s of extent d stays in bounds, as strided_slice's assume_inbound promises."""
    return 0 <= b < d and 0 <= e <= d and (e >= b if s > 0 else e < b)


@dataclass
class StridedSlice(_DataMove):
    dtypes: tuple = ALL_DTYPES
    uses_env: bool = True

    def sample(self, ctx):
        ch = ctx.ch
        x = ctx.pick(dtypes=self.dtypes, rank=(1, 4))
        r = x.rank
        axes = ch.sample(range(r), ch.integer(1, r))
        begin, end, strides = [], [], []
        inbound = True
        for a in axes:
            d = x.shape[a]
            if not D.is_static(d):
                # A whole symbolic axis: the only slice of it whose extent TVM states as d.
                begin.append(0), end.append(d), strides.append(1)
                continue
            s = ch.choice([1, 1, 1, 2, 3, -1, -1, -2, d + 1 if d > 0 else 4])
            big = ch.choice([d + ch.integer(1, 3), 2 ** 31, 2 ** 40])
            pts = list(range(-d - 2, d + 3)) + [big, -big]
            b, e = ch.choice(pts), ch.choice(pts)
            if ch.boolean(0.5):   # mostly non-empty, in range
                if s > 0:
                    b, e = ch.integer(0, max(d - 1, 0)), ch.integer(1, d) if d else 0
                    b, e = min(b, e), max(b, e)
                else:
                    b, e = ch.integer(0, max(d - 1, 0)), ch.integer(-1, max(d - 2, -1))
                    b, e = max(b, e + 1), min(b, e)
                if ch.boolean(0.3) and d > 0:   # the same, counted from the end
                    b = b - d if 0 <= b < d else b
            if _slice_len(b, e, s, d) == 0 and ch.boolean(0.7):
                b, e = (0, d) if s > 0 else (d - 1, -d - 1)
            inbound = inbound and _inbound(b, e, s, d)
            begin.append(b), end.append(e), strides.append(s)
        attrs = {"axes": [_axis_attr(ctx, a, r) for a in axes], "begin": begin, "end": end,
                 "strides": strides if ch.boolean(0.8) or any(s != 1 for s in strides) else None,
                 "assume_inbound": inbound and ch.boolean(0.3)}
        return [x], attrs

    def _slices(self, rank, attrs, env):
        sl = [slice(None)] * rank
        strides = attrs["strides"] or [1] * len(attrs["axes"])
        for a, b, e, s in zip(attrs["axes"], attrs["begin"], attrs["end"], strides):
            sl[norm_axis(a, rank)] = slice(D.evaluate(b, env), D.evaluate(e, env), s)
        return tuple(sl)

    def infer(self, tys, attrs):
        shape = list(tys[0].shape)
        strides = attrs["strides"] or [1] * len(attrs["axes"])
        for a, b, e, s in zip(attrs["axes"], attrs["begin"], attrs["end"], strides):
            a = norm_axis(a, len(shape))
            if D.is_static(shape[a]):
                if attrs.get("assume_inbound") and not _inbound(b, e, s, shape[a]):
                    # The caller's promise: out of bounds, TVM may infer anything. Raised
                    # so the reducer never shrinks a dim below a slice promised in bounds.
                    raise ValueError(f"assume_inbound with slice {b}:{e}:{s} of extent "
                                     f"{shape[a]}")
                shape[a] = _slice_len(b, e, s, shape[a])
        return TensorTy(shape, tys[0].dtype)

    def reference(self, xs, attrs, env=None):
        return xs[0][self._slices(xs[0].ndim, attrs, env)]

    def call(self, args, attrs):
        kw = {"assume_inbound": attrs["assume_inbound"]}
        if attrs["strides"] is not None:
            kw["strides"] = list(attrs["strides"])
        return [args[0], list(attrs["axes"]), ShapeArg(tuple(attrs["begin"])),
                ShapeArg(tuple(attrs["end"]))], kw


# --- take -------------------------------------------------------------------------------
@dataclass
class Take(_DataMove):
    dtypes: tuple = ALL_DTYPES

    def sample(self, ctx):
        ch = ctx.ch
        x = _pick_data(ctx, self.dtypes)
        if x is None:
            return None
        axis = ch.choice(_static_axes(x))
        d = x.shape[axis]
        modes = ["fast", "clip", "wrap"] + (["nan"] if x.dtype in FLOATS else [])
        mode = ch.choice(modes)
        lo, hi = 0, d - 1
        if mode in ("clip", "wrap") and ch.boolean(0.6):
            lo, hi = -d - 2, d + 2  # out of range: clipped or wrapped
        idx = _pick_index(ctx, lo, hi, rank=(0, 2))
        if not _idx_ok(idx, lo, hi):
            return None
        ax = None if x.rank == 1 and ch.boolean(0.3) else _axis_attr(ctx, axis, x.rank)
        return [x, idx], {"axis": ax, "mode": mode}

    def infer(self, tys, attrs):
        x, idx = tys
        a = norm_axis(attrs["axis"] or 0, x.rank)
        return TensorTy(x.shape[:a] + idx.shape + x.shape[a + 1:], x.dtype)

    def reference(self, xs, attrs):
        x, idx = xs
        mode = {"fast": "raise", "nan": "raise"}.get(attrs["mode"], attrs["mode"])
        return np.take(x, idx.astype(np.int64), axis=attrs["axis"] or 0, mode=mode)


# --- gather_elements / gather_nd ------------------------------------------------------------
@dataclass
class GatherElements(_DataMove):
    dtypes: tuple = ALL_DTYPES

    def sample(self, ctx):
        x = _pick_data(ctx, self.dtypes)
        if x is None:
            return None
        axis = ctx.ch.choice(_static_axes(x))
        d = x.shape[axis]
        shape = _sub_shape(ctx, x.shape, -1)
        shape[axis] = ctx.ch.choice([1, 2, 3, d, ctx.ch.integer(1, 6)])
        idx = _pick_index(ctx, 0, d - 1, shape, dtypes=SIGNED)   # TVM rejects uint8 here
        if not _idx_ok(idx, 0, d - 1):
            return None
        return [x, idx], {"axis": _axis_attr(ctx, axis, x.rank)}

    def infer(self, tys, attrs):
        return TensorTy(tys[1].shape, tys[0].dtype)

    def reference(self, xs, attrs):
        x, idx = xs
        a = norm_axis(attrs["axis"], x.ndim)
        sub = x[tuple(slice(0, n) if i != a else slice(None) for i, n in enumerate(idx.shape))]
        return np.take_along_axis(sub, idx.astype(np.int64), axis=a)


@dataclass
class GatherND(_DataMove):
    dtypes: tuple = ALL_DTYPES

    def sample(self, ctx):
        ch = ctx.ch
        x = _pick_data(ctx, self.dtypes)
        if x is None:
            return None
        r = x.rank
        b = ch.integer(0, r - 1) if ch.boolean(0.3) else 0
        # indexed dims b .. b+m-1 must be static: take the longest static run from b
        m_max = 0
        while b + m_max < r and D.is_static(x.shape[b + m_max]) and x.shape[b + m_max] >= 1:
            m_max += 1
        if m_max == 0:
            return None
        m = ch.integer(1, m_max)
        hi = min(x.shape[b:b + m]) - 1
        mid = ctx.shape(ch.integer(0, 2), max_dim=4)
        idx = _pick_index(ctx, 0, hi, list(x.shape[:b]) + mid + [m], dtypes=("int64",))
        if not _idx_ok(idx, 0, hi):
            return None
        return [x, idx], {"batch_dims": b}

    def infer(self, tys, attrs):
        x, idx = tys
        m = idx.shape[-1]
        return TensorTy(idx.shape[:-1] + x.shape[attrs["batch_dims"] + m:], x.dtype)

    def reference(self, xs, attrs):
        x, idx = xs
        b = attrs["batch_dims"]
        idx = idx.astype(np.int64)
        bshape = x.shape[:b]
        out = np.empty(idx.shape[:-1] + x.shape[b + idx.shape[-1]:], dtype=x.dtype)
        for bi in np.ndindex(*bshape):
            xb, ib = x[bi], idx[bi]
            for j in np.ndindex(*ib.shape[:-1]):
                out[bi + j] = xb[tuple(ib[j])]
        return out


# --- scatters -------------------------------------------------------------------------------
_ORDERED = ("update", "mean")   # results depend on the order of duplicate updates


def _scatter_interval(data: Value, upd: Value, reduction: str, count) -> tuple:
    """Bounds after at most ``count`` updates land on one element."""
    if reduction in ("update", "mean", "min", "max"):
        return _hull(data, upd)
    if not isinstance(count, int):
        return (-INF, INF)
    if reduction == "add":
        return (data.lo + count * min(upd.lo, 0), data.hi + count * max(upd.hi, 0))
    m = max(abs(data.lo), abs(data.hi)) * max(abs(upd.lo), abs(upd.hi), 1) ** count
    return (-m, m)


def _trunc_mean(a, b):
    # TVM's mean step is (out + u) / 2: truncating division for integers.
    if a.dtype.kind in "iu":
        s = a.astype(np.int64) + b.astype(np.int64)
        return (np.sign(s) * (np.abs(s) // 2)).astype(a.dtype)
    return (a + b) / 2


def _reduce(reduction: str):
    return {"update": lambda a, b: b, "add": lambda a, b: a + b, "mul": lambda a, b: a * b,
            "min": np.minimum, "max": np.maximum, "mean": _trunc_mean}[reduction]


@dataclass
class _Scatter(OpSpec):
    """What scatter_elements and scatter_nd share: the result is the data's type, and it is
    exact when nothing is rounded (update/min/max, or integers)."""

    def infer(self, tys, attrs):
        return TensorTy(tys[0].shape, tys[0].dtype)

    def exact(self, ins, attrs, out):
        return all(v.exact for v in ins) and (
            attrs["reduction"] in ("update", "min", "max") or out.dtype not in FLOATS)


@dataclass
class ScatterElements(_Scatter):
    dtypes: tuple = NUMERIC

    def sample(self, ctx):
        ch = ctx.ch
        x = _pick_data(ctx, self.dtypes)
        if x is None:
            return None
        red = ch.choice(["update", "add", "mul", "mean", "min", "max"])
        axis = ch.choice(_static_axes(x))
        d = x.shape[axis]
        # TVM's scatter_elements needs indices equal to data off the axis (topi: "data,
        # indices, updates have the same shape"; smaller ones are silently mis-addressed).
        shape = list(x.shape)
        # one update per line along the axis unless the reduction is order-independent
        shape[axis] = 1 if red in _ORDERED else ch.choice([1, 2, 3, d])
        idx = _pick_index(ctx, 0, d - 1, shape)
        if not _idx_ok(idx, 0, d - 1):
            return None
        upd = ctx.pick(dtypes=(x.dtype,), rank=len(shape), new_shape=shape)
        return [x, idx, upd], {"axis": _axis_attr(ctx, axis, x.rank), "reduction": red}


    def interval(self, ins, attrs, out):
        x, idx, upd = ins
        a = norm_axis(attrs["axis"], x.rank)
        return _scatter_interval(x, upd, attrs["reduction"], idx.shape[a])


    def reference(self, xs, attrs):
        x, idx, upd = xs
        f = _reduce(attrs["reduction"])
        out = x.copy() if x.dtype.kind in "iub" else x.astype(np.float64)
        a = norm_axis(attrs["axis"], x.ndim)
        for pos in np.ndindex(*idx.shape):   # C order: the axis loop is innermost-serial
            tgt = list(pos)
            tgt[a] = int(idx[pos])
            tgt = tuple(tgt)
            out[tgt] = f(out[tgt], upd[pos])
        return out


@dataclass
class ScatterND(_Scatter):
    dtypes: tuple = NUMERIC

    def sample(self, ctx):
        ch = ctx.ch
        x = _pick_data(ctx, self.dtypes)
        if x is None:
            return None
        r = x.rank
        m_max = 0
        while m_max < r and D.is_static(x.shape[m_max]) and x.shape[m_max] >= 1:
            m_max += 1
        if m_max == 0:
            return None
        m = ch.integer(1, m_max)
        hi = min(x.shape[:m]) - 1
        red = ch.choice(["update", "add", "mul", "min", "max"])
        lead = ctx.shape(ch.integer(0, 2), static=True, max_dim=4)
        if red == "update":
            lead = [1] * len(lead)   # one index tuple: no duplicates
        idx = _pick_index(ctx, 0, hi, lead + [m])
        if not _idx_ok(idx, 0, hi):
            return None
        ushape = lead + list(x.shape[m:])
        upd = ctx.pick(dtypes=(x.dtype,), rank=len(ushape), new_shape=ushape)
        return [x, idx, upd], {"reduction": red}


    def interval(self, ins, attrs, out):
        x, idx, upd = ins
        return _scatter_interval(x, upd, attrs["reduction"], D.product(idx.shape[:-1]))


    def reference(self, xs, attrs):
        x, idx, upd = xs
        f = _reduce(attrs["reduction"])
        out = x.copy() if x.dtype.kind in "iub" else x.astype(np.float64)
        for pos in np.ndindex(*idx.shape[:-1]):
            tgt = tuple(int(i) for i in idx[pos])
            out[tgt] = f(out[tgt], upd[pos])
        return out


@dataclass
class SliceScatter(OpSpec):
    dtypes: tuple = ALL_DTYPES

    def sample(self, ctx):
        ch = ctx.ch
        x = _pick_data(ctx, self.dtypes)
        if x is None:
            return None
        axis = ch.choice(_static_axes(x))
        d = x.shape[axis]
        start = ch.integer(0, d - 1)
        end = ch.integer(start + 1, d)
        if ch.boolean(0.3):
            start, end = 0, d
        step = ch.choice([1, 1, 2, 3, d])
        shape = list(x.shape)
        shape[axis] = len(range(start, end, step))
        src = ctx.pick(dtypes=(x.dtype,), rank=len(shape), new_shape=shape)
        return [x, src], {"start": start, "end": end, "step": step,
                          "axis": _axis_attr(ctx, axis, x.rank)}

    def infer(self, tys, attrs):
        return TensorTy(tys[0].shape, tys[0].dtype)

    def interval(self, ins, attrs, out):
        return _hull(*ins)

    def exact(self, ins, attrs, out):
        return all(v.exact for v in ins)

    def reference(self, xs, attrs):
        x, src = xs
        out = x.copy()
        sl = [slice(None)] * x.ndim
        sl[norm_axis(attrs["axis"], x.ndim)] = slice(attrs["start"], attrs["end"], attrs["step"])
        out[tuple(sl)] = src
        return out

    def call(self, args, attrs):
        return list(args), {k: attrs[k] for k in ("start", "end", "step", "axis")}


# --- index_tensor / index_put -------------------------------------------------------------
def _index_tuple(ctx, x: Value, k: int, allow_neg: bool = False, static: bool = False,
                 dtypes=INTS):
    """``k`` integer tensors indexing the first k dims of ``x`` (all static), with shapes that
    broadcast together; returns (tensors, broadcast shape) or None."""
    ch = ctx.ch
    base = ctx.shape(ch.integer(1, 2), static=static, max_dim=5)
    idxs = []
    for i in range(k):
        d = x.shape[i]
        lo, hi = (-d, d - 1) if allow_neg else (0, d - 1)
        shape = [1 if ch.boolean(0.25) else s for s in base]
        if len(shape) > 1 and ch.boolean(0.2):
            shape = shape[1:]
        v = _pick_index(ctx, lo, hi, shape, dtypes=dtypes)
        if not _idx_ok(v, lo, hi):
            return None
        idxs.append(v)
    b = idxs[0].shape
    for v in idxs[1:]:
        b = broadcast_dims(b, v.shape)
        if b is None:
            return None
    return idxs, b


@dataclass
class IndexTensor(_DataMove):
    dtypes: tuple = ALL_DTYPES

    def sample(self, ctx):
        x = _pick_data(ctx, self.dtypes)
        if x is None:
            return None
        k = 0
        while k < x.rank and D.is_static(x.shape[k]) and x.shape[k] >= 1:
            k += 1
        if k == 0:
            return None
        got = _index_tuple(ctx, x, ctx.ch.integer(1, k), dtypes=SIGNED)  # TVM rejects uint8
        if got is None:
            return None
        return [x] + got[0], {}

    def infer(self, tys, attrs):
        b = tys[1].shape
        for t in tys[2:]:
            b = broadcast_dims(b, t.shape)
        return TensorTy(b + tys[0].shape[len(tys) - 1:], tys[0].dtype)

    def reference(self, xs, attrs):
        return xs[0][tuple(i.astype(np.int64) for i in xs[1:])]

    def call(self, args, attrs):
        return [args[0], TupleArg(tuple(args[1:]))], {}


@dataclass
class IndexPut(OpSpec):
    dtypes: tuple = NUMERIC

    def sample(self, ctx):
        ch = ctx.ch
        x = ctx.pick(dtypes=self.dtypes, rank=(1, 3), static=True)
        if not x.static() or min(x.shape) < 1:
            return None
        acc = ch.boolean(0.5)
        got = _index_tuple(ctx, x, x.rank, allow_neg=True, static=True)
        if got is None:
            return None
        idxs, b = got
        if b is None or not all(D.is_static(d) for d in b) or (not acc and math.prod(b) > 1):
            return None   # duplicate positions would make the result order-dependent
        vals = ctx.pick(dtypes=(x.dtype,), rank=len(b), new_shape=b)
        return [x] + idxs + [vals], {"accumulate": acc}

    def infer(self, tys, attrs):
        return TensorTy(tys[0].shape, tys[0].dtype)

    def interval(self, ins, attrs, out):
        x, vals = ins[0], ins[-1]
        if not attrs["accumulate"]:
            return _hull(x, vals)
        n = D.product(vals.shape)
        return _scatter_interval(x, vals, "add", n)

    def exact(self, ins, attrs, out):
        return all(v.exact for v in ins) and (not attrs["accumulate"] or
                                              out.dtype not in FLOATS)

    def reference(self, xs, attrs):
        x, idxs, vals = xs[0], tuple(i.astype(np.int64) for i in xs[1:-1]), xs[-1]
        out = x.copy() if x.dtype.kind in "iub" else x.astype(np.float64)
        if attrs["accumulate"]:
            np.add.at(out, idxs, vals)
        else:
            out[idxs] = vals
        return out

    def call(self, args, attrs):
        return [args[0], TupleArg(tuple(args[1:-1])), args[-1]], dict(attrs)


# --- where, one_hot, tril/triu ------------------------------------------------------------
@dataclass
class Where(OpSpec):
    dtypes: tuple = ALL_DTYPES

    def sample(self, ctx):
        x1 = ctx.pick(dtypes=self.dtypes)
        cond = ctx.pick_broadcast(x1, dtypes=("bool",), pred=lambda v: v.exact)
        b = broadcast_dims(x1.shape, cond.shape)
        if b is None or not cond.exact:
            return None
        x2 = ctx.pick_broadcast(Value("", TensorTy(b, x1.dtype)))
        if broadcast_dims(b, x2.shape) is None:
            return None
        if ctx.ch.boolean(0.5):
            x1, x2 = x2, x1
        return [cond, x1, x2], {}

    def infer(self, tys, attrs):
        c, a, b = tys
        return TensorTy(broadcast_dims(broadcast_dims(c.shape, a.shape), b.shape), a.dtype)

    def interval(self, ins, attrs, out):
        return _hull(ins[1], ins[2])

    def exact(self, ins, attrs, out):
        return all(v.exact for v in ins)

    def reference(self, xs, attrs):
        return np.where(*xs)


@dataclass
class OneHot(OpSpec):
    dtypes: tuple = INTS

    def sample(self, ctx):
        ch = ctx.ch
        depth = ch.choice([1, 2, 3, 4, 6, ch.integer(1, 16)])
        lo, hi = (0, depth - 1) if ch.boolean(0.7) else (-2, depth + 1)  # outside: all off
        idx = _pick_index(ctx, lo, hi, rank=(0, 3))
        if not _idx_ok(idx, lo, hi):
            return None
        dtype = ctx.dtype(NUMERIC)
        if dtype in FLOATS:
            on, off = ch.choice([(1.0, 0.0), (2.5, -1.0), (-0.5, 0.25)])
        else:
            on, off = ch.choice([(1, 0), (3, -1), (0, 7)])
            if dtype == "uint8":
                on, off = abs(on), abs(off)
        axis = ch.integer(-1, idx.rank)
        return [idx], {"on_value": on, "off_value": off, "depth": depth, "axis": axis,
                       "dtype": dtype}

    def infer(self, tys, attrs):
        shape = list(tys[0].shape)
        a = attrs["axis"]
        shape.insert(len(shape) if a == -1 else a, attrs["depth"])
        return TensorTy(shape, attrs["dtype"])

    def interval(self, ins, attrs, out):
        on, off = attrs["on_value"], attrs["off_value"]
        return (min(on, off), max(on, off))

    def exact(self, ins, attrs, out):
        return ins[0].exact

    def reference(self, xs, attrs):
        idx = xs[0].astype(np.int64)
        a = attrs["axis"]
        a = idx.ndim if a == -1 else a
        hot = np.expand_dims(idx, a) == np.arange(attrs["depth"]).reshape(
            [-1] + [1] * (idx.ndim - a))
        return np.where(hot, attrs["on_value"], attrs["off_value"])

    def call(self, args, attrs):
        dt = attrs["dtype"]
        return [args[0], PrimArg(attrs["on_value"], dt), PrimArg(attrs["off_value"], dt),
                attrs["depth"], attrs["axis"]], {}


@dataclass
class Trilu(OpSpec):
    dtypes: tuple = ALL_DTYPES
    upper: bool = False

    def sample(self, ctx):
        x = ctx.pick(dtypes=self.dtypes, rank=(2, 4))
        k = ctx.ch.choice([0, 0, 1, -1, 2, -2, 5, -7])
        return [x], {"k": k}

    def infer(self, tys, attrs):
        return TensorTy(tys[0].shape, tys[0].dtype)

    def interval(self, ins, attrs, out):
        return (min(ins[0].lo, 0), max(ins[0].hi, 0))

    def exact(self, ins, attrs, out):
        return ins[0].exact

    def reference(self, xs, attrs):
        return (np.triu if self.upper else np.tril)(xs[0], attrs["k"])


SPECS: list[OpSpec] = [
    StridedSlice("relax.strided_slice", weight=2.0),
    Take("relax.take", weight=1.5),
    GatherElements("relax.gather_elements"),
    GatherND("relax.gather_nd"),
    ScatterElements("relax.scatter_elements"),
    ScatterND("relax.scatter_nd"),
    SliceScatter("relax.slice_scatter", weight=0.5),
    IndexTensor("relax.index_tensor", weight=0.5),
    IndexPut("relax.index_put", weight=0.5),
    Where("relax.where", weight=1.5),
    OneHot("relax.one_hot", weight=0.5),
    Trilu("relax.tril"),
    Trilu("relax.triu", upper=True),
]
