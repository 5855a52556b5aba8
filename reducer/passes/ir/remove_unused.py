from __future__ import annotations

from ..base import IRPass
from .helpers import bindings, live_vars, rebuild, relax_functions, tvm_api


class RemoveUnused(IRPass):
    """Remove bindings the returned value does not depend on."""

    name = "remove_unused"
    measures = ("bindings",)

    def targets(self, mod):
        out = []
        for gv, f in relax_functions(mod):
            live = live_vars(f)
            out += [(gv.name_hint, i) for i, b in enumerate(bindings(f)) if b.var not in live]
        return out

    def edit(self, mod, chosen):
        _, _, relax, _ = tvm_api()
        updates = {}
        for gv, f in relax_functions(mod):
            idx = {i for name, i in chosen if name == gv.name_hint}
            if idx:
                bs = bindings(f)
                gone = {bs[i].var for i in idx}
                live = live_vars(f)
                for b in bs:   # dead users of a dropped value go with it
                    if b.var not in live and set(relax.analysis.free_vars(b.value)) & gone:
                        gone.add(b.var)
                updates[gv] = rebuild(f, drop=frozenset(gone))
        return self.finish(mod, updates)
