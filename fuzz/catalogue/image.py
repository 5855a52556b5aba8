"""Op family: image. ``relax.image.resize2d``, ``resize3d``, ``grid_sample`` and
``affine_grid``.

resize2d follows TOPI's definition (``topi/image/resize.py``): output pixel ``x`` reads input
coordinate ``in_x`` by the coordinate transformation mode; nearest neighbour rounds it
(``floor``/``ceil`` with TOPI's 1e-5 epsilon, ``round`` half to even), linear interpolates the
clamped neighbours. TOPI computes coordinates and pixels in float32 whatever the data dtype,
so the reference does the coordinate arithmetic in float32 as well (a rounding decision then
sees the same number) and float64 data gets float32's tolerance.
grid_sample: bilinear sampling at the grid's coordinates (TOPI's padding rules).
affine_grid: ``grid[n, :, h, w] = theta[n] @ (x_w, y_h, 1)`` with TOPI's base grid (pixel
centres, or -1..1 corners), laid out ``(N, 2, H, W)``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .. import dims as D
from ..model import TensorTy
from .spec import DEFAULT_TOL, OpSpec, ShapeArg, f64

MODES = ("half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel")
F32_TOL = dict(DEFAULT_TOL, float64=DEFAULT_TOL["float32"])
_f = np.float32


def _in_coord(x: np.ndarray, image: int, target: int, mode: str) -> np.ndarray:
    """TOPI's get_inx in float32 (x: output coordinates)."""
    scale = _f(image) / _f(target)
    x = x.astype(_f)
    if mode == "half_pixel":
        return (x + _f(0.5)) * scale - _f(0.5)
    if mode == "align_corners":
        return _f(image - 1) / _f(target - 1) * x if target > 1 else \
            np.full_like(x, np.nan)
    if mode == "asymmetric":
        return scale * x
    if mode == "pytorch_half_pixel":
        return (x + _f(0.5)) * scale - _f(0.5) if target > 1 else np.zeros_like(x)
    raise ValueError(mode)


def _nearest_index(in_x, image, target, mode, rounding):
    if rounding == "round":
        idx = np.rint(in_x)
    elif rounding == "floor":
        idx = np.floor(in_x + _f(1e-5))
    elif rounding == "ceil":
        idx = np.ceil(in_x - _f(1e-5))
    elif rounding == "round_prefer_floor":
        idx = np.ceil(in_x - _f(0.5))
    else:
        idx = np.floor(in_x + _f(0.5))
    return np.clip(idx.astype(np.int64), 0, image - 1)


