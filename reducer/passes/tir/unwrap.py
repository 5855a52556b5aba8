from __future__ import annotations

from fuzz.tir import model as M

from ..base import TirPass
from .helpers import container, outermost, paths_where, replace_at, subst_stmts


class Unwrap(TirPass):
    """A loop becomes its body at iteration 0; a conditional its then-branch; a let its body
    with the value substituted; a block its body with each iter var bound to its binding."""

    name = "tir-unwrap"
    measures = ("statements",)

    def targets(self, prog):
        return paths_where(prog, lambda s: isinstance(s, (M.For, M.If, M.Let, M.Block)))

    def edit(self, prog, chosen):
        edits = {}
        for p in outermost(chosen):
            lst, i = container(prog.body, p)
            s = lst[i]
            if isinstance(s, M.For):
                body = s.body
                subst_stmts(body, s.var, M.const("int32", 0))
            elif isinstance(s, M.If):
                body = s.then
            elif isinstance(s, M.Let):
                body = s.body
                subst_stmts(body, s.var, s.value)
            else:
                if s.init is not None or any(iv.kind == "R" for iv in s.iter_vars):
                    return False   # a reduction needs its block (init runs once)
                body = s.body
                for iv in s.iter_vars:
                    subst_stmts(body, iv.name, iv.binding)
            edits[p] = body
        replace_at(prog.body, edits)
        return True
