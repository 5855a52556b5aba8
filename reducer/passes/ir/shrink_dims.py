from __future__ import annotations

from ..base import IRPass
from .helpers import entry, makeable, rebuild, tvm_api


class ShrinkDims(IRPass):
    """Shrink a static dim value of main's parameters everywhere (parameters, shape
    expressions, match_cast types), to 1 or to half."""

    name = "shrink_dims"
    measures = ("text",)

    def targets(self, mod):
        tvm, _, _, _ = tvm_api()
        vals = sorted({int(d.value) for d in _param_dims(entry(mod)[1])
                       if isinstance(d, tvm.tirx.IntImm) and int(d.value) > 1}, reverse=True)
        return [(v, 1) for v in vals] + [(v, v // 2) for v in vals if v >= 4]

    def edit(self, mod, chosen):
        tvm, _, relax, _ = tvm_api()
        new: dict = {}
        for v, to in chosen:
            new[v] = min(new.get(v, v), to)

        def dim(d):
            if isinstance(d, tvm.tirx.IntImm) and int(d.value) in new:
                return tvm.tirx.IntImm(str(d.ty), new[int(d.value)])
            return d

        def ty(t):
            if isinstance(t, relax.TensorType) and isinstance(t.shape, relax.ShapeExpr):
                return relax.TensorType([dim(d) for d in t.shape.values], t.dtype)
            if isinstance(t, relax.TupleType):
                return relax.TupleType([ty(x) for x in t.fields])
            return t

        gv, f = entry(mod)
        return self.finish(mod, {gv: rebuild(f, dim_map=dim, type_map=ty)})


def _param_dims(func):
    for p in func.params:
        if makeable(p.ty):
            yield from p.ty.shape.values
