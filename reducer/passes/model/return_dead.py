from __future__ import annotations

from ..base import ModelPass
from .helpers import free_signature, live


class ReturnDead(ModelPass):
    """Return a value nothing uses (the crashing op a removal left dead) instead of the
    function's result, and drop the parameters only the old result needed."""

    name = "return_dead_value"
    # Counted only through what it drops: returning a dead value in place of a plain (not
    # tuple) result that needed no parameter of its own leaves the size key unchanged.
    measures = ("outputs", "params")

    def targets(self, prog):
        return [(f.name, n.name) for f in prog.functions if free_signature(prog, f)
                for n in f.nodes() if n.name not in live(f)]

    def edit(self, prog, chosen):
        for f in prog.functions:
            mine = [n for fn, n in chosen if fn == f.name]
            if mine:
                order = [n.name for n in f.nodes()]
                f.ret = max(mine, key=order.index)
                used = {a for n in f.nodes() for a in n.args} | {f.ret}
                f.params = [p for p in f.params if p.name in used]
        return True
