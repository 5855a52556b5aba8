from __future__ import annotations

import re
from typing import Any

from fuzz import dims as D
from fuzz.model import TensorTy

from ..base import ModelPass
from .helpers import map_types, ty_vars


class StaticDims(ModelPass):
    """Make a symbolic dim static, with the value the case ran with."""

    name = "static_dims"
    measures = ("symbolic_dims",)
    strict, shapes = False, True

    def targets(self, prog):
        # The parameters' dims only: what its measure counts. A dim only node types hold (a
        # fresh dim a match_cast, reshape_dyn or dyn_slice defines) made static leaves every
        # measure as it was, a candidate the driver could never accept.
        names = set()
        for f in prog.functions:
            for p in f.params:
                for t in (p.ty, p.actual):
                    names.update(ty_vars(t))
        return sorted(names)

    def edit(self, prog, chosen):
        for var in chosen:
            value = int(self.ctx.env.get(var, 1))

            def fn(t, var=var, value=value):
                if t.shape is None:
                    return t
                return TensorTy([_subst_dim(d, var, value) for d in t.shape], t.dtype, t.ndim)

            map_types(prog, fn)
            for f in prog.functions:
                for n in f.nodes():
                    if n.op not in ("match_cast", "const"):
                        n.attrs = _subst_attr(n.attrs, var, value)
        return True


def _subst_dim(d, var: str, value: int):
    if isinstance(d, int) or var not in D.free_vars(d):
        return d
    text = re.sub(rf"\b{re.escape(var)}\b", str(value), d)
    try:
        return D.evaluate(text, {}) if not D.free_vars(text) else text
    except (ValueError, KeyError, ZeroDivisionError, SyntaxError):
        return text


def _subst_attr(x: Any, var: str, value: int):
    if isinstance(x, str):
        try:
            D.parse(x)
        except (ValueError, SyntaxError):
            return x
        return _subst_dim(x, var, value)
    if isinstance(x, list):
        return [_subst_attr(y, var, value) for y in x]
    if isinstance(x, dict):
        return {k: _subst_attr(v, var, value) for k, v in x.items()}
    return x
