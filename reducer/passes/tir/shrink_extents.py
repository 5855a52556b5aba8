from __future__ import annotations

from fuzz.tir import model as M

from ..base import TirPass
from .helpers import container, paths_where


class ShrinkExtents(TirPass):
    """A serial loop of extent > 1 runs once."""

    name = "tir-shrink-extents"
    measures = ("extents",)

    def targets(self, prog):
        return paths_where(prog, lambda s: isinstance(s, M.For) and s.extent > 1)

    def edit(self, prog, chosen):
        for c in chosen:
            lst, i = container(prog.body, tuple(c))
            lst[i].extent = 1
        return True
