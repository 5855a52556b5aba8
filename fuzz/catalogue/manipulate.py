"""Op family: manipulate. Shape and data-movement ops (reshape, squeeze, expand_dims, concat,
split, pad, ...) and ``astype``.

Chains of these ops over dims of 1 and symbolic dims are where importer and compiler disagree
on shapes, so samplers favour 1s, negative axes and symbolic dims wherever TVM accepts them.
Pure data movement keeps the input interval and is exact when its inputs are.

Known TVM 0.27 bugs these specs reach on purpose (legal by Relax's own type inference):
* split with indices 0, repeated or descending: TOPI's "split_indices must be sorted" at build;
  with an index past the end: std::bad_alloc at run time (inference says an empty part).
* concat with axis=None: legalization passes None to topi.concatenate (TypeError).
* repeat with axis=None on a 0-d tensor: legalization indexes shape[0] (IndexError).
"""
from __future__ import annotations

import ast
import math
from dataclasses import dataclass
from typing import Optional

import numpy as np

from .. import dims as D
from ..model import TensorTy, TupleTy, ty_vars
from .spec import (ALL_DTYPES, DTYPE_MIN, FLOATS, INTS, OpSpec, ShapeArg, TupleArg,
                   Value, cast, f64, is_float, norm_axis, within)

MAX_RANK = 6


# --- helpers -------------------------------------------------------------------------------
def _finite(v: Value) -> bool:
    """A value whose interval is known: a pass-through op keeps it, and apply_op rejects
    results with unknown intervals in valid mode."""
    return within(v.dtype, v.lo, v.hi)


def _and(p, q):
    return q if p is None else (lambda v: p(v) and q(v))


def _hull(ins):
    return min(v.lo for v in ins), max(v.hi for v in ins)


def _neg(ctx, axis: int, rank: int) -> int:
    """Spell an axis negatively half of the time."""
    return axis - rank if ctx.ch.boolean(0.5) else axis


def _ones(shape) -> list[int]:
    return [i for i, d in enumerate(shape) if d == 1 and D.is_static(d)]


def _factors(d) -> list:
    """Factors of a dim whose product is the dim: "n * 4" -> ["n", 4]; static ints stay whole."""
    if D.is_static(d):
        return [d]
    out = []

    def walk(node):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
            walk(node.left)
            walk(node.right)
        elif isinstance(node, ast.Constant):
            out.append(node.value)
        else:
            out.append(ast.unparse(node))

    walk(D.parse(d))
    return out


