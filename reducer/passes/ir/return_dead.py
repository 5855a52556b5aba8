from __future__ import annotations

from ..base import IRPass
from .helpers import bindings, entry, live_vars, rebuild, tvm_api


class ReturnDead(IRPass):
    """Return a value nothing uses (the crashing op a removal left dead) instead of main's
    result, and drop the parameters that only the old result needed."""

    name = "return_dead_value"
    measures = ("params", "text")

    def targets(self, mod):
        f = entry(mod)[1]
        live = live_vars(f)
        return [i for i, b in enumerate(bindings(f)) if b.var not in live]

    def edit(self, mod, chosen):
        _, _, relax, _ = tvm_api()
        gv, f = entry(mod)
        bs = bindings(f)
        f = rebuild(f, ret=bs[max(chosen)].var)
        used = set()
        for b in bindings(f):
            used.update(relax.analysis.free_vars(b.value))
        used.update(relax.analysis.free_vars(f.body.body))
        unused = frozenset(i for i, p in enumerate(f.params) if p not in used)
        return self.finish(mod, {gv: rebuild(f, drop_params=unused)})
