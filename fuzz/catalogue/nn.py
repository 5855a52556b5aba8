"""Op family: nn. Convolutions (and transposed), pooling, adaptive pooling, softmax, the
normalizations, attention, prelu, dropout and the losses. (The elementwise activations of
``relax.nn`` live in elementwise.py.)

Spatial ops take layouts as strings: "NCHW" data, "OIHW" kernel (conv), "IOHW" (transposed
conv). References transpose to the canonical layout, compute in float64 (int64 for integer
convs) with one numpy op per kernel position, and transpose back.
"""
from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass

import numpy as np

from .. import dims as D
from ..model import TensorTy, TupleTy
from .spec import DEFAULT_TOL, FLOATS, INTS, OpSpec, cast, f64, is_float, norm_axis

SPATIAL = {1: "W", 2: "HW", 3: "DHW"}
NORM_DTYPES = ("float32", "float16")  # topi layer/group/instance_norm ICHECK these two only
# Probability of legal attribute choices that hit suspected TVM bugs (listed where used), kept
# low so that they do not drown other findings; tests set it to 0 to check the rest.
KNOWN_BUG_P = 0.1


# --- helpers -------------------------------------------------------------------------------
@functools.lru_cache(maxsize=4096)
def _dim_range(d) -> tuple[int, int]:
    """(min, max) of a dim over the bindings of its symbolic vars (fuzz.inputs uses 1..8)."""
    if isinstance(d, int):
        return d, d
    vs = D.free_vars(d)
    vals = [D.evaluate(d, dict(zip(vs, c)))
            for c in itertools.product(range(1, 9), repeat=len(vs))]
    return min(vals), max(vals)


def _numel_max(shape) -> int:
    return math.prod(_dim_range(d)[1] for d in shape)


def _finite(v) -> bool:
    return math.isfinite(v.lo) and math.isfinite(v.hi)


def _absmax(v) -> float:
    return max(abs(v.lo), abs(v.hi))


def _bounded(limit):
    return lambda v: _finite(v) and _absmax(v) <= limit


def _dt(x: np.ndarray) -> str:
    return "bfloat16" if "bfloat16" in str(x.dtype) else str(x.dtype)


def _acc(x: np.ndarray) -> np.ndarray:
    """Float64 for floats, int64 for integers: exact accumulation for the reference."""
    return f64(x) if x.dtype.kind == "f" or "bfloat16" in str(x.dtype) else x.astype(np.int64)


def _small_dim(ctx, hi: int, sym: bool = True):
    """A small dim: often 1, sometimes symbolic (1..8 at run time), else 2..hi."""
    r = ctx.ch.integer(0, 99)
    if r < 20 or hi < 2:
        return 1
    if r < 35 and sym and ctx.allow_sym:
        return ctx.ch.choice(ctx.sym_names)
    return ctx.ch.integer(2, hi)


def _pick(ctx, dtypes, rank, pred, make_shape, new_range=None, fresh_p=0.25):
    """A value in scope that satisfies ``pred`` (recent ones preferred), or a new parameter
    whose shape ``make_shape()`` builds (shapes that a generic ``ctx.pick`` cannot express)."""
    cands = ctx.candidates(dtypes, rank, pred)
    if cands and not ctx.ch.boolean(fresh_p):
        return cands[-1] if ctx.ch.boolean(0.5) else ctx.ch.choice(cands)
    dtype = ctx.dtype(dtypes)
    lo, hi = new_range or (None, None)
    return ctx.new_param(make_shape(), dtype, lo, hi)


def _spatial_ok(d, hi: int) -> bool:
    lo_, hi_ = _dim_range(d)
    return lo_ >= 1 and hi_ <= hi


def _to_canon(x, layout: str, canon: str):
    return np.transpose(x, [layout.index(c) for c in canon])


def _from_canon(x, layout: str, canon: str):
    return np.transpose(x, [canon.index(c) for c in layout])


def _layout_pred(layout, nd, smax, chan_max=None):
    """Rank nd+2, spatial dims in 1..smax, channel static in 1..chan_max (when given)."""
    def ok(v):
        if v.rank != nd + 2 or not _finite(v):
            return False
        if not all(_spatial_ok(v.shape[layout.index(c)], smax) for c in SPATIAL[nd]):
            return False
        c = v.shape[layout.index("C")]
        if chan_max is None:
            return _dim_range(c)[1] <= 8
        return isinstance(c, int) and 1 <= c <= chan_max

    return ok


def _layout_shape(ctx, layout, nd, smax, static_spatial=False):
    def make():
        dims = {"N": _small_dim(ctx, 2, sym=not static_spatial),
                "C": ctx.ch.choice([1, 2, 3, 4, 8])}
        for c in SPATIAL[nd]:
            dims[c] = _small_dim(ctx, smax, sym=not static_spatial and smax >= 8)
        return [dims[c] for c in layout]

    return make