def _split_int(ctx, d: int) -> list[int]:
    """A random factorization of a static dim into an ordered list (1 may vanish)."""
    if d == 1:
        return [] if ctx.ch.boolean(0.5) else [1]
    if d <= 3 or ctx.ch.boolean(0.4):
        return [d]
    divs = [f for f in range(2, d) if d % f == 0]
    if not divs:
        return [d]
    f = ctx.ch.choice(divs)
    return _split_int(ctx, f) + _split_int(ctx, d // f)


def _bound_dim(ctx, max_dim: int):
    """A new dim for an op's shape attribute: symbolic only over a variable some parameter
    already binds (an unbound variable would make the function ill-formed)."""
    d = ctx.dim(max_dim=max_dim)
    if D.is_static(d) or any(d in ty_vars(p.ty) for p in ctx.params):
        return d
    return ctx.ch.integer(1, max_dim)


def _eval_shape(shape, env) -> tuple:
    return tuple(D.evaluate(d, env) for d in shape)


@dataclass
class Move(OpSpec):
    """A data-movement op: any dtype, keeps the interval, exact when its inputs are."""

    dtypes: tuple = ALL_DTYPES

    def interval(self, ins, attrs, out):
        return _hull(ins)

    def exact(self, ins, attrs, out):
        return all(v.exact for v in ins)

    def pick(self, ctx, pred=None, **kw) -> Value:
        return ctx.pick(dtypes=self.dtypes, pred=_and(pred, _finite), **kw)

    def near_valid_attrs(self, ctx, ins, attrs):
        if isinstance(attrs.get("axis"), int):   # one past either end
            r = ins[0].rank + (1 if self.name == "relax.stack" else 0)
            return dict(attrs, axis=ctx.ch.choice([r, -r - 1]))
        return None


# --- reshape family ---------------------------------------------------------------------
@dataclass
class Reshape(Move):
    """Target shapes regroup the input's factors: merges, splits, inserted or dropped 1s, now
    and then in another order (still provably the same numel), and at most one -1.

    A 0 in the target copies the input dim at that position (Relay / ONNX allowzero=0
    semantics; TVM's inference and lowering both do this, the Python docstring is silent)."""

    def sample(self, ctx):
        x = self.pick(ctx, rank=(0, 4))
        atoms = []
        for d in x.shape:
            atoms += _split_int(ctx, d) if D.is_static(d) else _factors(d)
        if ctx.ch.boolean(0.2):
            atoms = ctx.ch.sample(atoms, len(atoms))
        groups: list[list] = []
        for a in atoms:
            if not groups or ctx.ch.boolean(0.5):
                groups.append([])
            groups[-1].append(a)
        shape = [D.product(g) for g in groups]
        for _ in range(ctx.ch.integer(0, 2)):
            if len(shape) < MAX_RANK and ctx.ch.boolean(0.4):
                shape.insert(ctx.ch.integer(0, len(shape)), 1)
        zeros = [i for i, d in enumerate(x.shape) if d == 0 and D.is_static(d)]
        if zeros:   # empty input: one 0 where the input has one, so copying it keeps 0
            shape = [d for d in shape if d != 0]
            shape.insert(min(zeros[0], len(shape)), 0)
            if zeros[0] > len(shape) - 1:
                return None
        else:
            same = [i for i, (a, b) in enumerate(zip(shape, x.shape)) if D.same(a, b)]
            for i in same:
                if ctx.ch.boolean(0.25):
                    shape[i] = 0
            if shape and ctx.ch.boolean(0.3):
                shape[ctx.ch.integer(0, len(shape) - 1)] = -1
        return [x], {"shape": shape}

    @staticmethod
    def _copied(shape, in_shape):
        return [in_shape[i] if d == 0 else d for i, d in enumerate(shape)]

    def infer(self, tys, attrs):
        shape = self._copied(list(attrs["shape"]), tys[0].shape)
        if -1 in shape:
            shape[shape.index(-1)] = _quotient([d for t in tys for d in t.shape],
                                               [d for d in shape if d != -1])
        return TensorTy(shape, tys[0].dtype)

    def call(self, args, attrs):
        return [args[0], ShapeArg(tuple(attrs["shape"]))], {}

    def reference(self, xs, attrs, env):
        shape = self._copied(list(attrs["shape"]), xs[0].shape)
        return xs[0].reshape([d if d == -1 else D.evaluate(d, env) for d in shape])


def _quotient(num: list, den: list):
    """prod(num) / prod(den) by cancelling symbolic factors (the -1 of a reshape)."""
    syms = [f for d in num for f in _factors(d) if not D.is_static(f)]
    k_num = math.prod(f for d in num for f in _factors(d) if D.is_static(f))
    k_den = 1
    for d in den:
        for f in _factors(d):
            if D.is_static(f):
                k_den *= f
            elif f in syms:
                syms.remove(f)
            else:   # not cancellable: leave it to TVM's arithmetic
                return D.floordiv(D.product(num), D.product(den))
    return D.product(syms + [k_num // k_den])


@dataclass
class Flatten(Move):
    def sample(self, ctx):
        return [self.pick(ctx, rank=(0, 4))], {}

    def infer(self, tys, attrs):
        return TensorTy([D.product(tys[0].shape)], tys[0].dtype)

    def reference(self, xs, attrs):
        return xs[0].reshape(-1)


@dataclass
class BatchFlatten(Move):
    def sample(self, ctx):
        return [self.pick(ctx, rank=(2, 4))], {}

    def infer(self, tys, attrs):
        s = tys[0].shape
        return TensorTy([s[0], D.product(s[1:])], tys[0].dtype)

    def reference(self, xs, attrs):
        return xs[0].reshape(xs[0].shape[0], -1)


@dataclass
class Squeeze(Move):
    """Static dims of 1 only: a symbolic dim squeezed is a run-time promise that it is 1, and
    axis=None over symbolic dims leaves the result rank unknown."""

    def sample(self, ctx):
        def has_one(v):
            return bool(_ones(v.shape))

        if ctx.candidates(self.dtypes, (0, 4), _and(has_one, _finite)):
            x = self.pick(ctx, rank=(0, 4), pred=has_one)
        else:   # a fresh input with some 1s in it
            shape = ctx.shape(ctx.ch.integer(1, 4))
            for i in ctx.ch.sample(range(len(shape)), ctx.ch.integer(1, len(shape))):
                shape[i] = 1
            x = ctx.new_param(shape, ctx.dtype(self.dtypes))
        if x.static() and ctx.ch.boolean(0.3):
            return [x], {"axis": None}
        ones = _ones(x.shape)
        k = 0 if not ones or ctx.ch.boolean(0.1) else ctx.ch.integer(1, len(ones))  # [] is a no-op
        return [x], {"axis": [_neg(ctx, a, x.rank) for a in ctx.ch.sample(ones, k)]}

    def infer(self, tys, attrs):
        s = tys[0].shape
        axes = attrs["axis"]
        drop = _ones(s) if axes is None else [norm_axis(a, len(s)) for a in axes]
        return TensorTy([d for i, d in enumerate(s) if i not in drop], tys[0].dtype)

    def reference(self, xs, attrs):
        axes = attrs["axis"]
        return np.squeeze(xs[0], axis=None if axes is None else tuple(axes))

    def near_valid_attrs(self, ctx, ins, attrs):
        s = ins[0].shape
        big = [i for i, d in enumerate(s) if not (D.is_static(d) and d == 1)]
        return dict(attrs, axis=[ctx.ch.choice(big)]) if big else None


@dataclass
class ExpandDims(Move):
    def sample(self, ctx):
        x = self.pick(ctx, rank=(0, 4))
        k = ctx.ch.integer(1, min(3, MAX_RANK - x.rank)) if x.rank < MAX_RANK else 0
        if k == 0:
            return None
        r = x.rank + k
        axes = [_neg(ctx, a, r) for a in ctx.ch.sample(range(r), k)]
        return [x], {"axis": axes}

    def infer(self, tys, attrs):
        s = list(tys[0].shape)
        r = len(s) + len(attrs["axis"])
        new = {norm_axis(a, r) for a in attrs["axis"]}
        it = iter(s)
        return TensorTy([1 if i in new else next(it) for i in range(r)], tys[0].dtype)

    def reference(self, xs, attrs):
        return np.expand_dims(xs[0], tuple(attrs["axis"]))

    def near_valid_attrs(self, ctx, ins, attrs):
        r = ins[0].rank + len(attrs["axis"])
        return dict(attrs, axis=attrs["axis"][:-1] + [ctx.ch.choice([r, -r - 1])])


@dataclass
class PermuteDims(Move):
    def sample(self, ctx):
        x = self.pick(ctx, rank=(0, 5))
        if ctx.ch.boolean(0.25):
            return [x], {"axes": None}
        perm = ctx.ch.sample(range(x.rank), x.rank)
        return [x], {"axes": [_neg(ctx, a, x.rank) if ctx.ch.boolean(0.3) else a for a in perm]}

    def infer(self, tys, attrs):
        s = tys[0].shape
        axes = attrs["axes"]
        order = list(range(len(s)))[::-1] if axes is None else [norm_axis(a, len(s)) for a in axes]
        return TensorTy([s[a] for a in order], tys[0].dtype)

    def reference(self, xs, attrs):
        axes = attrs["axes"]
        return np.transpose(xs[0], None if axes is None else [a % xs[0].ndim for a in axes])

    def near_valid_attrs(self, ctx, ins, attrs):
        r = ins[0].rank
        return dict(attrs, axes=[0] * r) if r >= 2 else None   # a repeated axis


@dataclass
class BroadcastTo(Move):
    """Dims of 1 grow (to static or symbolic sizes), new leading dims appear; others stay."""

    uses_env: bool = True

    def sample(self, ctx):
        x = self.pick(ctx, rank=(0, 4))
        shape = [_bound_dim(ctx, 5) if d == 1 and ctx.ch.boolean(0.7) else d for d in x.shape]
        lead = ctx.ch.integer(0, min(2, MAX_RANK - x.rank))
        shape = [_bound_dim(ctx, 4) for _ in range(lead)] + shape
        return [x], {"shape": shape}

    def infer(self, tys, attrs):
        return TensorTy(list(attrs["shape"]), tys[0].dtype)

    def call(self, args, attrs):
        return [args[0], ShapeArg(tuple(attrs["shape"]))], {}

    def reference(self, xs, attrs, env):
        return np.broadcast_to(xs[0], _eval_shape(attrs["shape"], env)).copy()


# --- several tensors in, or several out ---------------------------------------------------
def _others(ctx, x: Value, n: int, axis: Optional[int], min_dim: int = 0) -> list[Value]:
    """``n`` more tensors with x's dtype and shape except (for concat) along ``axis``."""

    def fits(v):
        return (v.rank == x.rank and _finite(v) and all(
            i == axis or D.same(a, b) for i, (a, b) in enumerate(zip(v.shape, x.shape))))

    out = []
    for _ in range(n):
        cands = ctx.candidates((x.dtype,), x.rank, fits)
        if cands and ctx.ch.boolean(0.6):
            out.append(ctx.ch.choice(cands))
            continue
        shape = list(x.shape)
        if axis is not None:
            shape[axis] = ctx.dim(min_dim=min_dim)
        out.append(ctx.new_param(shape, x.dtype))
    return out


@dataclass
class Concat(Move):
    def sample(self, ctx):
        x = self.pick(ctx, rank=(1, 4))
        axis = None if x.rank == 1 and ctx.ch.boolean(0.1) else ctx.ch.integer(0, x.rank - 1)
        ins = [x] + _others(ctx, x, ctx.ch.integer(0, 3), 0 if axis is None else axis)
        ins = ctx.ch.sample(ins, len(ins))
        return ins, {"axis": axis if axis is None else _neg(ctx, axis, x.rank)}

    def infer(self, tys, attrs):
        axis = norm_axis(attrs["axis"] or 0, tys[0].rank)
        s = list(tys[0].shape)
        for t in tys[1:]:
            s[axis] = D.add(s[axis], t.shape[axis])
        return TensorTy(s, tys[0].dtype)

    def call(self, args, attrs):
        return [TupleArg(tuple(args))], {"axis": attrs["axis"]}

    def reference(self, xs, attrs):
        return np.concatenate(xs, axis=attrs["axis"])


@dataclass
class Stack(Move):
    def sample(self, ctx):
        x = self.pick(ctx, rank=(0, 4))
        ins = [x] + _others(ctx, x, ctx.ch.integer(0, 3), None)
        return ctx.ch.sample(ins, len(ins)), {
            "axis": _neg(ctx, ctx.ch.integer(0, x.rank), x.rank + 1)}

    def infer(self, tys, attrs):
        s = list(tys[0].shape)
        s.insert(norm_axis(attrs["axis"], len(s) + 1), len(tys))
        return TensorTy(s, tys[0].dtype)

    def call(self, args, attrs):
        return [TupleArg(tuple(args))], {"axis": attrs["axis"]}

    def reference(self, xs, attrs):
        return np.stack(xs, axis=attrs["axis"])


def _sections(d: int, s: int) -> list[int]:
    """TVM splits into sections of ceil(d / s), the last one taking the rest."""
    c = -(-d // s)
    return [c] * (s - 1) + [d - c * (s - 1)]


@dataclass
class Split(Move):
    """The split axis is static (symbolic split sizes need max/min, and sections of a
    symbolic dim can come out negative). Indices may be unsorted, repeated or past the end:
    TVM follows numpy's slicing there."""

    def sample(self, ctx):
        def has_static(v):
            return v.rank >= 1 and any(D.is_static(d) and d >= 1 for d in v.shape)

        x = self.pick(ctx, rank=(1, 4), pred=has_static)
        if not has_static(x):
            return None
        axis = ctx.ch.choice([i for i, d in enumerate(x.shape) if D.is_static(d) and d >= 1])
        d = x.shape[axis]
        if ctx.ch.boolean(0.5):
            ok = [s for s in range(1, d + 2) if _sections(d, s)[-1] >= 0]
            ios = ctx.ch.choice(ok)
        else:
            ios = sorted(ctx.ch.sample(range(1, d + 1), ctx.ch.integer(0, 3)))  # d: empty tail
            if ctx.ch.boolean(0.1):
                # Legal in Relax, numpy semantics, but known TVM bugs (see module doc): an index
                # of 0, repeated or descending (TOPI rejects), or past the end (bad_alloc).
                edge = ctx.ch.integer(0, 3)
                if edge == 0 or not ios:
                    ios = [0] + ios
                elif edge == 1:
                    ios = ios + [ios[-1]]
                elif edge == 2:
                    ios = ios[::-1] if len(ios) > 1 else ios + [d + 1]
                else:
                    ios[-1] = d + ctx.ch.integer(1, 2)
        return [x], {"indices_or_sections": ios, "axis": _neg(ctx, axis, x.rank)}

    def _sizes(self, d, ios):
        if isinstance(ios, int):
            return _sections(d, ios)
        bounds = [0] + [min(i, d) for i in ios] + [d]
        return [max(b - a, 0) for a, b in zip(bounds, bounds[1:])]

    def infer(self, tys, attrs):
        s = tys[0].shape
        axis = norm_axis(attrs["axis"], len(s))
        sizes = self._sizes(s[axis], attrs["indices_or_sections"])
        outs = [TensorTy(s[:axis] + [k] + s[axis + 1:], tys[0].dtype) for k in sizes]
        return outs[0] if len(outs) == 1 else TupleTy(outs)

    def reference(self, xs, attrs):
        x = xs[0]
        axis = norm_axis(attrs["axis"], x.ndim)
        sizes = self._sizes(x.shape[axis], attrs["indices_or_sections"])
        starts = np.cumsum([0] + sizes[:-1])
        ios = attrs["indices_or_sections"]
        if not isinstance(ios, int):
            starts = [0] + [min(i, x.shape[axis]) for i in ios]
        outs = [np.take(x, range(a, a + k), axis=axis) for a, k in zip(starts, sizes)]
        return outs[0] if len(outs) == 1 else tuple(outs)


# --- repetition and reordering ------------------------------------------------------------
@dataclass
class Tile(Move):
    def sample(self, ctx):
        x = self.pick(ctx, rank=(0, 4))
        n = ctx.ch.integer(0, min(x.rank + 2, MAX_RANK))
        reps = [0 if ctx.ch.boolean(0.03) else ctx.ch.choice([1, 1, 2, 3]) for _ in range(n)]
        return [x], {"repeats": reps}

    def infer(self, tys, attrs):
        s, reps = list(tys[0].shape), list(attrs["repeats"])
        r = max(len(s), len(reps))
        s = [1] * (r - len(s)) + s
        reps = [1] * (r - len(reps)) + reps
        return TensorTy([D.mul(d, k) for d, k in zip(s, reps)], tys[0].dtype)

    def reference(self, xs, attrs):
        return np.tile(xs[0], tuple(attrs["repeats"])) if attrs["repeats"] else xs[0]


@dataclass
class Repeat(Move):
    def sample(self, ctx):
        x = self.pick(ctx, rank=(0, 4) if ctx.ch.boolean(0.1) else (1, 4))   # 0-d: a known bug
        axis = None
        if x.rank and ctx.ch.boolean(0.7):
            axis = _neg(ctx, ctx.ch.integer(0, x.rank - 1), x.rank)
        return [x], {"repeats": ctx.ch.integer(1, 3), "axis": axis}

    def infer(self, tys, attrs):
        s, k, axis = list(tys[0].shape), attrs["repeats"], attrs["axis"]
        if axis is None:
            return TensorTy([D.mul(D.product(s), k)], tys[0].dtype)
        a = norm_axis(axis, len(s))
        s[a] = D.mul(s[a], k)
        return TensorTy(s, tys[0].dtype)

    def reference(self, xs, attrs):
        return np.repeat(xs[0], attrs["repeats"], axis=attrs["axis"])


@dataclass
class Flip(Move):
    def sample(self, ctx):
        x = self.pick(ctx, rank=(1, 4))
        return [x], {"axis": _neg(ctx, ctx.ch.integer(0, x.rank - 1), x.rank)}

    def infer(self, tys, attrs):
        return TensorTy(tys[0].shape, tys[0].dtype)

    def reference(self, xs, attrs):
        return np.flip(xs[0], attrs["axis"])


@dataclass
class Pad(Move):
    """Constant, reflect (pad < dim), replicate (dim >= 1) and circular (pad <= dim) modes;
    TOPI's index arithmetic covers only those domains. Symbolic dims may be 1 at run time."""

    dtypes: tuple = FLOATS + INTS

    def sample(self, ctx):
        x = self.pick(ctx, rank=(1, 4))
        mode = ctx.ch.choice(["constant", "constant", "reflect", "replicate", "circular"])

        def most(d):   # largest legal pad on a dim of this size (a symbolic one may be 1)
            k = d if D.is_static(d) else 1
            return {"constant": 3, "reflect": k - 1, "replicate": 3 if k >= 1 else 0,
                    "circular": min(k, 3)}[mode]

        pw = []
        for d in x.shape:
            m = max(0, most(d))
            pw += [ctx.ch.integer(0, m) if ctx.ch.boolean(0.7) else 0 for _ in range(2)]
        attrs = {"pad_width": pw, "pad_mode": mode}
        if mode == "constant":
            lo, hi = x.lo, x.hi
            vals = [0, 1, math.floor(lo), math.ceil(hi)] + ([-1] if DTYPE_MIN.get(x.dtype, -1)
                                                           < 0 else [])
            if is_float(x.dtype):
                vals += [-1.5, 2.5]
            attrs["pad_value"] = float(ctx.ch.choice(vals))
        return [x], attrs

    def interval(self, ins, attrs, out):
        lo, hi = _hull(ins)
        pv = attrs.get("pad_value", lo)
        return min(lo, pv), max(hi, pv)

    def infer(self, tys, attrs):
        pw = attrs["pad_width"]
        return TensorTy([D.add(d, pw[2 * i] + pw[2 * i + 1]) for i, d in enumerate(tys[0].shape)],
                        tys[0].dtype)

    def call(self, args, attrs):
        return [args[0]], dict(attrs)

    def reference(self, xs, attrs):
        pw = attrs["pad_width"]
        pairs = [(pw[2 * i], pw[2 * i + 1]) for i in range(xs[0].ndim)]
        mode = attrs["pad_mode"]
        if mode == "constant":
            return np.pad(xs[0], pairs, constant_values=np.array(attrs["pad_value"]).astype(
                xs[0].dtype))
        return np.pad(xs[0], pairs, mode={"reflect": "reflect", "replicate": "edge",
                                          "circular": "wrap"}[mode])


@dataclass
class PixelShuffle(Move):
    """(..., C*r*r, H, W) -> (..., C, H*r, W*r); the channel dim must be static."""

    def sample(self, ctx):
        r = ctx.ch.integer(1, 3)
        c = ctx.ch.integer(1, 2)

        def fits(v):
            d = v.shape[-3] if v.rank >= 3 else None
            return D.is_static(d) and d >= 1 and d % (r * r) == 0

        if ctx.candidates(self.dtypes, (3, 5), _and(fits, _finite)):
            x = self.pick(ctx, rank=(3, 5), pred=fits)
        else:
            lead = ctx.shape(ctx.ch.integer(0, 2), max_dim=3)
            x = ctx.new_param(lead + [c * r * r] + ctx.shape(2, max_dim=5), ctx.dtype(self.dtypes))
        return [x], {"upscale_factor": r}

    def infer(self, tys, attrs):
        s, r = tys[0].shape, attrs["upscale_factor"]
        return TensorTy(s[:-3] + [s[-3] // (r * r), D.mul(s[-2], r), D.mul(s[-1], r)],
                        tys[0].dtype)

    def reference(self, xs, attrs):
        x, r = xs[0], attrs["upscale_factor"]
        *lead, c, h, w = x.shape
        k = len(lead)
        y = x.reshape(*lead, c // (r * r), r, r, h, w)    # (..., C, ri, rj, H, W)
        y = np.transpose(y, list(range(k)) + [k, k + 3, k + 1, k + 4, k + 2])
        return y.reshape(*lead, c // (r * r), h * r, w * r)


# --- layout_transform: one static axis split by a factor (padded), then a permutation -------
_ARITY = {
    1: lambda f: (lambda a: f(a)),
    2: lambda f: (lambda a, b: f(a, b)),
    3: lambda f: (lambda a, b, c: f(a, b, c)),
    4: lambda f: (lambda a, b, c, d: f(a, b, c, d)),
}


@dataclass
class LayoutTransform(Move):
    dtypes: tuple = FLOATS + INTS

    def sample(self, ctx):
        x = self.pick(ctx, rank=(1, 4))
        statics = [i for i, d in enumerate(x.shape) if D.is_static(d) and d >= 1]
        split = ctx.ch.choice(statics) if statics and ctx.ch.boolean(0.7) else None
        factor = ctx.ch.integer(2, 4) if split is not None else 1
        r = x.rank + (split is not None)
        attrs = {"split": split, "factor": factor, "perm": ctx.ch.sample(range(r), r)}
        if split is not None and x.shape[split] % factor:
            # Padding without pad_value is "any value" by the docs: always name one, in the
            # input's dtype kind (layout_transform turns a Python float into a float32 imm).
            pv = 0 if ctx.ch.boolean(0.5) or x.dtype == "uint8" else -1
            attrs["pad_value"] = float(pv) if is_float(x.dtype) else pv
        return [x], attrs

    def interval(self, ins, attrs, out):
        lo, hi = _hull(ins)
        s = ins[0].shape[attrs["split"]] if attrs["split"] is not None else 0
        if attrs["split"] is not None and s % attrs["factor"]:
            return min(lo, attrs["pad_value"]), max(hi, attrs["pad_value"])
        return lo, hi

    def _split_shape(self, s, attrs):
        a, f = attrs["split"], attrs["factor"]
        if a is None:
            return list(s)
        return s[:a] + [-(-s[a] // f), f] + s[a + 1:]

    def infer(self, tys, attrs):
        s = self._split_shape(list(tys[0].shape), attrs)
        return TensorTy([s[p] for p in attrs["perm"]], tys[0].dtype)

    def call(self, args, attrs):
        a, f, perm = attrs["split"], attrs["factor"], attrs["perm"]

        def fn(*ix):
            ix = list(ix)
            if a is not None:
                ix = ix[:a] + [ix[a] // f, ix[a] % f] + ix[a + 1:]
            return tuple(ix[p] for p in perm)

        kw = {}
        if "pad_value" in attrs:
            kw["pad_value"] = attrs["pad_value"]
        return [args[0], _ARITY[len(perm) - (a is not None)](fn)], kw

    def reference(self, xs, attrs):
        x, a, f = xs[0], attrs["split"], attrs["factor"]
        if a is not None:
            extra = -x.shape[a] % f
            pairs = [(0, extra if i == a else 0) for i in range(x.ndim)]
            x = np.pad(x, pairs, constant_values=np.array(attrs.get("pad_value", 0)).astype(
                x.dtype) if extra else 0)
            x = x.reshape(self._split_shape(list(x.shape), attrs))
        return np.transpose(x, attrs["perm"])


# --- astype ---------------------------------------------------------------------------------
# Integers a float type holds exactly (2 ** mantissa bits).
_EXACT_INT = {"float16": 2 ** 11, "bfloat16": 2 ** 8, "float32": 2 ** 24, "float64": 2 ** 53}
_WIDTH = {"float16": 16, "bfloat16": 16, "float32": 32, "float64": 64}


@dataclass
class Astype(OpSpec):
    """Every dtype pair. Float -> int truncates toward zero like numpy, and only inputs
    whose interval fits the target are fed (out-of-range casts are undefined in LLVM);
    float -> int and float -> bool jump, so they take exact inputs only."""

    dtypes: tuple = ALL_DTYPES
    discontinuous: bool = True

    def sample(self, ctx):
        to = ctx.dtype(ALL_DTYPES)

        def ok(v):
            if not _finite(v) or (is_float(v.dtype) and not is_float(to) and not v.exact):
                return False
            return within(to, *self.interval([v], {"dtype": to}, None))

        x = ctx.pick(dtypes=ALL_DTYPES, pred=ok,
                     new_range=(0.0, 8.0) if to == "uint8" else None)
        return ([x], {"dtype": to}) if ok(x) else None

    def infer(self, tys, attrs):
        return TensorTy(tys[0].shape, attrs["dtype"])

    def interval(self, ins, attrs, out):
        x, to = ins[0], attrs["dtype"]
        if to == "bool":
            return (0, 1)
        if is_float(x.dtype) and not is_float(to):
            return float(math.trunc(x.lo)), float(math.trunc(x.hi))
        return x.lo, x.hi

    def exact(self, ins, attrs, out):
        x, to = ins[0], attrs["dtype"]
        if not x.exact:
            return False
        if not is_float(to):
            return True
        if is_float(x.dtype):   # widening keeps every value
            return x.dtype == to or _WIDTH[to] > _WIDTH[x.dtype]
        return max(abs(x.lo), abs(x.hi)) <= _EXACT_INT[to]

    def reference(self, xs, attrs):
        x, to = xs[0], attrs["dtype"]
        if to == "bool":
            return x != 0
        y = f64(x)
        if is_float(to):
            return cast(y, to)
        return np.trunc(y).astype(to) if y.dtype.kind == "f" else y.astype(to)


# --- meshgrid / reverse_sequence ----------------------------------------------------------
@dataclass
class Meshgrid(Move):
    """relax.meshgrid(tensors, indexing): numpy.meshgrid of 1-D tensors; "xy" swaps the first
    two result dims (numpy's and PyTorch's semantics)."""

    def sample(self, ctx):
        n = ctx.ch.integer(1, 4)
        first = self.pick(ctx, rank=1)
        xs = [first] + [ctx.pick(dtypes=(first.dtype,), rank=1, pred=_finite)
                         for _ in range(n - 1)]
        if any(x.dtype != first.dtype for x in xs):
            return None
        return xs, {"indexing": ctx.ch.choice(("ij", "ij", "xy"))}

    def infer(self, tys, attrs):
        shape = [t.shape[0] for t in tys]
        if attrs["indexing"] == "xy" and len(shape) >= 2:
            shape[0], shape[1] = shape[1], shape[0]
        return TupleTy([TensorTy(list(shape), t.dtype) for t in tys])

    def call(self, args, attrs):
        return [TupleArg(tuple(args))], {"indexing": attrs["indexing"]}

    def reference(self, xs, attrs):
        return tuple(np.meshgrid(*xs, indexing=attrs["indexing"]))


@dataclass
class ReverseSequence(Move):
    """relax.reverse_sequence(data, seq_lengths, seq_axis, batch_axis): in batch b, the first
    seq_lengths[b] elements along seq_axis reversed (TensorFlow's semantics)."""

    def sample(self, ctx):
        ch = ctx.ch
        x = self.pick(ctx, rank=(2, 4), pred=lambda v: sum(
            D.is_static(d) and d >= 1 for d in v.shape) >= 2)
        axes = [i for i, d in enumerate(x.shape) if D.is_static(d) and d >= 1]
        if len(axes) < 2:
            return None
        seq, batch = ch.sample(axes, 2)
        d, b = x.shape[seq], x.shape[batch]
        lens = ctx.pick(dtypes=("int32", "int64"), rank=1, new_shape=[b], new_range=(1, d),
                        pred=lambda v: v.exact and 1 <= v.lo and v.hi <= d)
        if not (lens.exact and 1 <= lens.lo and lens.hi <= d):
            return None
        return [x, lens], {"seq_axis": _neg(ctx, seq, x.rank),
                           "batch_axis": _neg(ctx, batch, x.rank)}

    def interval(self, ins, attrs, out):
        return ins[0].lo, ins[0].hi

    def exact(self, ins, attrs, out):
        return ins[0].exact

    def infer(self, tys, attrs):
        return TensorTy(tys[0].shape, tys[0].dtype)

    def call(self, args, attrs):
        return list(args), {"seq_axis": attrs["seq_axis"], "batch_axis": attrs["batch_axis"]}

    def reference(self, xs, attrs):
        x, lens = xs
        seq, batch = norm_axis(attrs["seq_axis"], x.ndim), norm_axis(attrs["batch_axis"], x.ndim)
        out = x.copy()
        for bi, n in enumerate(lens.astype(np.int64)):
            src = [slice(None)] * x.ndim
            src[batch] = bi
            src[seq] = slice(int(n) - 1, None, -1) if n > 0 else slice(0, 0)
            dst = list(src)
            dst[seq] = slice(0, int(n))
            out[tuple(dst)] = x[tuple(src)]
        return out


SPECS: list[OpSpec] = [
    Reshape("relax.reshape", weight=2.0, uses_env=True),
    Flatten("relax.flatten"),
    BatchFlatten("relax.nn.batch_flatten", weight=0.5),
    Squeeze("relax.squeeze", weight=1.5),
    ExpandDims("relax.expand_dims", weight=1.5),
    PermuteDims("relax.permute_dims"),
    BroadcastTo("relax.broadcast_to"),
    Concat("relax.concat"),
    Split("relax.split"),
    Stack("relax.stack"),
    Tile("relax.tile", weight=0.5),
    Repeat("relax.repeat", weight=0.5),
    Flip("relax.flip", weight=0.5),
    Pad("relax.nn.pad"),
    PixelShuffle("relax.nn.pixel_shuffle", weight=0.2),
    LayoutTransform("relax.layout_transform", weight=0.5),
    Astype("relax.astype", weight=1.5),
    Meshgrid("relax.meshgrid", weight=0.4),
    ReverseSequence("relax.reverse_sequence", weight=0.4),
]
