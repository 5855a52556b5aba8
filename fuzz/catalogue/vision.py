"""Op family: vision. ``relax.vision.roi_align``, ``roi_pool``, ``get_valid_counts``,
``non_max_suppression``, ``all_class_non_max_suppression`` and ``multibox_transform_loc``.

Both read regions of interest from ``rois`` (num_rois, 5): ``[batch_index, x1, y1, x2, y2]``
in input coordinates, scaled by ``spatial_scale``. The catalogue passes the rois as a
constant (``ConstArg``, float32 or float64, whatever the data's dtype: TVM's inference accepts
any) chosen at sampling time, so that the batch index is a valid one and the box coordinates
are what the reference needs them to be:

* roi_align (TOPI ``vision/roi_align.py``): each output bin averages (or takes the max of) a
  grid of bilinear samples, ``sample_ratio`` per side or ``ceil(roi / pooled)`` when it is
  not positive. A sample outside ``[-1, H] x [-1, W]`` is 0; inside, the coordinate is clamped
  to the image and the four neighbours inside it are weighted (TOPI's
  ``bilinear_sample_nchw``). Unaligned rois are at least 1 wide; aligned ones are not
  stretched. The sampled coordinates are dyadic: scaled box corners on a 1/4 grid, pooled sizes
  and sample grids of 1, 2 or 4, power-of-two scales, so every coordinate is exact in float32
  and ``floor`` and the outside test decide the same in TVM and numpy whatever order (or FMA)
  the arithmetic takes. What is left is continuous in the data. On float16 and bfloat16 data
  TVM's legalized roi_align returns float32, with float64 rois float64, while inference says
  the data's dtype (known_bugs.py); values compare all the same.
* roi_pool (TOPI ``vision/roi_pool.py``, ONNX MaxRoiPool): corners rounded by
  ``floor(x * scale + 0.5)``, bin edges ``floor(p * roi / pooled)`` and
  ``ceil((p + 1) * roi / pooled)`` computed in the rois' dtype (single IEEE operations, which
  the reference repeats in that dtype), clamped to the image; the max over the bin, 0 for an
  empty bin. Corners on a 1/8 grid make the rounding meet its ties.

get_valid_counts (TOPI ``vision/nms.py``) has fixed-size results: per batch the count of
boxes whose score is ``> score_threshold`` (and, with ``id_index >= 0``, whose class id is
``>= 0``), the valid boxes moved to the top in their order with -1 rows below, and their
original indices with -1 below. The comparisons are discontinuous, so it only takes exactly
known data, and thresholds are multiples of 1/4 (integers for integer data), exact in every
dtype.

non_max_suppression (TOPI's classic NMS, ``vision/nms.py``) also has fixed-size results, and
the reference replays TOPI's IR step by step on a copy of each batch: the first
``valid_count`` boxes sorted by score, descending and stable (``tvm.contrib.sort.argsort_nms``,
the rest in place), cut to ``top_k``; then each box in that order whose score is ``> 0`` is
kept while fewer than ``max_output_size`` are, and suppresses each later box (same class id
unless ``force_suppress`` or ``id_index < 0``) whose IoU with it is ``>= iou_threshold``
(score and index set to -1); a box not kept becomes a row of -1. Results: the indices of the
kept boxes mapped through ``indices`` and their count (``return_indices``), else the rows,
compacted to the top with ``invalid_to_bottom``. Only hard NMS (``soft_nms_sigma`` 0): soft
NMS decays scores with ``exp`` and then compares the decayed scores, a decision rounding can
flip. The IoU test is decided exactly: when every intermediate value is representable in the
data's dtype, TVM's arithmetic is exact whatever the order or FMA, and the reference divides in
that dtype as TVM does; otherwise the exact rational IoU decides unless it lies within 1e-5
(relative; 2e-2 in float16, 1e-1 in bfloat16) of the threshold, where the reference refuses
the case (an invalid case, never a finding). The sort (``argsort_nms``) refuses any dtype but float32 at run time
(known_bugs.py), so float32 is drawn most often.

all_class_non_max_suppression, ``output_format="tensorflow"`` only (the ONNX format trims its
indices with ``dynamic_strided_slice`` to a data-dependent number of rows, which the program
model cannot type): per batch and class, the scores sorted descending (stable,
``tvm.contrib.sort.argsort``), the count of those ``> score_threshold``; when
``iou_threshold > 0``, each box in order still above -1 and above the score threshold is
selected while fewer than ``max_output_boxes_per_class`` are, and sets each later box with a
score ``> 0`` and IoU ``>= iou_threshold`` to -1 (TOPI's ``_nms_loop``; IoU in the boxes'
dtype, decided as for non_max_suppression, the threshold a float32). Results: per batch the
(class, box) pairs and float32 scores of the selected boxes, class by class, zeros after them,
and their count. The three scalars are constants (``ConstArg``): the legalizer reads
``max_output_boxes_per_class`` only from a constant (otherwise it takes the number of boxes).
float64 boxes fail to legalize (known_bugs.py).

multibox_transform_loc (TOPI ``vision/multibox_transform_loc.py``, TFLite's
DecodeCenterSizeBoxes): boxes ``(ymin, xmin, ymax, xmax)`` decoded from anchors ``(l, t, r,
b)`` and encodings ``(x, y, w, h)`` scaled by the variances, optionally clipped to [0, 1];
scores the class softmax (or the raw predictions), multiplied by ``score >= threshold``, class
0 zeroed without ``keep_background``. The threshold test on raw predictions takes exactly known
values and thresholds on a 1/4 grid; on softmax outputs (computed, so not exact) a threshold
other than 0 is drawn for float32/float64 only, and the reference refuses a case with a
probability within 1e-5 (relative) of it. Encodings and anchors lie in [-2, 2], so the boxes
stay below 25 in magnitude; their tolerance allows for the cancellation in ``center - half``.
"""
from __future__ import annotations

