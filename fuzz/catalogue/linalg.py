"""Op family: linalg. relax.matmul (batched, broadcasting, 1-D operands, out_dtype), einsum
over a set of subscript patterns, and outer.

Tolerance: TVM accumulates a matmul/einsum contraction in the computation dtype (out_dtype,
else the input dtype), rounding each partial sum, while the reference rounds once. In float16
and bfloat16 that error grows with (contraction length x term magnitude); samplers keep it
inside reduce.LOWP_BUDGET and the specs use reduce.LOWP_TOL (measured, see reduce.py).

Known TVM 0.27 bug sampled here: einsum with an empty contraction (a summed letter of size 0)
returns uninitialized memory instead of zeros (matmul special-cases K = 0 and is right).

Known TVM 0.27 bug not sampled here: outer of two different dtypes is typed with the first
operand's dtype but returns the promoted dtype at run time (int8 x float32 -> float32 data in
an int8-typed tensor); outer is sampled with equal dtypes like the other binary ops.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .. import dims as D
from ..model import TensorTy
from .reduce import (LOWP_TOL, WIDER, count_range, dim_hi, dtype_name, finite, lowp_ok,
                     scale)
from .spec import NUMERIC, OpSpec, TupleArg, broadcast_dims, cast, f64, is_float

MAX_NUMEL = 1 << 14   # as fuzz.generate (not imported: it imports the catalogue)


def products(alo, ahi, blo, bhi) -> tuple[float, float]:
    ps = [alo * blo, alo * bhi, ahi * blo, ahi * bhi]
    ps = [0.0 if math.isnan(p) else p for p in ps]
    return min(ps), max(ps)


def _compute(xs: list, dtype: str):
    """Operands for a numpy reference whose result has ``dtype``: float64 or int64."""
    if is_float(dtype) or any(is_float(dtype_name(x)) for x in xs):
        return [f64(x).astype(np.float64) for x in xs]
    return [x.astype(np.int64) for x in xs]


def _numel_ok(shape) -> bool:
    return math.prod(dim_hi(d) for d in shape) <= MAX_NUMEL


# --- matmul ----------------------------------------------------------------------------------
@dataclass
class Matmul(OpSpec):
    dtypes: tuple = NUMERIC

    def sample(self, ctx):
        a = ctx.pick(dtypes=self.dtypes, rank=(1, 4), pred=finite,
                     min_dim=0 if ctx.ch.boolean(0.1) else 1)
        k = a.shape[-1]
        if ctx.ch.boolean(0.2):
            b_shape = [k]
        else:
            batch = []
            for d in a.shape[:-2]:
                r = ctx.ch.integer(0, 9)
                batch.append(1 if r < 2 else ctx.dim(max_dim=4) if r < 4 and d == 1 else d)
            if batch and ctx.ch.boolean(0.3):          # b has fewer batch dims
                batch = batch[ctx.ch.integer(1, len(batch)):]
            elif len(batch) < 2 and ctx.ch.boolean(0.2):   # or more
                batch = [ctx.ch.choice([1, 2, 3])] + batch
            b_shape = batch + [k, ctx.dim()]
        if not _numel_ok(b_shape):
            return None
        out_dtype = None
        if ctx.ch.boolean(0.35):
            out_dtype = ctx.ch.choice((a.dtype,) + WIDER[a.dtype])
        b_dtypes = (a.dtype,)
        if out_dtype is not None and ctx.ch.boolean(0.25):
            # each operand is cast to out_dtype first, so they may differ when both widen
            b_dtypes = tuple(d for d in self.dtypes if d == out_dtype or out_dtype in WIDER[d])
        b = ctx.pick(dtypes=b_dtypes, rank=len(b_shape), new_shape=b_shape, pred=finite)
        ins = [a, b]
        attrs = {"out_dtype": out_dtype}
        kmax = count_range([ins[0].shape[-1]])[1]
        plo, phi = products(ins[0].lo, ins[0].hi, ins[1].lo, ins[1].hi)
        if not lowp_ok(out_dtype or a.dtype, kmax, max(abs(plo), abs(phi))):
            return None
        return ins, attrs

    def infer(self, tys, attrs):
        a, b = tys[0].shape, tys[1].shape
        batch = broadcast_dims(a[:-2], b[:-2])
        out = list(batch) + (a[-2:-1] if len(a) >= 2 else []) + (b[-1:] if len(b) >= 2 else [])
        return TensorTy(out, attrs["out_dtype"] or tys[0].dtype)

    def interval(self, ins, attrs, out):
        a, b = ins
        return scale(*products(a.lo, a.hi, b.lo, b.hi), *count_range([a.shape[-1]]))

    def reference(self, xs, attrs):
        dt = attrs["out_dtype"] or dtype_name(xs[0])
        return cast(np.matmul(*_compute(xs, dt)), dt)


# --- einsum ----------------------------------------------------------------------------------
EINSUM_PATTERNS = (
    "ij,jk->ik", "ij,jk", "ij,kj->ik", "bij,bjk->bik", "bhqd,bhkd->bhqk", "...ij,...jk->...ik",
    "ij,jk,kl->il", "ij,j->i", "i,j->ij", "i,i->", "i,i", "ij,ij->ij", "ij,ij->",
    "ij->ji", "ijk->kji", "ijk->ikj", "ba", "ii->i", "ii", "ij->", "ij->i", "ij->j", "i->",
)


def _parse(sub: str):
    """(input terms, output term) with the implicit output spelled out: letters seen once,
    in alphabetical order, after "..." when any input has it."""
    if "->" in sub:
        ins, out = sub.split("->")
        return ins.split(","), out
    ins = sub.split(",")
    letters = "".join(t.replace("...", "") for t in ins)
    once = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    return ins, ("..." if any("..." in t for t in ins) else "") + once


def _bind(terms, shapes):
    """Letter -> dim, and each operand's ellipsis dims."""
    dims, ells = {}, []
    for t, s in zip(terms, shapes):
        letters = t.replace("...", "")
        n_ell = len(s) - len(letters) if "..." in t else 0
        ells.append(list(s[:n_ell]))
        for c, d in zip(letters, s[n_ell:]):
            dims.setdefault(c, d)
    return dims, ells


