from __future__ import annotations

from fuzz.tir import model as M

from ..base import TirPass
from .helpers import buffers, container, paths_where


class SimplifyValues(TirPass):
    """A stored value becomes one of its operands, or a constant of the buffer's dtype."""

    name = "tir-simplify-values"
    # A stored value that is a lone variable becomes a constant of the same size: counted
    # by no measure, such a candidate is never accepted.
    measures = ("expressions",)

    def targets(self, prog):
        return paths_where(prog, lambda s: isinstance(s, M.Store) and s.value[0] != "const")

    def edit(self, prog, chosen):
        dtypes = {b.name: b.dtype for b in buffers(prog)}
        for c in chosen:
            lst, i = container(prog.body, tuple(c))
            s = lst[i]
            dt = dtypes[s.buf]
            v = s.value
            if v[0] == "bin" and v[1] in ("+", "-", "*", "min", "max"):
                s.value = v[2]   # same dtype as the whole
            else:
                s.value = M.const(dt, False if dt == "bool" else (0.5 if "float" in dt else 1))
        return True
