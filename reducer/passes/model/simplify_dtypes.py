from __future__ import annotations

from fuzz.generate import default_range
from fuzz.model import TensorTy, ty_from_json

from ..base import ModelPass


class SimplifyDtypes(ModelPass):
    """float32 instead of another dtype, for all inputs of that dtype at once."""

    name = "simplify_dtypes"
    measures = ("dtypes",)
    strict, shapes = False, True

    def targets(self, prog):
        ds = set()
        for f in prog.functions:
            for p in f.params:
                for t in (p.ty, p.actual):
                    if isinstance(t, TensorTy) and t.dtype not in ("", "float32"):
                        ds.add(t.dtype)
        return sorted(ds)

    def edit(self, prog, chosen):
        gone = set(chosen)
        for f in prog.functions:
            for p in f.params:
                for attr in ("ty", "actual"):
                    t = getattr(p, attr)
                    if isinstance(t, TensorTy) and t.dtype in gone:
                        setattr(p, attr, TensorTy(t.shape, "float32", t.ndim))
                if p.runtime_ty.dtype == "float32" and (p.lo, p.hi) != default_range("float32"):
                    p.lo, p.hi = default_range("float32")
            for n in f.nodes():
                if n.op in ("match_cast", "const"):
                    t = ty_from_json(n.attrs["ty"])
                    if isinstance(t, TensorTy) and t.dtype in gone:
                        n.attrs["ty"] = TensorTy(t.shape, "float32", t.ndim).to_json()
        return True