import fractions

import math
from dataclasses import dataclass, field

import numpy as np

from .. import dims as D
from ..model import TensorTy, TupleTy
from .spec import DEFAULT_TOL, FLOATS, ConstArg, OpSpec, f64


def _finite_small(v) -> bool:
    return math.isfinite(v.lo) and math.isfinite(v.hi) and abs(v.lo) < 1e4 and abs(v.hi) < 1e4


def _hw(x, layout):
    h, w = (x.shape[2], x.shape[3]) if layout == "NCHW" else (x.shape[1], x.shape[2])
    return (h if D.is_static(h) else 4), (w if D.is_static(w) else 4)


@dataclass
class RoiAlign(OpSpec):
    dtypes: tuple = FLOATS

    def sample(self, ctx):
        ch = ctx.ch
        layout = ch.choice(("NCHW", "NCHW", "NHWC"))

        def ok(v):
            return D.is_static(v.shape[0]) and _finite_small(v)

        x = ctx.pick(dtypes=self.dtypes, rank=4, pred=ok, max_dim=6)
        if not ok(x):
            return None
        H, W = _hw(x, layout)
        scale = ch.choice([1.0, 1.0, 0.5, 0.25, 2.0])
        pooled = [ch.choice([1, 2, 4]), ch.choice([1, 2, 4])]
        ratio = ch.choice([-1, -1, 0, 1, 2, 4])
        aligned = ch.boolean(0.4)
        rois = []
        for _ in range(ch.integer(1, 4)):
            box = None
            for _try in range(8):
                # scaled corners on a 1/4 grid, from just outside the image to just past it
                if ch.boolean(0.75):   # inside the image
                    c = [ch.integer(0, 4 * W - 4) / 4, ch.integer(0, 4 * H - 4) / 4]
                    e = [c[0] + ch.integer(1, int(4 * W - 4 * c[0])) / 4,
                         c[1] + ch.integer(1, int(4 * H - 4 * c[1])) / 4]
                else:                  # anywhere near it, corners possibly swapped
                    c = [ch.integer(-6, 4 * W + 2) / 4, ch.integer(-6, 4 * H + 2) / 4]
                    e = [c[0] + ch.integer(-2, 4 * W) / 4, c[1] + ch.integer(-2, 4 * H) / 4]
                sizes = [e[1] - c[1], e[0] - c[0]]          # roi_h, roi_w
                if not aligned:
                    sizes = [max(s, 1.0) for s in sizes]
                if ratio <= 0:   # adaptive grid: positive and a power of two
                    grids = [math.ceil(s / p) for s, p in zip(sizes, pooled)]
                    if not all(g in (1, 2, 4) for g in grids):
                        continue
                box = [float(ch.integer(0, x.shape[0] - 1)),
                       c[0] / scale, c[1] / scale, e[0] / scale, e[1] / scale]
                break
            if box is None:
                return None
            rois.append(box)
        # float64 rois make TVM's result float64 (known_bugs.py): drawn rarely
        return [x], {"rois": rois, "rois_dtype": "float64" if ch.boolean(0.1) else "float32",
                     "pooled_size": pooled, "spatial_scale": scale, "sample_ratio": ratio,
                     "aligned": aligned, "layout": layout, "mode": ch.choice(("avg", "max"))}

    def infer(self, tys, attrs):
        x = tys[0]
        n, (ph, pw) = len(attrs["rois"]), attrs["pooled_size"]
        c = x.shape[1] if attrs["layout"] == "NCHW" else x.shape[3]
        shape = [n, c, ph, pw] if attrs["layout"] == "NCHW" else [n, ph, pw, c]
        return TensorTy(shape, x.dtype)

    def interval(self, ins, attrs, out):
        # avg: a mean of convex combinations (weights summing to at most 1) and zeros;
        # max: the largest of those
        return (min(0.0, ins[0].lo), max(0.0, ins[0].hi))

    def call(self, args, attrs):
        kw = {k: attrs[k] for k in ("pooled_size", "spatial_scale", "sample_ratio", "aligned",
                                    "layout", "mode")}
        kw["pooled_size"] = tuple(kw["pooled_size"])
        return [args[0], ConstArg(attrs["rois"], attrs["rois_dtype"])], kw

    def reference(self, xs, attrs):
        x = f64(xs[0])
        if attrs["layout"] == "NHWC":
            x = x.transpose(0, 3, 1, 2)
        _, C, H, W = x.shape
        PH, PW = attrs["pooled_size"]
        s, ratio = attrs["spatial_scale"], attrs["sample_ratio"]
        out = np.zeros((len(attrs["rois"]), C, PH, PW))

        def bilinear(img, y, xx):   # img (C, H, W)
            if y < -1.0 or xx < -1.0 or y > H or xx > W:
                return np.zeros(C)
            y, xx = min(max(y, 0.0), H - 1.0), min(max(xx, 0.0), W - 1.0)
            y0, x0 = math.floor(y), math.floor(xx)
            ly, lx = y - y0, xx - x0
            v = np.zeros(C)
            for yy, wy in ((y0, 1 - ly), (y0 + 1, ly)):
                for xp, wx in ((x0, 1 - lx), (x0 + 1, lx)):
                    if 0 <= yy <= H - 1 and 0 <= xp <= W - 1:
                        v = v + wx * wy * img[:, yy, xp]
            return v

        for i, roi in enumerate(attrs["rois"]):
            img = x[int(roi[0])]
            sx, sy, ex, ey = (r * s for r in roi[1:])
            rh, rw = ey - sy, ex - sx
            if not attrs["aligned"]:
                rh, rw = max(rh, 1.0), max(rw, 1.0)
            bh, bw = rh / PH, rw / PW
            gh = ratio if ratio > 0 else math.ceil(rh / PH)
            gw = ratio if ratio > 0 else math.ceil(rw / PW)
            for ph in range(PH):
                for pw in range(PW):
                    vals = [bilinear(img, sy + ph * bh + (a + 0.5) * bh / gh,
                                     sx + pw * bw + (b + 0.5) * bw / gw)
                            for a in range(gh) for b in range(gw)]
                    out[i, :, ph, pw] = (np.sum(vals, axis=0) / (gh * gw)
                                         if attrs["mode"] == "avg" else np.max(vals, axis=0))
        return out if attrs["layout"] == "NCHW" else out.transpose(0, 2, 3, 1)