@dataclass
class Resize(OpSpec):
    """resize2d (NCHW/NHWC) and resize3d (NCDHW/NDHWC): linear interpolation is separable,
    done along the last spatial axis first, as TOPI nests its lerps."""

    tol: dict = field(default_factory=lambda: dict(F32_TOL))
    spatial: int = 2

    def _layouts(self):
        return ("NCHW", "NHWC") if self.spatial == 2 else ("NCDHW", "NDHWC")

    def _axes(self, layout):
        return tuple(range(2, 2 + self.spatial)) if layout[1] == "C" else \
            tuple(range(1, 1 + self.spatial))

    def sample(self, ctx):
        ch = ctx.ch
        layout = ch.choice(self._layouts())
        axes = self._axes(layout)

        def ok(v):
            return all(D.is_static(v.shape[i]) for i in axes)

        x = ctx.pick(dtypes=self.dtypes, rank=2 + self.spatial, pred=ok,
                     static=ch.boolean(0.5))
        if not ok(x):
            return None
        method = ch.choice(("linear", "linear", "nearest_neighbor"))
        mode = ch.choice(MODES)
        size = []
        for i in axes:
            d = x.shape[i]
            size.append(ch.choice([1, d, 2 * d, max(1, d // 2), ch.integer(1, 9)]))
        if mode == "align_corners" and 1 in size:
            mode = "half_pixel"   # (image - 1) / (target - 1): TOPI divides by zero
        rounding = ""
        if method == "nearest_neighbor":
            rounding = ch.choice(("", "floor", "ceil", "round", "round_prefer_floor",
                                  "round_prefer_ceil"))
        attrs = {"size": size, "layout": layout, "method": method,
                 "coordinate_transformation_mode": mode, "rounding_method": rounding}
        return [x], attrs

    def infer(self, tys, attrs):
        shape = list(tys[0].shape)
        for i, s in zip(self._axes(attrs["layout"]), attrs["size"]):
            shape[i] = s
        return TensorTy(shape, tys[0].dtype)

    def interval(self, ins, attrs, out):
        return (ins[0].lo, ins[0].hi)   # nearest copies, linear takes convex combinations

    def exact(self, ins, attrs, out):
        return attrs["method"] == "nearest_neighbor" and ins[0].exact

    def call(self, args, attrs):
        return [args[0], tuple(attrs["size"])], {
            k: v for k, v in attrs.items() if k != "size"}

    def reference(self, xs, attrs):
        x = xs[0]
        last = attrs["layout"][1] != "C"
        if last:   # channels last: to channels first
            x = np.moveaxis(x, -1, 1)
        out = x.astype(_f)   # TOPI reads pixels as float32
        mode, method = attrs["coordinate_transformation_mode"], attrs["method"]
        for k in reversed(range(self.spatial)):   # the last spatial axis first
            ax = 2 + k
            n, t = out.shape[ax], attrs["size"][k]
            c = _in_coord(np.arange(t), n, t, mode)
            if method == "nearest_neighbor":
                rounding = attrs["rounding_method"] or (
                    "round" if mode == "align_corners" else "floor")
                out = np.take(out, _nearest_index(c, n, t, mode, rounding), axis=ax)
                continue
            i0 = np.floor(c)
            lerp = (c - i0).astype(_f)
            i0 = i0.astype(np.int64)
            shape = [1] * out.ndim
            shape[ax] = t
            lerp = lerp.reshape(shape)
            a = np.take(out, np.clip(i0, 0, n - 1), axis=ax)
            b = np.take(out, np.clip(i0 + 1, 0, n - 1), axis=ax)
            out = a * (_f(1) - lerp) + b * lerp
        if last:
            out = np.moveaxis(out, 1, -1)
        return out.astype(xs[0].dtype)

    def near_valid_attrs(self, ctx, ins, attrs):
        return dict(attrs, size=[0] + list(attrs["size"][1:]))


@dataclass
class AffineGrid(OpSpec):
    dtypes: tuple = ("float32", "float64", "float16")

    def sample(self, ctx):
        ch = ctx.ch
        n = ch.choice([1, 1, 2, 3])
        theta = ctx.pick(dtypes=self.dtypes, rank=3, new_shape=[n, 2, 3],
                         pred=lambda v: D.is_static(v.shape[0]) and abs(v.lo) < 100
                         and abs(v.hi) < 100)
        if list(theta.shape)[1:] != [2, 3]:
            return None
        align = ch.boolean(0.5)
        lo = 2 if align else 1
        size = [ch.integer(lo, 7), ch.integer(lo, 7)]
        return [theta], {"size": size, "align_corners": align}

    def infer(self, tys, attrs):
        return TensorTy([tys[0].shape[0], 2] + list(attrs["size"]), tys[0].dtype)

    def interval(self, ins, attrs, out):
        m = 3 * max(abs(ins[0].lo), abs(ins[0].hi))
        return (-m, m)

    def call(self, args, attrs):
        return [args[0], tuple(attrs["size"])], {"align_corners": attrs["align_corners"]}

    def reference(self, xs, attrs):
        theta = f64(xs[0])
        H, W = attrs["size"]

        def base(s):
            i = np.arange(s, dtype=np.float64)
            return -1 + 2 * i / (s - 1) if attrs["align_corners"] else (2 * i + 1) / s - 1

        xw, yh = base(W)[None, :], base(H)[:, None]
        out = [theta[:, r, 0, None, None] * xw + theta[:, r, 1, None, None] * yh
               + theta[:, r, 2, None, None] for r in range(2)]
        return np.stack(out, axis=1)


def _reflect(x, size, align):
    """TOPI's _reflect_coordinates (integer reflection count by truncating division)."""
    span, start = (size - 1, 0.0) if align else (size, -0.5)
    iac = np.abs(start - x)
    with np.errstate(all="ignore"):
        times = np.trunc(np.trunc(iac) / span) if span else np.zeros_like(iac)
    extra = iac - times * span
    refl = np.where(times % 2 == 0, extra + start, span - extra + start)
    return np.where((x >= start) & (x <= span + start), x, refl)


@dataclass
class GridSample(OpSpec):
    """relax.image.grid_sample(data, grid) in TOPI's form: NCHW data, grid (N, 2, H', W')
    with x in channel 0 and y in channel 1, normalized to [-1, 1] (values outside exercise the
    padding); bilinear interpolation with zeros, border or reflection padding."""

    dtypes: tuple = ("float32", "float64")

    def sample(self, ctx):
        ch = ctx.ch

        def ok(v):
            return D.is_static(v.shape[0]) and abs(v.lo) < 1e4 and abs(v.hi) < 1e4

        x = ctx.pick(dtypes=self.dtypes, rank=4, pred=ok)
        if not ok(x):
            return None
        gshape = [x.shape[0], 2, ch.integer(1, 6), ch.integer(1, 6)]
        g = ctx.pick(dtypes=(x.dtype,), rank=4, new_shape=gshape, new_range=(-1.5, 1.5),
                     pred=lambda v: -3 <= v.lo and v.hi <= 3)
        if not (-3 <= g.lo and g.hi <= 3):
            return None
        return [x, g], {"method": "bilinear", "layout": "NCHW",
                        "padding_mode": ch.choice(("zeros", "border", "reflection")),
                        "align_corners": ch.boolean(0.5)}

    def infer(self, tys, attrs):
        x, g = tys
        return TensorTy([x.shape[0], x.shape[1], g.shape[2], g.shape[3]], x.dtype)

    def interval(self, ins, attrs, out):
        return (min(0, ins[0].lo), max(0, ins[0].hi))

    def reference(self, xs, attrs):
        data, grid = f64(xs[0]), f64(xs[1])
        N, C, H, W = data.shape
        align, mode = attrs["align_corners"], attrs["padding_mode"]

        def unnorm(v, size):
            return (v + 1) * (size - 1) / 2 if align else -0.5 + (v + 1) * size / 2

        y, x = unnorm(grid[:, 1], H), unnorm(grid[:, 0], W)   # (N, H', W')
        if mode == "reflection":
            y, x = _reflect(y, H, align), _reflect(x, W, align)
        if mode in ("reflection", "border"):
            y, x = np.clip(y, 0, H - 1), np.clip(x, 0, W - 1)
        y0, x0 = np.floor(y).astype(np.int64), np.floor(x).astype(np.int64)
        ly, lx = y - y0, x - x0
        n = np.arange(N)[:, None, None]

        def px(yy, xx):
            ok = (yy >= 0) & (xx >= 0) & (yy < H) & (xx < W)
            v = data[n, :, np.clip(yy, 0, H - 1), np.clip(xx, 0, W - 1)]  # (N, H', W', C)
            return np.where(ok[..., None], v, 0.0)

        out = (px(y0, x0) * ((1 - ly) * (1 - lx))[..., None]
               + px(y0, x0 + 1) * ((1 - ly) * lx)[..., None]
               + px(y0 + 1, x0) * (ly * (1 - lx))[..., None]
               + px(y0 + 1, x0 + 1) * (ly * lx)[..., None])
        return out.transpose(0, 3, 1, 2)


SPECS: list[OpSpec] = [
    Resize("relax.image.resize2d", weight=0.7),
    Resize("relax.image.resize3d", weight=0.3, spatial=3),
    AffineGrid("relax.image.affine_grid", weight=0.4),
    GridSample("relax.image.grid_sample", weight=0.5),
]
