from __future__ import annotations

from ..base import IRPass
from .helpers import bindings, entry, rebuild, tvm_api


class DropUnusedParams(IRPass):
    """Parameters of main nothing uses."""

    name = "drop_unused_params"
    measures = ("params",)

    def targets(self, mod):
        _, _, relax, _ = tvm_api()
        f = entry(mod)[1]
        used = set()
        for b in bindings(f):
            used.update(relax.analysis.free_vars(b.value))
        used.update(relax.analysis.free_vars(f.body.body))
        return [i for i, p in enumerate(f.params) if p not in used]

    def edit(self, mod, chosen):
        gv, f = entry(mod)
        return self.finish(mod, {gv: rebuild(f, drop_params=frozenset(chosen))})