@dataclass
class Einsum(OpSpec):
    dtypes: tuple = NUMERIC

    def sample(self, ctx):
        sub = ctx.ch.choice(EINSUM_PATTERNS)
        terms, out = _parse(sub)
        first = terms[0].replace("...", "")
        ell = "..." in terms[0]

        # Bind letters from a value in scope where one fits the first term, else sample dims.
        def fits(v):
            if not finite(v) or (v.rank != len(first) if not ell else v.rank < len(first)):
                return False
            got = {}
            for c, d in zip(first, v.shape[v.rank - len(first):]):
                if c in got and not D.same(got[c], d):
                    return False
                got[c] = d
            return True

        cands = ctx.candidates(self.dtypes, None, fits)
        dims: dict = {}
        ell_dims: list = []
        if cands and ctx.ch.boolean(0.6):
            x = ctx.ch.choice(cands)
            n_ell = x.rank - len(first)
            ell_dims = list(x.shape[:n_ell])
            for c, d in zip(first, x.shape[n_ell:]):
                dims[c] = d
            dtype = x.dtype
        else:
            dtype = ctx.dtype(self.dtypes)
            if ell:
                ell_dims = [ctx.dim(max_dim=4) for _ in range(ctx.ch.integer(0, 2))]
        for c in "".join(terms).replace("...", ""):
            if c not in dims:
                # an empty contraction now and then: the sum over nothing is 0
                dims[c] = 0 if c not in out and ctx.ch.boolean(0.03) else ctx.dim()
        ins = []
        for i, t in enumerate(terms):
            e = ell_dims if i == 0 or not ell_dims else \
                ell_dims[ctx.ch.integer(0, len(ell_dims)):]   # broadcasts against the first
            shape = (e if "..." in t else []) + [dims[c] for c in t.replace("...", "")]
            if not _numel_ok(shape):
                return None
            ins.append(ctx.pick(dtypes=(dtype,), rank=len(shape), new_shape=shape, pred=finite))
        attrs = {"subscripts": sub}
        plo, phi = self._product_range(ins)
        cmax = self._contracted(ins, sub)[1]
        if not lowp_ok(dtype, cmax, max(abs(plo), abs(phi))):
            return None
        return ins, attrs

    @staticmethod
    def _product_range(ins):
        lo, hi = ins[0].lo, ins[0].hi
        for v in ins[1:]:
            lo, hi = products(lo, hi, v.lo, v.hi)
        return lo, hi

    @staticmethod
    def _contracted(ins, sub):
        """Count range of the summed-over letters."""
        terms, out = _parse(sub)
        dims, _ = _bind(terms, [v.shape for v in ins])
        return count_range([d for c, d in dims.items() if c not in out])

    def infer(self, tys, attrs):
        terms, out = _parse(attrs["subscripts"])
        dims, ells = _bind(terms, [t.shape for t in tys])
        shape: list = []
        if "..." in out:
            e = []
            for x in ells:
                e = broadcast_dims(e, x)
            shape += e
        shape += [dims[c] for c in out.replace("...", "")]
        return TensorTy(shape, tys[0].dtype)

    def interval(self, ins, attrs, out):
        return scale(*self._product_range(ins), *self._contracted(ins, attrs["subscripts"]))

    def exact(self, ins, attrs, out):
        # one operand and nothing summed (transpose, diagonal): pure data movement
        moves = len(ins) == 1 and self._contracted(ins, attrs["subscripts"]) == (1, 1)
        return super().exact(ins, attrs, out) or (moves and ins[0].exact)

    def call(self, args, attrs):
        return [TupleArg(tuple(args)), attrs["subscripts"]], {}

    def reference(self, xs, attrs):
        dt = dtype_name(xs[0])
        return cast(np.einsum(attrs["subscripts"], *_compute(xs, dt)), dt)


# --- outer -----------------------------------------------------------------------------------
@dataclass
class Outer(OpSpec):
    dtypes: tuple = NUMERIC

    def sample(self, ctx):
        a = ctx.pick(dtypes=self.dtypes, rank=1, pred=finite)
        b = ctx.pick(dtypes=(a.dtype,), rank=1, pred=finite)
        return [a, b], {}

    def infer(self, tys, attrs):
        return TensorTy([tys[0].shape[0], tys[1].shape[0]], tys[0].dtype)

    def interval(self, ins, attrs, out):
        a, b = ins
        return products(a.lo, a.hi, b.lo, b.hi)

    def reference(self, xs, attrs):
        dt = dtype_name(xs[0])
        return cast(np.multiply.outer(*_compute(xs, dt)), dt)


SPECS: list[OpSpec] = [
    Matmul("relax.matmul", tol=LOWP_TOL, weight=2.0),
    Einsum("relax.einsum", tol=LOWP_TOL),
    Outer("relax.outer", weight=0.5),
]
