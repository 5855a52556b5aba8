from __future__ import annotations

from ..base import ModelPass
from .helpers import free_signature


class DropUnusedParams(ModelPass):
    """Parameters nothing uses, where the signature may change."""

    name = "drop_unused_params"
    measures = ("params",)

    def targets(self, prog):
        out = []
        for f in prog.functions:
            if free_signature(prog, f):
                used = {a for n in f.nodes() for a in n.args} | {f.ret}
                out += [(f.name, p.name) for p in f.params if p.name not in used]
        return out

    def edit(self, prog, chosen):
        for f in prog.functions:
            f.params = [p for p in f.params if (f.name, p.name) not in set(chosen)]
        return True
