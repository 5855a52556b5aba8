from __future__ import annotations

from ..base import ModelPass
from .helpers import drop_nodes, live


class RemoveDead(ModelPass):
    """Remove nodes the returned value does not depend on."""

    name = "remove_dead"
    measures = ("nodes",)

    def targets(self, prog):
        return [(f.name, n.name) for f in prog.functions for n in f.nodes()
                if n.name not in live(f)]

    def edit(self, prog, chosen):
        for f in prog.functions:
            drop_nodes(f, {n for fn, n in chosen if fn == f.name})
        return True
