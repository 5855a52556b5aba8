from __future__ import annotations

from ..base import IRPass
from .drop_unused_params import DropUnusedParams
from .helpers import Refused
from .plain_blocks import PlainBlocks
from .remove_unused import RemoveUnused


class Cleanup(IRPass):
    """One candidate with every change that almost always keeps a bug (no dead bindings, no
    unused parameters, plain blocks); refused, the passes run one by one."""

    name = "cleanup"
    parts = (RemoveUnused, DropUnusedParams, PlainBlocks)
    measures = tuple(dict.fromkeys(m for p in parts for m in p.measures))

    def targets(self, mod):
        return [0] if any(p(self.check).targets(mod) for p in self.parts) else []

    def edit(self, mod, chosen):
        changed = False
        for cls in self.parts:
            p = cls(self.check)
            n = len(p.targets(mod))
            if n:
                try:
                    mod, changed = p.apply(mod, set(range(n))), True
                except Refused:
                    pass
        if not changed:
            raise Refused("nothing to clean")
        return mod
