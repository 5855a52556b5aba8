from __future__ import annotations

from ..base import IRPass
from .helpers import rebuild, relax_functions, tvm_api


class PlainBlocks(IRPass):
    """No dataflow blocks: one plain binding block per function."""

    name = "plain_blocks"
    measures = ("text",)

    def targets(self, mod):
        _, _, relax, _ = tvm_api()
        return [gv.name_hint for gv, f in relax_functions(mod)
                if len(f.body.blocks) > 1
                or any(isinstance(b, relax.DataflowBlock) for b in f.body.blocks)]

    def edit(self, mod, chosen):
        updates = {gv: rebuild(f, plain=True) for gv, f in relax_functions(mod)
                   if gv.name_hint in set(chosen)}
        return self.finish(mod, updates)