# --- convolution ---------------------------------------------------------------------------
@dataclass
class Conv(OpSpec):
    """conv{1,2,3}d and conv{1,2,3}d_transpose. Channels <= 8, spatial <= 10 (5 in 3-D)."""

    nd: int = 2
    transpose: bool = False

    def _layouts(self):
        sp = SPATIAL[self.nd]
        if self.transpose:  # the legalizer handles the canonical layouts only
            return [("NC" + sp, "IO" + sp)]
        return [("NC" + sp, "OI" + sp)] * 3 + [("N" + sp + "C", sp + "IO"),
                                              ("N" + sp + "C", "O" + sp + "I"),
                                              ("NC" + sp, sp + "IO")]

    def sample(self, ctx):
        ch, nd = ctx.ch, self.nd
        dl, kl = ch.choice(self._layouts())
        smax = 10 if nd < 3 else 5
        # Transposed conv: relax documents symbolic shapes as not fully supported; keep static.
        ok = _layout_pred(dl, nd, smax, chan_max=8)
        pred = (lambda v: ok(v) and v.static()) if self.transpose else ok
        x = _pick(ctx, self.dtypes, nd + 2, pred,
                  _layout_shape(ctx, dl, nd, smax, static_spatial=self.transpose))
        C = x.shape[dl.index("C")]
        divs = [g for g in range(1, C + 1) if C % g == 0]
        groups = 1 if ch.boolean(0.5) else ch.choice(divs)
        per_group = ch.integer(1, max(1, 8 // groups))   # output channels per group
        ks, strides, dil, pb, pa, opad = [], [], [], [], [], []
        for c in SPATIAL[nd]:
            lo = _dim_range(x.shape[dl.index(c)])[0]
            for _ in range(8):
                k, s, d = ch.choice([1, 1, 2, 3]), ch.choice([1, 1, 2, 3]), ch.choice([1, 1, 2])
                p0 = ch.integer(0, 2) if ch.boolean(0.5) else 0
                p1 = p0 if ch.boolean(0.6) else ch.integer(0, 2)   # asymmetric padding
                op = ch.integer(0, s - 1) if self.transpose and ch.boolean(0.5) else 0
                if self.transpose:
                    ok_ = (lo - 1) * s - p0 - p1 + d * (k - 1) + op + 1 >= 1
                else:
                    ok_ = lo + p0 + p1 - d * (k - 1) - 1 >= 0
                if ok_:
                    break
            else:
                k, s, d, p0, p1, op = 1, 1, 1, 0, 0, 0
            ks.append(k), strides.append(s), dil.append(d), pb.append(p0), pa.append(p1)
            opad.append(op)
        dtype = x.dtype
        out_dtype = None
        if dtype == "int8":
            out_dtype = "int32"       # int8 products summed over up to 72 terms overflow int8
        elif dtype == "float16" and ch.boolean(0.3):
            out_dtype = "float32"     # mixed precision
        wdims = dict(zip(SPATIAL[nd], ks))
        if self.transpose:
            wdims.update(I=C, O=per_group)
        else:
            wdims.update(O=per_group * groups, I=C // groups)
        w = ctx.new_param([wdims[c] for c in kl], dtype)
        attrs = {"strides": strides, "padding": pb + pa, "dilation": dil, "groups": groups,
                 "data_layout": dl, "kernel_layout": kl, "out_dtype": out_dtype}
        if self.transpose:
            attrs["output_padding"] = opad
        return [x, w], attrs

    def infer(self, tys, attrs):
        x, w = tys
        nd, dl, kl = self.nd, attrs["data_layout"], attrs["kernel_layout"]
        xs, ws = dict(zip(dl, x.shape)), dict(zip(kl, w.shape))
        out = {"N": xs["N"]}
        out["C"] = D.mul(ws["O"], attrs["groups"]) if self.transpose else ws["O"]
        for i, c in enumerate(SPATIAL[nd]):
            k, s, d = ws[c], attrs["strides"][i], attrs["dilation"][i]
            p = attrs["padding"][i] + attrs["padding"][i + nd]
            if self.transpose:
                extra = -p + d * (k - 1) + attrs["output_padding"][i] + 1
                out[c] = D.add(D.mul(D.add(xs[c], -1), s), extra)
            else:
                out[c] = D.add(D.floordiv(D.add(xs[c], p - d * (k - 1) - 1), s), 1)
        return TensorTy([out[c] for c in dl], attrs["out_dtype"] or x.dtype)

    def interval(self, ins, attrs, out):
        x, w = ins
        kl = attrs["kernel_layout"]
        k = math.prod(w.shape[kl.index(c)] for c in SPATIAL[self.nd])
        cin = w.shape[kl.index("I")]   # input channels per group, both kinds
        if self.transpose:
            cin = cin // attrs["groups"]
        b = cin * k * _absmax(x) * _absmax(w)
        return (-b, b)

    def reference(self, xs, attrs):
        x, w = xs
        nd, dl, kl = self.nd, attrs["data_layout"], attrs["kernel_layout"]
        sp = SPATIAL[nd]
        xc = _acc(_to_canon(x, dl, "NC" + sp))
        wc = _acc(_to_canon(w, kl, ("IO" if self.transpose else "OI") + sp))
        pad = attrs["padding"]
        args = (attrs["strides"], pad[:nd], pad[nd:], attrs["dilation"], attrs["groups"])
        if self.transpose:
            y = _conv_transpose_nd(xc, wc, *args, attrs["output_padding"])
        else:
            y = _conv_nd(xc, wc, *args)
        return cast(_from_canon(y, dl, "NC" + sp), attrs["out_dtype"] or _dt(x))


def _conv_nd(x, w, strides, pb, pa, dil, groups):
    """x (N, C, *S), w (O, C/groups, *K) -> (N, O, *S_out)."""
    N, O, cg, ks = x.shape[0], w.shape[0], w.shape[1], w.shape[2:]
    og = O // groups
    xp = np.pad(x, [(0, 0), (0, 0)] + list(zip(pb, pa)))
    osz = [(xp.shape[2 + i] - dil[i] * (k - 1) - 1) // strides[i] + 1 for i, k in enumerate(ks)]
    out = np.zeros((N, O, *osz), dtype=x.dtype)
    for kpos in np.ndindex(*ks):
        sl = tuple(slice(kp * d, kp * d + s * (o - 1) + 1, s)
                   for kp, d, s, o in zip(kpos, dil, strides, osz))
        patch = xp[(slice(None), slice(None)) + sl]
        for g in range(groups):
            wg = w[(slice(g * og, (g + 1) * og), slice(None)) + kpos]
            out[:, g * og:(g + 1) * og] += np.einsum(
                "nc...,oc->no...", patch[:, g * cg:(g + 1) * cg], wg)
    return out


def _conv_transpose_nd(x, w, strides, pb, pa, dil, groups, opad):
    """x (N, C, *S), w (C, O/groups, *K) -> (N, O, *S_out): each input element scatters
    w * x to out[i * stride + k * dilation - pad_before]; output_padding extends the end."""
    N, C, ins = x.shape[0], x.shape[1], x.shape[2:]
    og, ks = w.shape[1], w.shape[2:]
    cg = C // groups
    outl = [(n - 1) * s - p0 - p1 + d * (k - 1) + op + 1
            for n, s, p0, p1, d, k, op in zip(ins, strides, pb, pa, dil, ks, opad)]
    full = [max((n - 1) * s + d * (k - 1) + 1, p0 + o)
            for n, s, d, k, p0, o in zip(ins, strides, dil, ks, pb, outl)]
    buf = np.zeros((N, og * groups, *full), dtype=x.dtype)
    for kpos in np.ndindex(*ks):
        sl = tuple(slice(kp * d, kp * d + s * (n - 1) + 1, s)
                   for kp, d, s, n in zip(kpos, dil, strides, ins))
        for g in range(groups):
            wg = w[(slice(g * cg, (g + 1) * cg), slice(None)) + kpos]
            buf[(slice(None), slice(g * og, (g + 1) * og)) + sl] += np.einsum(
                "nc...,co->no...", x[:, g * cg:(g + 1) * cg], wg)
    return buf[(slice(None), slice(None)) + tuple(slice(p, p + o) for p, o in zip(pb, outl))]


# --- pooling -------------------------------------------------------------------------------
def _pool_out(n: int, k, s, d, p0, p1, ceil_mode) -> int:
    """TVM's pooled length (static n); ceil mode drops a last window that would start in the
    trailing padding (PyTorch's rule, as relax's shape inference and topi do)."""
    num = n + p0 + p1 - d * (k - 1) - 1
    if ceil_mode:
        num += s - 1
    out = num // s + 1
    if ceil_mode and (out - 1) * s >= n + p0:
        out -= 1
    return out


@dataclass
class Pool(OpSpec):
    """max_pool / avg_pool in 1-3 D."""

    nd: int = 2
    kind: str = "max"

    def sample(self, ctx):
        ch, nd = ctx.ch, self.nd
        sp = SPATIAL[nd]
        layout = ch.choice(["NC" + sp, "NC" + sp, "N" + sp + "C"])
        smax = 10 if nd < 3 else 5
        x = _pick(ctx, self.dtypes, nd + 2, _layout_pred(layout, nd, smax),
                  _layout_shape(ctx, layout, nd, smax))
        spatial = [x.shape[layout.index(c)] for c in sp]
        static = all(isinstance(n, int) for n in spatial)
        ceil_mode = static and ch.boolean(0.3)     # ceil-mode shapes are a Select when symbolic
        ks, ss, ds, pb, pa = [], [], [], [], []
        for n in spatial:
            lo = _dim_range(n)[0]
            for _ in range(8):
                k, s = ch.choice([1, 2, 2, 3]), ch.choice([1, 1, 2, 3])
                d = ch.choice([1, 1, 1, 2])
                p0 = ch.integer(0, 2) if ch.boolean(0.5) else 0
                p1 = p0 if ch.boolean(0.6) else ch.integer(0, 2)
                if self.kind == "max" and (p0 or p1):
                    # Every max window must hold an input element (else the result is the
                    # dtype's lowest value): contiguous windows with pads < k always do.
                    if d > 1 and not static:
                        p0 = p1 = 0
                    p0, p1 = min(p0, k - 1), min(p1, k - 1)
                if lo + p0 + p1 - d * (k - 1) - 1 < 0:
                    continue
                if self.kind == "max" and static and d > 1 and not _windows_hit(
                        n, k, s, d, p0, p1, ceil_mode):
                    continue
                break
            else:
                k, s, d, p0, p1 = 1, 1, 1, 0, 0
            ks.append(k), ss.append(s), ds.append(d), pb.append(p0), pa.append(p1)
        attrs = {"pool_size": ks, "strides": ss, "padding": pb + pa, "dilation": ds,
                 "ceil_mode": ceil_mode, "count_include_pad": ch.boolean(0.5),
                 "layout": layout}
        return [x], attrs

    def infer(self, tys, attrs):
        x = tys[0]
        nd, layout = self.nd, attrs["layout"]
        shape = list(x.shape)
        for i, c in enumerate(SPATIAL[nd]):
            a = layout.index(c)
            k, s, d = attrs["pool_size"][i], attrs["strides"][i], attrs["dilation"][i]
            p0, p1 = attrs["padding"][i], attrs["padding"][i + nd]
            if isinstance(shape[a], int):
                shape[a] = _pool_out(shape[a], k, s, d, p0, p1, attrs["ceil_mode"])
            else:
                shape[a] = D.add(D.floordiv(D.add(shape[a], p0 + p1 - d * (k - 1) - 1), s), 1)
        return TensorTy(shape, x.dtype)

    def interval(self, ins, attrs, out):
        x = ins[0]
        if self.kind == "max":
            return (x.lo, x.hi)
        # Windows may be padding only (avg 0) or average padding zeros in.
        return (min(x.lo, 0), max(x.hi, 0))

    def exact(self, ins, attrs, out):
        return all(v.exact for v in ins) and (self.kind == "max" or not is_float(out.dtype))

    def reference(self, xs, attrs):
        x = xs[0]
        nd, layout = self.nd, attrs["layout"]
        canon = "NC" + SPATIAL[nd]
        xc = _acc(_to_canon(x, layout, canon))
        y = _pool_nd(xc, self.kind, attrs["pool_size"], attrs["strides"], attrs["dilation"],
                     attrs["padding"][:nd], attrs["padding"][nd:], attrs["ceil_mode"],
                     attrs["count_include_pad"])
        return cast(_from_canon(y, layout, canon), _dt(x))


def _windows_hit(n, k, s, d, p0, p1, ceil_mode) -> bool:
    out = _pool_out(n, k, s, d, p0, p1, ceil_mode)
    return all(any(0 <= o * s - p0 + j * d < n for j in range(k)) for o in range(out))


def _pool_nd(x, kind, ks, strides, dil, pb, pa, ceil_mode, count_include_pad):
    """x (N, C, *S). avg divides by the window's elements inside the input (count_include_pad
    False, at least 1) or inside the padded input (True; ceil mode's extra tail not counted)."""
    ins = x.shape[2:]
    osz = [_pool_out(n, k, s, d, p0, p1, ceil_mode)
           for n, k, s, d, p0, p1 in zip(ins, ks, strides, dil, pb, pa)]
    # Pad enough for the last window; masks tell input and declared-padding positions apart.
    tail = [max(0, (o - 1) * s + (k - 1) * d - p0 - (n - 1))
            for o, s, k, d, p0, n in zip(osz, strides, ks, dil, pb, ins)]
    widths = [(0, 0), (0, 0)] + list(zip(pb, tail))
    fill = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
    xp = np.pad(x, widths, constant_values=fill if kind == "max" else 0)
    real = np.pad(np.ones(ins), list(zip(pb, tail)))
    inpad = np.zeros([p0 + t + n for p0, t, n in zip(pb, tail, ins)])
    inpad[tuple(slice(0, p0 + n + p1) for p0, n, p1 in zip(pb, ins, pa))] = 1
    acc = np.full(x.shape[:2] + tuple(osz), fill if kind == "max" else 0, dtype=x.dtype)
    n_real = np.zeros(osz)
    n_inpad = np.zeros(osz)
    for kpos in np.ndindex(*ks):
        sl = tuple(slice(kp * d, kp * d + s * (o - 1) + 1, s)
                   for kp, d, s, o in zip(kpos, dil, strides, osz))
        win = xp[(slice(None), slice(None)) + sl]
        acc = np.maximum(acc, win) if kind == "max" else acc + win
        n_real += real[sl]
        n_inpad += inpad[sl]
    if kind == "max":
        return acc
    return acc / (n_inpad if count_include_pad else np.maximum(n_real, 1))


@dataclass
class AdaptivePool(OpSpec):
    """adaptive_avg_pool{1,2,3}d: window i of n inputs into o outputs is
    [floor(i * n / o), ceil((i + 1) * n / o))."""

    nd: int = 2

    def sample(self, ctx):
        ch, nd = ctx.ch, self.nd
        sp = SPATIAL[nd]
        layout = ch.choice(["NC" + sp, "NC" + sp, "N" + sp + "C"])
        smax = 10 if nd < 3 else 5
        x = _pick(ctx, self.dtypes, nd + 2, _layout_pred(layout, nd, smax),
                  _layout_shape(ctx, layout, nd, smax))
        r = ch.integer(0, 9)
        # output_size None (keep the input size) fails to build in 1-D: the legalizer hands
        # topi.adaptive_pool1d a bare dim where it expects a list.
        if r < 2 and (self.nd > 1 or ch.boolean(KNOWN_BUG_P)):
            size = None
        elif r < 4:
            size = ch.integer(1, 5)          # one int for all spatial dims
        else:
            size = [ch.integer(1, 6) for _ in sp]
        return [x], {"output_size": size, "layout": layout}

    def _sizes(self, attrs, shape):
        size, layout = attrs["output_size"], attrs["layout"]
        if size is None:
            return [shape[layout.index(c)] for c in SPATIAL[self.nd]]
        return [size] * self.nd if isinstance(size, int) else list(size)

    def infer(self, tys, attrs):
        x = tys[0]
        shape = list(x.shape)
        for c, o in zip(SPATIAL[self.nd], self._sizes(attrs, x.shape)):
            shape[attrs["layout"].index(c)] = o
        return TensorTy(shape, x.dtype)

    def interval(self, ins, attrs, out):
        return (ins[0].lo, ins[0].hi)

    def reference(self, xs, attrs):
        x = xs[0]
        layout = attrs["layout"]
        y = f64(x)
        for c, o in zip(SPATIAL[self.nd], self._sizes(attrs, x.shape)):
            a = layout.index(c)
            n = x.shape[a]
            m = np.zeros((o, n))
            for i in range(o):
                s, e = (i * n) // o, -((-(i + 1) * n) // o)
                m[i, s:e] = 1.0 / (e - s)
            y = np.moveaxis(np.tensordot(y, m, axes=([a], [1])), -1, a)
        return cast(y, _dt(x))


# --- softmax -------------------------------------------------------------------------------
@dataclass
class Softmax(OpSpec):
    log: bool = False

    def sample(self, ctx):
        pred = _finite if self.log else None
        x = ctx.pick(dtypes=self.dtypes, rank=(1, 4), pred=pred)
        return [x], {"axis": ctx.ch.integer(-x.rank, x.rank - 1)}

    def infer(self, tys, attrs):
        return TensorTy(tys[0].shape, tys[0].dtype)

    def interval(self, ins, attrs, out):
        if not self.log:
            return (0.0, 1.0)
        x = ins[0]
        n = _dim_range(x.shape[norm_axis(attrs["axis"], x.rank)])[1]
        return (x.lo - x.hi - math.log(max(n, 1)), 0.0)

    def reference(self, xs, attrs):
        x = f64(xs[0])
        ax = attrs["axis"]
        if not x.size:
            return cast(x, _dt(xs[0]))
        z = x - x.max(axis=ax, keepdims=True)
        lse = np.log(np.exp(z).sum(axis=ax, keepdims=True))
        return cast(z - lse if self.log else np.exp(z - lse), _dt(xs[0]))


# --- normalizations ------------------------------------------------------------------------
def _axes_subset(ctx, rank, exclude=(), trailing_p=0.6):
    """Distinct axes (some negative), usually trailing; never empty unless nothing is left."""
    pool = [a for a in range(rank) if a not in exclude]
    if not pool:
        return []
    if ctx.ch.boolean(trailing_p):
        axes = pool[len(pool) - ctx.ch.integer(1, len(pool)):]
    else:
        axes = sorted(ctx.ch.sample(pool, ctx.ch.integer(1, len(pool))))
    return [a - rank if ctx.ch.boolean(0.3) else a for a in axes]


def _normalize(x, axes, eps):
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    return (x - mean) / np.sqrt(var + eps)


def _affine_bound(n_max, gamma, beta, scale=True, center=True):
    """|normalized| <= sqrt(n - 1) < sqrt(n) for n reduced elements."""
    b = math.sqrt(max(n_max, 1)) * (_absmax(gamma) if scale else 1.0)
    b += _absmax(beta) if center else 0.0
    return (-b, b)


def _center_scale(ctx, attrs):
    # TVM's legalization ignores center=False / scale=False for layer/group/instance norm
    # (a suspected bug, see the report); kept rare so it does not drown other findings.
    attrs["center"] = not ctx.ch.boolean(KNOWN_BUG_P)
    attrs["scale"] = not ctx.ch.boolean(KNOWN_BUG_P)
    return attrs


def _too_few(ctx, dims) -> bool:
    """TVM's group/instance_norm take var = E[x^2] - E[x]^2 in one float32 pass: over a handful
    of elements the variance can be tiny next to E[x^2], and cancellation eats the digits (a
    precision weakness, see the report). Such reductions are kept rare."""
    return math.prod(_dim_range(d)[0] for d in dims) < 4 and not ctx.ch.boolean(KNOWN_BUG_P)


def _eps(ctx):
    return ctx.ch.choice([1e-5, 1e-5, 1e-3, 0.1])


@dataclass
class LayerNorm(OpSpec):
    def sample(self, ctx):
        x = ctx.pick(dtypes=self.dtypes, rank=(1, 4), pred=_finite)
        axes = _axes_subset(ctx, x.rank)
        if len(axes) > 1 and ctx.ch.boolean(KNOWN_BUG_P):
            # gamma/beta follow the order of axes (relax's shape rule), but topi indexes them
            # in data order: wrong results for unsorted axes.
            axes = axes[::-1]
        shape = [x.shape[norm_axis(a, x.rank)] for a in axes]
        g, b = ctx.new_param(shape, x.dtype), ctx.new_param(shape, x.dtype)
        return [x, g, b], _center_scale(ctx, {"axes": axes, "epsilon": _eps(ctx)})

    def infer(self, tys, attrs):
        return TensorTy(tys[0].shape, tys[0].dtype)

    def interval(self, ins, attrs, out):
        x, g, b = ins
        n = _numel_max([x.shape[norm_axis(a, x.rank)] for a in attrs["axes"]])
        return _affine_bound(n, g, b, attrs["scale"], attrs["center"])

    def reference(self, xs, attrs):
        x, g, b = (f64(a) for a in xs)
        axes = [norm_axis(a, x.ndim) for a in attrs["axes"]]
        y = _normalize(x, tuple(axes), attrs["epsilon"])
        # gamma's dims follow the order of ``axes``: move them to data order, then broadcast.
        order = np.argsort(axes)
        bshape = [x.shape[i] if i in axes else 1 for i in range(x.ndim)]
        if attrs["scale"]:
            y = y * np.transpose(g, order).reshape(bshape)
        if attrs["center"]:
            y = y + np.transpose(b, order).reshape(bshape)
        return cast(y, _dt(xs[0]))


@dataclass
class GroupNorm(OpSpec):
    def sample(self, ctx):
        ch = ctx.ch

        def ok(v):
            return _finite(v) and any(isinstance(d, int) and d >= 1 for d in v.shape[1:])

        x = ctx.pick(dtypes=self.dtypes, rank=(2, 4), pred=ok)
        cands = [a for a in range(1, x.rank) if isinstance(x.shape[a], int) and x.shape[a] >= 1]
        if not cands:
            return None
        cax = ch.choice(cands)
        C = x.shape[cax]
        groups = ch.choice([g for g in range(1, C + 1) if C % g == 0])
        # Reduce over the group's channels and the other non-batch axes (usually all of them).
        rest = [a for a in range(1, x.rank) if a != cax]
        axes = rest if ch.boolean(0.7) else sorted(ch.sample(rest, ch.integer(0, len(rest))))
        if _too_few(ctx, [C // groups] + [x.shape[a] for a in axes]):
            return None
        axes = [a - x.rank if ch.boolean(0.3) else a for a in axes]
        g, b = ctx.new_param([C], x.dtype), ctx.new_param([C], x.dtype)
        attrs = {"num_groups": groups, "channel_axis": cax - x.rank if ch.boolean(0.3) else cax,
                 "axes": axes, "epsilon": _eps(ctx)}
        return [x, g, b], _center_scale(ctx, attrs)

    def infer(self, tys, attrs):
        return TensorTy(tys[0].shape, tys[0].dtype)

    def interval(self, ins, attrs, out):
        x, g, b = ins
        cax = norm_axis(attrs["channel_axis"], x.rank)
        n = _numel_max([x.shape[norm_axis(a, x.rank)] for a in attrs["axes"]])
        n *= x.shape[cax] // attrs["num_groups"]
        return _affine_bound(n, g, b, attrs["scale"], attrs["center"])

    def reference(self, xs, attrs):
        x, g, b = (f64(a) for a in xs)
        r = x.ndim
        cax = norm_axis(attrs["channel_axis"], r)
        G = attrs["num_groups"]
        C = x.shape[cax]
        xg = x.reshape(x.shape[:cax] + (G, C // G) + x.shape[cax + 1:])
        red = [cax + 1] + [a if a < cax else a + 1 for a in
                           (norm_axis(a, r) for a in attrs["axes"])]
        y = _normalize(xg, tuple(red), attrs["epsilon"]).reshape(x.shape)
        bshape = [C if i == cax else 1 for i in range(r)]
        if attrs["scale"]:
            y = y * g.reshape(bshape)
        if attrs["center"]:
            y = y + b.reshape(bshape)
        return cast(y, _dt(xs[0]))


@dataclass
class InstanceNorm(OpSpec):
    def sample(self, ctx):
        ch = ctx.ch
        x = ctx.pick(dtypes=self.dtypes, rank=(2, 4), pred=_finite)
        cax = 1 if ch.boolean(0.7) else ch.integer(0, x.rank - 1)
        axes = _axes_subset(ctx, x.rank, exclude=(cax, 0) if x.rank > 2 and cax != 0 else (cax,))
        if not axes or _too_few(ctx, [x.shape[norm_axis(a, x.rank)] for a in axes]):
            return None
        shape = [x.shape[cax]]
        g, b = ctx.new_param(shape, x.dtype), ctx.new_param(shape, x.dtype)
        # A negative channel_axis reaches topi.instance_norm unnormalized: IndexError at build.
        attrs = {"channel_axis": cax - x.rank if ch.boolean(KNOWN_BUG_P) else cax, "axes": axes,
                 "epsilon": _eps(ctx)}
        return [x, g, b], _center_scale(ctx, attrs)

    def infer(self, tys, attrs):
        return TensorTy(tys[0].shape, tys[0].dtype)

    def interval(self, ins, attrs, out):
        x, g, b = ins
        n = _numel_max([x.shape[norm_axis(a, x.rank)] for a in attrs["axes"]])
        return _affine_bound(n, g, b, attrs["scale"], attrs["center"])

    def reference(self, xs, attrs):
        x, g, b = (f64(a) for a in xs)
        r = x.ndim
        cax = norm_axis(attrs["channel_axis"], r)
        y = _normalize(x, tuple(norm_axis(a, r) for a in attrs["axes"]), attrs["epsilon"])
        bshape = [x.shape[cax] if i == cax else 1 for i in range(r)]
        if attrs["scale"]:
            y = y * g.reshape(bshape)
        if attrs["center"]:
            y = y + b.reshape(bshape)
        return cast(y, _dt(xs[0]))


@dataclass
class RMSNorm(OpSpec):
    def sample(self, ctx):
        # topi.rms_norm fails to build unless the axes are trailing and leave one axis out
        # (it re-filters the already reduced indices): such axes only rarely.
        rare = ctx.ch.boolean(KNOWN_BUG_P)
        x = ctx.pick(dtypes=self.dtypes, rank=(1, 4) if rare else (2, 4), pred=_finite)
        axes = _axes_subset(ctx, x.rank, exclude=() if rare else (0,),
                            trailing_p=0.6 if rare else 1.0)
        w = ctx.new_param([x.shape[norm_axis(a, x.rank)] for a in axes], x.dtype)
        return [x, w], {"axes": axes, "epsilon": _eps(ctx)}

    def infer(self, tys, attrs):
        return TensorTy(tys[0].shape, tys[0].dtype)

    def interval(self, ins, attrs, out):
        x, w = ins
        n = _numel_max([x.shape[norm_axis(a, x.rank)] for a in attrs["axes"]])
        b = math.sqrt(max(n, 1)) * _absmax(w)    # |x_i| / rms(x) <= sqrt(n)
        return (-b, b)

    def reference(self, xs, attrs):
        x, w = f64(xs[0]), f64(xs[1])
        axes = tuple(norm_axis(a, x.ndim) for a in attrs["axes"])
        y = x / np.sqrt((x * x).mean(axis=axes, keepdims=True) + attrs["epsilon"])
        bshape = [x.shape[i] if i in axes else 1 for i in range(x.ndim)]
        return cast(y * w.reshape(bshape), _dt(xs[0]))


@dataclass
class BatchNorm(OpSpec):
    """Returns (out, new moving_mean, new moving_var). Inference mode normalizes with the
    moving statistics and returns them unchanged; training mode (relax's default) normalizes
    with the batch's biased statistics and returns (1 - momentum) * moving + momentum * batch
    (topi's, PyTorch's convention; the relax docstring states the reverse weighting)."""

    def sample(self, ctx):
        ch = ctx.ch
        x = ctx.pick(dtypes=self.dtypes, rank=(1, 4), pred=_finite)
        ax = 1 if x.rank > 1 and ch.boolean(0.6) else ch.integer(0, x.rank - 1)
        shape = [x.shape[ax]]
        g, b, mean = (ctx.new_param(shape, x.dtype) for _ in range(3))
        var = ctx.new_param(shape, x.dtype, 0.25, 2.0)
        training = ch.boolean(0.5)
        # Training mode with a negative axis fails to build (topi.batch_norm's
        # reduce_axes.remove(axis) gets the unnormalized axis).
        neg = ch.boolean(KNOWN_BUG_P if training else 0.3)
        attrs = {"axis": ax - x.rank if neg else ax, "epsilon": _eps(ctx),
                 "center": ch.boolean(0.8), "scale": ch.boolean(0.8),
                 "momentum": ch.choice([0.1, 0.5, 0.9]), "training": training}
        return [x, g, b, mean, var], attrs

    def infer(self, tys, attrs):
        x = tys[0]
        c = x.shape[norm_axis(attrs["axis"], x.rank)]
        return TupleTy([TensorTy(x.shape, x.dtype), TensorTy([c], x.dtype),
                        TensorTy([c], x.dtype)])

    def interval(self, ins, attrs, out):
        # The three results share one interval: take the union of their bounds.
        x, g, b, mean, var = ins
        if attrs["training"]:
            n = _numel_max([d for i, d in enumerate(x.shape)
                            if i != norm_axis(attrs["axis"], x.rank)])
            norm = math.sqrt(max(n, 1))
            stats = (min(mean.lo, x.lo, 0.0),
                     max(mean.hi, x.hi, var.hi, (x.hi - x.lo) ** 2))
        else:
            norm = (_absmax(x) + _absmax(mean)) / math.sqrt(var.lo + attrs["epsilon"])
            stats = (min(mean.lo, 0.0), max(mean.hi, var.hi))
        o = norm * (_absmax(g) if attrs["scale"] else 1.0)
        o += _absmax(b) if attrs["center"] else 0.0
        return (min(-o, stats[0]), max(o, stats[1]))

    def reference(self, xs, attrs):
        x, g, b, mean, var = (f64(a) for a in xs)
        r = x.ndim
        ax = norm_axis(attrs["axis"], r)
        red = tuple(i for i in range(r) if i != ax)
        bshape = [x.shape[ax] if i == ax else 1 for i in range(r)]
        eps, m = attrs["epsilon"], attrs["momentum"]
        if attrs["training"]:
            bm = x.mean(axis=red)
            bv = ((x - bm.reshape(bshape)) ** 2).mean(axis=red)
            y = (x - bm.reshape(bshape)) / np.sqrt(bv.reshape(bshape) + eps)
            new_mean, new_var = (1 - m) * mean + m * bm, (1 - m) * var + m * bv
        else:
            y = (x - mean.reshape(bshape)) / np.sqrt(var.reshape(bshape) + eps)
            new_mean, new_var = mean, var
        if attrs["scale"]:
            y = y * g.reshape(bshape)
        if attrs["center"]:
            y = y + b.reshape(bshape)
        dt = _dt(xs[0])
        return (cast(y, dt), cast(new_mean, dt), cast(new_var, dt))


# --- attention -----------------------------------------------------------------------------
@dataclass
class Attention(OpSpec):
    """q (B, S, N, H), k (B, Skv, Nk, H), v (B, Skv, Nk, Hv) -> (B, S, N, Hv); N a multiple
    of Nk, query head n reading key/value head n // (N / Nk) (the usual GQA grouping; relax
    does not document one). Causal masks keep tril(k=0) ("TopLeft") or tril(k=|S - Skv|)
    ("BottomRight"), as relax documents. With ``bias`` (attention_bias) a 4-D bias broadcast
    to (B, N, S, Skv) is added to the scaled scores."""

    bias: bool = False

    def sample(self, ctx):
        ch = ctx.ch
        # Scores q.k stay small: exp amplifies their rounding error.
        qpred = _bounded(2.5)

        def q_ok(v):
            return v.rank == 4 and qpred(v) and all(isinstance(d, int) for d in v.shape[2:]) \
                and 1 <= v.shape[2] <= 8 and 1 <= v.shape[3] <= 16 \
                and all(_spatial_ok(d, 16) for d in v.shape[:2])

        q = _pick(ctx, self.dtypes, 4, q_ok,
                  lambda: [_small_dim(ctx, 2), _small_dim(ctx, 8), ch.choice([1, 2, 4]),
                           ch.choice([1, 2, 4, 8])])
        B, S, N, H = q.shape
        # Fewer key/value heads (GQA) is legal by relax's shape rule, but the legalization
        # reshapes K/V as if they had N heads (wrong results for batch > 1): kept rare.
        nk = N if not ch.boolean(KNOWN_BUG_P) else ch.choice(
            [d for d in range(1, N + 1) if N % d == 0])
        skv = S if ch.boolean(0.4) else _small_dim(ctx, 8)
        hv = H if ch.boolean(0.6) else ch.choice([1, 2, 4, 8])
        dt = q.dtype
        k = ctx.pick(dtypes=(dt,), rank=4, pred=qpred, new_shape=[B, skv, nk, H])
        v = ctx.pick(dtypes=(dt,), rank=4, pred=_finite, new_shape=[B, skv, nk, hv])
        ins = [q, k, v]
        if self.bias:
            skv = k.shape[1]
            shape = [d if ch.boolean(0.5) else 1 for d in (B, N, S)] + [skv]
            ins.append(ctx.pick(dtypes=(dt,), rank=4, pred=_bounded(4), new_shape=shape))
        attrs = {"scale": None if ch.boolean(0.5) else ch.choice([0.125, 0.5, 1.0]),
                 "causal_mask": ch.choice([None, None, "TopLeft", "BottomRight"])}
        return ins, attrs

    def infer(self, tys, attrs):
        q, v = tys[0], tys[2]
        return TensorTy([q.shape[0], q.shape[1], q.shape[2], v.shape[3]], q.dtype)

    def interval(self, ins, attrs, out):
        v = ins[2]   # each output is a convex combination of value rows
        return (v.lo, v.hi)

    def reference(self, xs, attrs):
        q, k, v = (f64(a) for a in xs[:3])
        N, nk = q.shape[2], k.shape[2]
        k, v = np.repeat(k, N // nk, axis=2), np.repeat(v, N // nk, axis=2)
        S, skv, H = q.shape[1], k.shape[1], q.shape[3]
        scale = attrs["scale"] if attrs["scale"] is not None else 1 / math.sqrt(H)
        p = np.einsum("bsnh,btnh->bnst", q, k) * scale
        if self.bias:
            p = p + f64(xs[3])
        mask = attrs["causal_mask"]
        if mask is not None:
            off = 0 if mask == "TopLeft" else abs(S - skv)
            keep = np.tril(np.ones((S, skv), dtype=bool), k=off)
            p = np.where(keep, p, -np.inf)
        p = np.exp(p - p.max(axis=-1, keepdims=True))
        p = p / p.sum(axis=-1, keepdims=True)
        return cast(np.einsum("bnst,btnh->bsnh", p, v), _dt(xs[0]))


# --- prelu, dropout, losses ----------------------------------------------------------------
@dataclass
class PReLU(OpSpec):
    def sample(self, ctx):
        def ok(v):
            return v.rank >= 1 and _finite(v) and any(isinstance(d, int) for d in v.shape)

        x = ctx.pick(dtypes=self.dtypes, rank=(1, 4), pred=ok)
        axes = [a for a in range(x.rank) if isinstance(x.shape[a], int)]
        if not axes:
            return None
        ax = 1 if 1 in axes and ctx.ch.boolean(0.5) else ctx.ch.choice(axes)
        alpha = ctx.new_param([x.shape[ax]], x.dtype, -0.5, 1.0)
        return [x, alpha], {"axis": ax - x.rank if ctx.ch.boolean(0.3) else ax}

    def infer(self, tys, attrs):
        return TensorTy(tys[0].shape, tys[0].dtype)

    def interval(self, ins, attrs, out):
        x, a = ins
        b = _absmax(x) * max(1.0, _absmax(a))
        return (-b, b)

    def reference(self, xs, attrs):
        x, a = f64(xs[0]), f64(xs[1])
        ax = norm_axis(attrs["axis"], x.ndim)
        a = a.reshape([x.shape[ax] if i == ax else 1 for i in range(x.ndim)])
        return cast(np.where(x > 0, x, a * x), _dt(xs[0]))


@dataclass
class Dropout(OpSpec):
    """Legalized as inference: (identity, an all-ones mask)."""

    def sample(self, ctx):
        x = ctx.pick(dtypes=self.dtypes, rank=(0, 4), pred=_finite)
        return [x], {"rate": ctx.ch.choice([0.0, 0.1, 0.5, 0.9])}

    def infer(self, tys, attrs):
        return TupleTy([TensorTy(tys[0].shape, tys[0].dtype)] * 2)

    def interval(self, ins, attrs, out):
        return (min(ins[0].lo, 1.0), max(ins[0].hi, 1.0))

    def exact(self, ins, attrs, out):
        return ins[0].exact

    def reference(self, xs, attrs):
        x = xs[0]
        return (x.copy(), np.ones_like(x))


@dataclass
class CrossEntropy(OpSpec):
    """-sum(x * y) / N for rank > 1 (N the first dim), -sum(x * y) for rank 1."""

    def sample(self, ctx):
        def ok(v):
            return _finite(v) and _numel_max(v.shape) <= self.max_numel(v.dtype)

        x = ctx.pick(dtypes=self.dtypes, rank=(1, 3), pred=ok, max_dim=6)
        if not ok(x):
            return None
        y = ctx.pick(dtypes=(x.dtype,), rank=x.rank, pred=_finite, new_shape=x.shape)
        return [x, y], {}

    @staticmethod
    def max_numel(dtype):
        return 64 if dtype in ("float16", "bfloat16") else 4096

    def infer(self, tys, attrs):
        return TensorTy([], tys[0].dtype)

    def interval(self, ins, attrs, out):
        x, y = ins
        n = _numel_max(x.shape[1:]) if x.rank > 1 else _numel_max(x.shape)
        b = n * _absmax(x) * _absmax(y)
        return (-b, b)

    def reference(self, xs, attrs):
        x, y = f64(xs[0]), f64(xs[1])
        s = -(x * y).sum()
        return cast(s / x.shape[0] if x.ndim > 1 else s, _dt(xs[0]))


@dataclass
class NLLLoss(OpSpec):
    """predictions (N, C, d1..dk) or (C,), targets (N, d1..dk) or () in [0, C), optional
    weights (C,). ignore_index, when sampled in range, zeroes those targets (and their weight
    in the mean)."""

    def sample(self, ctx):
        ch = ctx.ch

        def ok(v):
            c = v.shape[1] if v.rank > 1 else (v.shape[0] if v.rank == 1 else None)
            return _finite(v) and isinstance(c, int) and 1 <= c <= 16 and \
                _numel_max(v.shape) <= 1024

        p = ctx.pick(dtypes=self.dtypes, rank=(1, 4), pred=ok, max_dim=6)
        if not ok(p):
            return None
        C = p.shape[1] if p.rank > 1 else p.shape[0]
        tshape = [p.shape[0]] + list(p.shape[2:]) if p.rank > 1 else []
        t = ctx.pick(dtypes=("int64", "int32"), rank=len(tshape), new_shape=tshape,
                     pred=lambda v: v.exact and 0 <= v.lo and v.hi <= C - 1,
                     new_range=(0, C - 1))
        ins = [p, t]
        if ch.boolean(0.5):
            ins.append(ctx.new_param([C], p.dtype, 0.5, 2.0))
        reduction = ch.choice(["mean", "sum", "none"])
        # An in-range ignore_index could leave a mean over no targets (0 / 0).
        ignore = ch.integer(0, C - 1) if reduction != "mean" and ch.boolean(0.3) else -100
        return ins, {"reduction": reduction, "ignore_index": ignore}

    def infer(self, tys, attrs):
        p = tys[0]
        if attrs["reduction"] != "none" or p.rank == 1:
            return TensorTy([], p.dtype)
        return TensorTy([p.shape[0]] + list(p.shape[2:]), p.dtype)

    def interval(self, ins, attrs, out):
        p = ins[0]
        w = _absmax(ins[2]) if len(ins) > 2 else 1.0
        if attrs["reduction"] == "mean":   # a weighted mean of -p, weights positive
            return (-p.hi, -p.lo)
        n = _numel_max(out.shape) if attrs["reduction"] == "none" else \
            _numel_max([d for i, d in enumerate(p.shape) if i != 1])
        b = _absmax(p) * w * (1 if attrs["reduction"] == "none" else n)
        return (-b, b)

    def reference(self, xs, attrs):
        p, t = f64(xs[0]), xs[1].astype(np.int64)
        C = p.shape[1] if p.ndim > 1 else p.shape[0]
        w = f64(xs[2]) if len(xs) > 2 else np.ones(C)
        if p.ndim == 1:
            picked = p[t]
        else:
            picked = np.take_along_axis(p, np.expand_dims(t, 1), axis=1).squeeze(1)
        keep = t != attrs["ignore_index"]
        wt = np.where(keep, w[np.clip(t, 0, C - 1)], 0.0)
        loss = -picked * wt
        red = attrs["reduction"]
        if red == "sum":
            loss = loss.sum()
        elif red == "mean":
            loss = loss.sum() / wt.sum()
        return cast(loss, _dt(xs[0]))


# --- tolerances ----------------------------------------------------------------------------
def _tol(**over):
    t = dict(DEFAULT_TOL)
    t.update(over)
    return t


# Convolutions reduce over K = (channels / groups) * kernel volume products: K <= 72 in 1-D
# and 2-D, <= 216 in 3-D. In float16/bfloat16 each partial sum may be rounded to the storage
# dtype, and that error grows like sqrt(K) * ulp(|partial sum|) (partial sums reach ~20 with
# inputs in [-2, 2]). Measured: up to 0.004 (float16) and 0.012 (bfloat16) beyond the default
# rtol at K <= 72; the atol below leaves room for the larger K of 3-D kernels.
CONV_TOL = _tol(float16=(1e-2, 2e-2), bfloat16=(3e-2, 6e-2))
CONV3D_TOL = _tol(float16=(1e-2, 4e-2), bfloat16=(3e-2, 1.2e-1))

CONV_DTYPES = FLOATS + ("int8", "int32")

SPECS: list[OpSpec] = [
    Conv("relax.nn.conv1d", nd=1, dtypes=CONV_DTYPES, tol=CONV_TOL),
    Conv("relax.nn.conv2d", nd=2, dtypes=CONV_DTYPES, tol=CONV_TOL),
    Conv("relax.nn.conv3d", nd=3, dtypes=CONV_DTYPES, tol=CONV3D_TOL),
    Conv("relax.nn.conv1d_transpose", nd=1, transpose=True, dtypes=CONV_DTYPES, tol=CONV_TOL),
    Conv("relax.nn.conv2d_transpose", nd=2, transpose=True, dtypes=CONV_DTYPES, tol=CONV_TOL),
    Conv("relax.nn.conv3d_transpose", nd=3, transpose=True, dtypes=CONV_DTYPES,
         tol=CONV3D_TOL),
    *[Pool(f"relax.nn.max_pool{n}d", nd=n, kind="max", dtypes=FLOATS + INTS) for n in (1, 2, 3)],
    *[Pool(f"relax.nn.avg_pool{n}d", nd=n, kind="avg") for n in (1, 2, 3)],
    *[AdaptivePool(f"relax.nn.adaptive_avg_pool{n}d", nd=n) for n in (1, 2, 3)],
    Softmax("relax.nn.softmax"),
    Softmax("relax.nn.log_softmax", log=True),
    LayerNorm("relax.nn.layer_norm", dtypes=NORM_DTYPES),
    GroupNorm("relax.nn.group_norm", dtypes=NORM_DTYPES),
    InstanceNorm("relax.nn.instance_norm", dtypes=NORM_DTYPES),
    RMSNorm("relax.nn.rms_norm"),
    BatchNorm("relax.nn.batch_norm"),
    Attention("relax.nn.attention"),
    Attention("relax.nn.attention_bias", bias=True),
    # relax rejects bfloat16 for prelu (its dtype check accepts kDLFloat only).
    PReLU("relax.nn.prelu", dtypes=("float32", "float16", "float64")),
    Dropout("relax.nn.dropout", dtypes=FLOATS),
    CrossEntropy("relax.nn.cross_entropy_with_logits"),
    NLLLoss("relax.nn.nll_loss"),
]
