from __future__ import annotations

from ...size import plain, plain_dtype
from ..base import IRPass
from .helpers import entry, makeable, rebuild, tvm_api


class SimplifyDtypes(IRPass):
    """The plain dtype of its kind (``reducer.size.plain_dtype``: float32 for a float, int32
    for an integer) for main's parameters of another dtype (all of one dtype at once)."""

    name = "simplify_dtypes"
    measures = ("text",)

    def targets(self, mod):
        f = entry(mod)[1]
        return sorted({str(p.ty.dtype) for p in f.params if makeable(p.ty)
                       and not plain(str(p.ty.dtype))})

    def edit(self, mod, chosen):
        _, _, relax, _ = tvm_api()
        gv, f = entry(mod)
        types = {i: relax.TensorType(p.ty.shape.values, plain_dtype(str(p.ty.dtype)))
                 for i, p in enumerate(f.params)
                 if makeable(p.ty) and str(p.ty.dtype) in set(chosen)}
        return self.finish(mod, {gv: rebuild(f, param_types=types)})