@dataclass
class RoiPool(OpSpec):
    dtypes: tuple = FLOATS

    def sample(self, ctx):
        ch = ctx.ch

        def ok(v):
            return D.is_static(v.shape[0]) and _finite_small(v)

        x = ctx.pick(dtypes=self.dtypes, rank=4, pred=ok, max_dim=6)
        if not ok(x):
            return None
        H, W = _hw(x, "NCHW")
        scale = ch.choice([1.0, 1.0, 0.5, 0.25, 2.0])
        rois = []
        for _ in range(ch.integer(1, 4)):
            if ch.boolean(0.75):   # inside the image
                c = [ch.integer(0, 8 * W - 8) / 8, ch.integer(0, 8 * H - 8) / 8]
                e = [c[0] + ch.integer(0, int(8 * W - 8 * c[0])) / 8,
                     c[1] + ch.integer(0, int(8 * H - 8 * c[1])) / 8]
            else:                  # anywhere near it, corners possibly swapped
                c = [ch.integer(-12, 8 * W + 4) / 8, ch.integer(-12, 8 * H + 4) / 8]
                e = [c[0] + ch.integer(-8, 8 * W) / 8, c[1] + ch.integer(-8, 8 * H) / 8]
            rois.append([float(ch.integer(0, x.shape[0] - 1)),
                         c[0] / scale, c[1] / scale, e[0] / scale, e[1] / scale])
        return [x], {"rois": rois, "rois_dtype": ch.choice(("float32", "float64")),
                     "pooled_size": [ch.integer(1, 4), ch.integer(1, 4)],
                     "spatial_scale": scale, "layout": "NCHW"}

    def infer(self, tys, attrs):
        x = tys[0]
        ph, pw = attrs["pooled_size"]
        return TensorTy([len(attrs["rois"]), x.shape[1], ph, pw], x.dtype)

    def interval(self, ins, attrs, out):
        return (min(0.0, ins[0].lo), max(0.0, ins[0].hi))

    def exact(self, ins, attrs, out):
        return ins[0].exact   # each result is an input element or 0

    def call(self, args, attrs):
        return [args[0], ConstArg(attrs["rois"], attrs["rois_dtype"])], {
            "pooled_size": tuple(attrs["pooled_size"]),
            "spatial_scale": attrs["spatial_scale"], "layout": attrs["layout"]}

    def reference(self, xs, attrs):
        x = xs[0]
        _, C, H, W = x.shape
        PH, PW = attrs["pooled_size"]
        ft = np.dtype(attrs["rois_dtype"]).type      # TOPI computes bins in the rois' dtype
        rois = np.array(attrs["rois"], dtype=ft)
        s = ft(attrs["spatial_scale"])
        out = np.zeros((len(rois), C, PH, PW), dtype=x.dtype)

        def rnd(v):
            return int(np.floor(v * s + ft(0.5)))

        for i, roi in enumerate(rois):
            sx, sy, ex, ey = (rnd(v) for v in roi[1:])
            rh, rw = max(ey - sy + 1, 1), max(ex - sx + 1, 1)
            bh, bw = ft(rh) / ft(PH), ft(rw) / ft(PW)
            for ph in range(PH):
                h0 = min(max(int(np.floor(ft(ph) * bh)) + sy, 0), H)
                h1 = min(max(int(np.ceil(ft(ph + 1) * bh)) + sy, 0), H)
                for pw in range(PW):
                    w0 = min(max(int(np.floor(ft(pw) * bw)) + sx, 0), W)
                    w1 = min(max(int(np.ceil(ft(pw + 1) * bw)) + sx, 0), W)
                    if h1 > h0 and w1 > w0:
                        out[i, :, ph, pw] = x[int(roi[0]), :, h0:h1, w0:w1].max(axis=(1, 2))
        return out


