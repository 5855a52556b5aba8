from __future__ import annotations

from ..base import IRPass
from .helpers import Refused, bindings, order, rebuild, relax_functions, tvm_api


class DropFunctions(IRPass):
    """Remove functions other than main; bindings that used one become parameters."""

    name = "drop_functions"
    measures = ("bindings", "functions")

    def targets(self, mod):
        return sorted(gv.name_hint for gv in mod.functions if gv.name_hint != "main")

    def edit(self, mod, chosen):
        _, _, relax, _ = tvm_api()
        gone = {gv for gv in mod.functions if gv.name_hint in set(chosen)}
        updates = {}
        for gv, f in relax_functions(mod):
            if gv in gone:
                continue
            hit = {b.var for b in bindings(f)
                   if set(relax.analysis.all_global_vars(b.value)) & gone}
            if not hit:
                continue
            if gv.name_hint != "main":
                raise Refused("a callee uses a dropped function")
            updates[gv] = rebuild(f, new_params={v: None for v in order(f, hit)})
        return self.finish(mod, updates, gone)
