from __future__ import annotations

from fuzz.model import TensorTy

from ..base import ModelPass
from .helpers import map_types


class ShrinkDims(ModelPass):
    """Shrink a static dim value everywhere it occurs in the entry's inputs (and in shape
    attributes), to 1 or to half; one value at a time keeps ops that tie dims together."""

    name = "shrink_dims"
    measures = ("dims",)
    strict, shapes = False, True

    def targets(self, prog):
        values = set()
        for f in prog.functions:
            for p in f.params:
                t = p.runtime_ty
                if isinstance(t, TensorTy):
                    values.update(d for d in t.shape or [] if isinstance(d, int) and d > 1)
        out = [(v, 1) for v in sorted(values, reverse=True)]
        return out + [(v, v // 2) for v in sorted(values, reverse=True) if v >= 4]

    def edit(self, prog, chosen):
        new: dict[int, int] = {}
        for v, to in chosen:
            new[v] = min(new.get(v, v), to)

        def fn(t):
            if t.shape is None:
                return t
            return TensorTy([new.get(d, d) if isinstance(d, int) else d for d in t.shape],
                            t.dtype, t.ndim)

        map_types(prog, fn)
        for f in prog.functions:
            for n in f.nodes():
                if isinstance(n.attrs.get("shape"), list):
                    n.attrs["shape"] = [new.get(d, d) if isinstance(d, int) else d
                                        for d in n.attrs["shape"]]
        return True
