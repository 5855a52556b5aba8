from __future__ import annotations

from fuzz.model import TensorTy, ty_from_json

from ...size import plain, plain_dtype
from ..base import ModelPass


class SimplifyDtypes(ModelPass):
    """The plain dtype of its kind (``reducer.size.plain_dtype``: float32 for a float, int32
    for an integer) instead of another, for all inputs of that dtype at once."""

    name = "simplify_dtypes"
    measures = ("dtypes",)
    strict, shapes = False, True

    def targets(self, prog):
        ds = set()
        for f in prog.functions:
            for p in f.params:
                for t in (p.ty, p.actual):
                    if isinstance(t, TensorTy) and t.dtype and not plain(t.dtype):
                        ds.add(t.dtype)
        return sorted(ds)

    def edit(self, prog, chosen):
        gone = set(chosen)
        for f in prog.functions:
            for p in f.params:
                for attr in ("ty", "actual"):   # the input's range stays: it fits the
                    t = getattr(p, attr)          # plain dtype of its kind
                    if isinstance(t, TensorTy) and t.dtype in gone:
                        setattr(p, attr, TensorTy(t.shape, plain_dtype(t.dtype), t.ndim))
            for n in f.nodes():
                if n.op in ("match_cast", "const"):
                    t = ty_from_json(n.attrs["ty"])
                    if isinstance(t, TensorTy) and t.dtype in gone:
                        n.attrs["ty"] = TensorTy(t.shape, plain_dtype(t.dtype), t.ndim).to_json()
        return True
