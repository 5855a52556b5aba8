from __future__ import annotations

from ..base import TirPass
from .helpers import outermost, paths_where, replace_at


class RemoveStmts(TirPass):
    """Whole statements (with everything under them)."""

    name = "tir-remove-stmts"
    measures = ("statements",)

    def targets(self, prog):
        return paths_where(prog, lambda s: True)

    def edit(self, prog, chosen):
        # A statement under a removed one goes with it.
        replace_at(prog.body, {p: [] for p in outermost(chosen)})
        return bool(prog.body)