@dataclass
class GetValidCounts(OpSpec):
    dtypes: tuple = FLOATS + ("int32", "int64")

    def sample(self, ctx):
        ch = ctx.ch

        def ok(v):
            return v.exact and D.is_static(v.shape[2]) and _finite_small(v)

        x = ctx.pick(dtypes=self.dtypes, rank=3, pred=ok, max_dim=6)
        if not ok(x):
            return None
        L = x.shape[2]
        lo, hi = math.floor(x.lo), math.ceil(x.hi)
        if x.dtype in FLOATS:   # mostly inside the data's range, sometimes past it
            thr = ch.integer(2 * lo, 2 * hi) / 4 if ch.boolean(0.85) else \
                ch.choice([lo - 1.0, hi + 1.0])
        else:
            thr = float(ch.integer(lo // 2, -(-hi // 2)) if ch.boolean(0.85) else
                        ch.choice([lo - 1, hi + 1]))
        return [x], {"score_threshold": thr,
                     "id_index": ch.choice([-1, ch.integer(0, L - 1)]),
                     "score_index": ch.integer(0, L - 1)}

    def infer(self, tys, attrs):
        x = tys[0]
        B, A = x.shape[0], x.shape[1]
        return TupleTy([TensorTy([B], "int32"), TensorTy(list(x.shape), x.dtype),
                        TensorTy([B, A], "int32")])

    def interval(self, ins, attrs, out):   # one bound for all three fields
        x = ins[0]
        from .nn import _dim_range

        return (min(x.lo, -1.0), max(x.hi, float(_dim_range(x.shape[1])[1])))

    def exact(self, ins, attrs, out):
        return ins[0].exact

    def reference(self, xs, attrs):
        x = xs[0]
        B, A, L = x.shape
        thr = np.asarray(attrs["score_threshold"]).astype(x.dtype)
        count = np.zeros(B, dtype=np.int32)
        out = np.full(x.shape, -1, dtype=x.dtype)
        idx = np.full((B, A), -1, dtype=np.int32)
        for b in range(B):
            keep = x[b, :, attrs["score_index"]] > thr
            if attrs["id_index"] >= 0:
                keep &= x[b, :, attrs["id_index"]] >= 0
            js = np.nonzero(keep)[0]
            count[b] = len(js)
            out[b, :len(js)] = x[b, js]
            idx[b, :len(js)] = js
        return count, out, idx


def _representable(f: fractions.Fraction, dtype) -> bool:
    d = float(f)
    return fractions.Fraction(d) == f and float(np.asarray(d).astype(dtype)) == d


# relative distance from the threshold beyond which rounding (~10 operations in the data's
# dtype) cannot move the IoU across it
_IOU_MARGIN = {"float32": 1e-5, "float64": 1e-12, "float16": 2e-2, "bfloat16": 1e-1}


def _iou_at_least(a, b, c: int, thr, dtype, thr_dtype=None) -> bool:
    """TOPI's ``iou(a, b) >= thr`` for boxes ``a``, ``b`` (rows; corners at c..c+3), decided
    exactly (see the module docstring); raises ValueError where rounding could decide. The IoU
    is computed in ``dtype``, the threshold held in ``thr_dtype`` (default: the same)."""
    F = fractions.Fraction
    name = "bfloat16" if "bfloat16" in str(dtype) else np.dtype(dtype).name
    a = [F(float(v)) for v in a[c:c + 4]]
    b = [F(float(v)) for v in b[c:c + 4]]
    al, at, ar, ab = min(a[0], a[2]), min(a[1], a[3]), max(a[0], a[2]), max(a[1], a[3])
    bl, bt, br, bb = min(b[0], b[2]), min(b[1], b[3]), max(b[0], b[2]), max(b[1], b[3])
    wd, ht = min(ar, br) - max(al, bl), min(ab, bb) - max(at, bt)
    w, h = max(F(0), wd), max(F(0), ht)
    inter = h * w
    ea, eb = (ar - al) * (ab - at), (br - bl) * (bb - bt)
    union = ea + eb - inter
    thr_d = F(float(np.asarray(thr).astype(thr_dtype or dtype)))
    parts = (wd, ht, inter, ar - al, ab - at, br - bl, bb - bt, ea, eb, ea + eb, union)
    if all(_representable(v, dtype) for v in parts):   # TVM computes these exactly
        if union <= 0:
            return thr_d <= 0
        q = np.asarray(float(inter)).astype(dtype) / np.asarray(float(union)).astype(dtype)
        return F(float(q)) >= thr_d
    if thr_d <= 0:         # iou is never negative, and 0 where union <= 0
        return True
    if union <= 0:
        raise ValueError("NMS: rounded union may or may not be positive")
    q = inter / union
    m = F(_IOU_MARGIN[name])
    if q >= thr_d * (1 + m):
        return True
    if q <= thr_d * (1 - m):
        return False
    raise ValueError(f"NMS: IoU {float(q)} within rounding of the threshold {float(thr_d)}")


@dataclass
class NMS(OpSpec):
    dtypes: tuple = FLOATS

    def sample(self, ctx):
        ch = ctx.ch
        dtypes = ("float32",) if ch.boolean(0.85) else self.dtypes

        def ok(v):
            return (v.exact and D.is_static(v.shape[1]) and D.is_static(v.shape[2])
                    and v.shape[2] >= 5 and _finite_small(v))

        x = ctx.pick(dtypes=dtypes, rank=3, pred=ok, max_dim=8)
        if not ok(x):
            return None
        B, A, L = x.shape
        vc = ctx.pick(dtypes=("int32",), rank=1, new_shape=[B], new_range=(0, A),
                      pred=lambda v: v.exact and 0 <= v.lo and v.hi <= A)
        ix = ctx.pick(dtypes=("int32",), rank=2, new_shape=[B, A], new_range=(-1, A - 1),
                      pred=lambda v: v.exact and abs(v.lo) < 2**20 and abs(v.hi) < 2**20)
        if not (vc.exact and 0 <= vc.lo and vc.hi <= A and D.same(vc.shape[0], B)):
            return None
        if not (ix.exact and D.same(ix.shape[0], B) and D.same(ix.shape[1], A)):
            return None
        coord = ch.integer(0, L - 4)
        return [x, vc, ix], {
            "max_output_size": ch.choice([-1, -1, ch.integer(1, A)]),
            "iou_threshold": ch.choice([0.0, 0.25, 0.3, 0.5, 0.5, 0.7, 1.0]),
            "force_suppress": ch.boolean(0.3),
            "top_k": ch.choice([-1, -1, 0, ch.integer(1, A)]),
            "coord_start": coord,
            "score_index": ch.choice([i for i in range(L) if not coord <= i < coord + 4]),
            "id_index": ch.choice([-1, ch.integer(0, L - 1)]),
            "return_indices": ch.boolean(0.5),
            "invalid_to_bottom": ch.boolean(0.5),
            "soft_nms_sigma": 0.0,
            "score_threshold": 0.0,
        }

    def infer(self, tys, attrs):
        x = tys[0]
        B, A = x.shape[0], x.shape[1]
        if attrs["return_indices"]:
            return TupleTy([TensorTy([B, A], "int32"), TensorTy([B, 1], "int32")])
        return TensorTy(list(x.shape), x.dtype)

    def interval(self, ins, attrs, out):   # rows of data or -1; indices' values, counts
        x, ix = ins[0], ins[2]
        if attrs["return_indices"]:
            return (min(ix.lo, -1.0), max(ix.hi, float(x.shape[1])))
        return (min(x.lo, -1.0), max(x.hi, -1.0))

    def exact(self, ins, attrs, out):
        return all(v.exact for v in ins)

    def reference(self, xs, attrs):
        x, vcount, indices = xs
        B, A, L = x.shape
        si, ii, cs = attrs["score_index"], attrs["id_index"], attrs["coord_start"]
        top_k, max_out = attrs["top_k"], attrs["max_output_size"]
        dt = x.dtype
        neg = np.asarray(-1).astype(dt)
        zero = np.asarray(0).astype(dt)
        boxes_out = np.full((B, A), -1, dtype=np.int32)
        counts = np.zeros((B, 1), dtype=np.int32)
        data_out = np.full(x.shape, neg, dtype=dt)
        for i in range(B):
            vc = int(vcount[i])
            sc = x[i, :, si]
            order = sorted(range(vc), key=lambda k: -float(sc[k]))   # stable, descending
            sidx = order + list(range(vc, A))
            nkeep = top_k if 0 < top_k < vc else vc
            out = np.full((A, L), neg, dtype=dt)
            box = np.full(A, -1, dtype=np.int64)
            for j in range(nkeep):
                out[j] = x[i, sidx[j]]
                box[j] = sidx[j]
            kept = 0
            for j in range(nkeep):
                if out[j, si] > zero and (max_out <= 0 or kept < max_out):
                    kept += 1
                    for k in range(j + 1, nkeep):
                        if not out[k, si] > zero:
                            continue
                        same = attrs["force_suppress"] or ii < 0 or out[j, ii] == out[k, ii]
                        if same and _iou_at_least(out[j], out[k], cs,
                                                  attrs["iou_threshold"], dt):
                            out[k, si] = neg
                            box[k] = -1
                else:
                    out[j] = neg
                    box[j] = -1
            if attrs["return_indices"]:
                n = 0
                for j in range(A):
                    if box[j] >= 0:
                        box[n] = indices[i, box[j]]
                        n += 1
                box[n:] = -1
                counts[i, 0] = n
                boxes_out[i] = box
            elif attrs["invalid_to_bottom"]:
                rows = out[out[:, si] >= zero]
                data_out[i, :len(rows)] = rows
            else:
                data_out[i] = out
        if attrs["return_indices"]:
            return boxes_out, counts
        return data_out


@dataclass
class AllClassNMS(OpSpec):
    dtypes: tuple = FLOATS

    def sample(self, ctx):
        ch = ctx.ch
        dtypes = ("float32",) if ch.boolean(0.8) else self.dtypes

        def ok(v):
            return v.exact and v.static() and _finite_small(v)

        sc = ctx.pick(dtypes=dtypes, rank=3, pred=ok, max_dim=6)
        if not ok(sc):
            return None
        B, C, N = sc.shape
        bx = ctx.pick(dtypes=(sc.dtype,), rank=3, new_shape=[B, N, 4], pred=ok)
        if not (ok(bx) and list(bx.shape) == [B, N, 4]):
            return None
        lo, hi = math.floor(sc.lo), math.ceil(sc.hi)
        return [bx, sc], {
            "max_output_boxes_per_class": ch.choice([0, 1, ch.integer(1, N), N, 1000]),
            "iou_threshold": ch.choice([0.0, 0.25, 0.3, 0.5, 0.5, 0.7, 1.0]),
            "score_threshold": ch.choice([0.0, ch.integer(2 * lo, 2 * hi) / 4,
                                          float(lo - 1)]),
            "output_format": "tensorflow"}

    def infer(self, tys, attrs):
        B, C, N = tys[1].shape
        return TupleTy([TensorTy([B, C * N, 2], "int64"), TensorTy([B, C * N], "float32"),
                        TensorTy([B], "int64")])

    def interval(self, ins, attrs, out):   # indices, scores, counts
        B, C, N = ins[1].shape
        return (min(0.0, ins[1].lo), max(ins[1].hi, float(C * N)))

    def exact(self, ins, attrs, out):
        return all(v.exact for v in ins)

    def call(self, args, attrs):
        return [args[0], args[1],
                ConstArg(attrs["max_output_boxes_per_class"], "int64"),
                ConstArg(attrs["iou_threshold"], "float32"),
                ConstArg(attrs["score_threshold"], "float32")], {
            "output_format": attrs["output_format"]}

    def reference(self, xs, attrs):
        boxes, scores = xs
        B, C, N = scores.shape
        M = attrs["max_output_boxes_per_class"]
        iou_t = float(np.float32(attrs["iou_threshold"]))
        st = float(np.float32(attrs["score_threshold"]))
        idx = np.zeros((B, C * N, 2), dtype=np.int64)
        out_sc = np.zeros((B, C * N), dtype=np.float32)
        total = np.zeros(B, dtype=np.int64)
        # TVM's BF16 legalization computes bfloat16 arithmetic in float32
        iou_dt = np.float32 if "bfloat16" in str(boxes.dtype) else boxes.dtype
        for b in range(B):
            row = 0
            for c in range(C):
                sc = [float(v) for v in scores[b, c]]
                order = sorted(range(N), key=lambda k: -sc[k])   # stable, descending
                ss = [sc[k] for k in order]
                nkeep = sum(v > st for v in ss)
                sel = []
                if iou_t > 0 and nkeep > 0:
                    for j in range(nkeep):
                        if ss[j] > -1.0 and len(sel) < M and ss[j] > st:
                            sel.append((order[j], ss[j]))
                            for k in range(j + 1, nkeep):
                                if ss[k] > 0 and _iou_at_least(
                                        boxes[b, order[j]], boxes[b, order[k]], 0, iou_t,
                                        iou_dt, np.float32):
                                    ss[k] = -1.0
                for box, v in sel:
                    idx[b, row] = (c, box)
                    out_sc[b, row] = v
                    row += 1
            total[b] = row
        return idx, out_sc, total


# |box| <= 25 with rounding of ~1 ulp per operation, and center - half cancels
MULTIBOX_TOL = dict(DEFAULT_TOL, float32=(1e-4, 1e-4), float16=(1e-2, 1e-1),
                    bfloat16=(3e-2, 5e-1))


@dataclass
class MultiboxTransformLoc(OpSpec):
    tol: dict = field(default_factory=lambda: dict(MULTIBOX_TOL))

    def sample(self, ctx):
        ch = ctx.ch
        softmax = ch.boolean(0.6)

        def ok(v):
            return (D.is_static(v.shape[2]) and _finite_small(v)
                    and (softmax or v.exact))

        cls = ctx.pick(dtypes=self.dtypes, rank=3, pred=ok, max_dim=6)
        if not ok(cls):
            return None
        B, C, N = cls.shape

        def small(v):
            return math.isfinite(v.lo) and math.isfinite(v.hi) and -2 <= v.lo and v.hi <= 2

        loc = ctx.pick(dtypes=(cls.dtype,), rank=2, new_shape=[B, 4 * N], new_range=(-2, 2),
                       pred=small)
        anc = ctx.pick(dtypes=(cls.dtype,), rank=3, new_shape=[1, N, 4], new_range=(-2, 2),
                       pred=small)
        if not (small(loc) and small(anc) and D.same(loc.shape[0], B)
                and loc.shape[1] == 4 * N and list(anc.shape) == [1, N, 4]):
            return None
        if not softmax:
            lo, hi = math.floor(cls.lo), math.ceil(cls.hi)
            thr = ch.choice([0.0, ch.integer(2 * lo, 2 * hi) / 4])
        elif cls.dtype in ("float32", "float64") and ch.boolean(0.6):
            thr = ch.choice([0.1, 0.25, 0.3, 0.5])
        else:
            thr = 0.0
        return [cls, loc, anc], {
            "clip": ch.boolean(0.4), "threshold": thr,
            "variances": [ch.choice([1.0, 0.5, 0.2, 0.1]) for _ in range(4)],
            "keep_background": ch.boolean(0.6), "apply_softmax": softmax}

    def infer(self, tys, attrs):
        cls = tys[0]
        B, C, N = cls.shape
        return TupleTy([TensorTy([B, N, 4], cls.dtype), TensorTy([B, C, N], cls.dtype)])

    def interval(self, ins, attrs, out):   # one bound for boxes and scores
        if attrs["clip"]:
            box = (0.0, 1.0)
        else:
            v = max(attrs["variances"])
            # |center| <= 2 * v * 4 + 2, half <= 0.5 * exp(2 * v) * 4
            b = 8 * v + 2 + 2 * math.exp(2 * v)
            box = (-b, b)
        sc = (0.0, 1.0) if attrs["apply_softmax"] else \
            (min(0.0, ins[0].lo), max(0.0, ins[0].hi))
        return (min(box[0], sc[0]), max(box[1], sc[1]))

    def reference(self, xs, attrs):
        cls, loc, anc = (f64(x) for x in xs)
        B, C, N = cls.shape
        vx, vy, vw, vh = attrs["variances"]
        e = loc.reshape(B, N, 4)
        left, top, right, bottom = (anc[0, :, k] for k in range(4))
        ay, ax = (top + bottom) * 0.5, (left + right) * 0.5
        ah, aw = bottom - top, right - left
        yc = e[..., 1] * vy * ah + ay
        xc = e[..., 0] * vx * aw + ax
        hh = 0.5 * np.exp(e[..., 3] * vh) * ah
        hw = 0.5 * np.exp(e[..., 2] * vw) * aw
        boxes = np.stack([yc - hh, xc - hw, yc + hh, xc + hw], axis=-1)
        if attrs["clip"]:
            boxes = np.clip(boxes, 0.0, 1.0)
        thr = float(np.asarray(attrs["threshold"]).astype(xs[0].dtype))
        if attrs["apply_softmax"]:
            z = np.exp(cls - cls.max(axis=1, keepdims=True))
            scores = z / z.sum(axis=1, keepdims=True)
            if thr > 0 and np.any(np.abs(scores - thr) <= 1e-5 * thr):
                raise ValueError("multibox: a softmax score within rounding of the threshold")
        else:
            scores = cls
        scores = scores * (scores >= thr)
        if not attrs["keep_background"]:
            scores[:, 0, :] = 0.0
        return boxes, scores


SPECS: list[OpSpec] = [
    RoiAlign("relax.vision.roi_align", weight=0.4),
    RoiPool("relax.vision.roi_pool", weight=0.4),
    GetValidCounts("relax.vision.get_valid_counts", weight=0.3, discontinuous=True),
    NMS("relax.vision.non_max_suppression", weight=0.3, discontinuous=True),
    AllClassNMS("relax.vision.all_class_non_max_suppression", weight=0.3,
                discontinuous=True),
    MultiboxTransformLoc("relax.vision.multibox_transform_loc", weight=0.3),
]
