from __future__ import annotations

from ..base import ModelPass
from .helpers import variants


class DropVariants(ModelPass):
    """Build the case fewer ways: the failing variant alone is usually enough."""

    name = "drop_variants"
    measures = ("variants",)

    def targets(self, prog):
        vs = variants(prog)
        if len(vs) < 2:
            return []
        # The failing variant last: the first halving then tries dropping all the others.
        return sorted(range(len(vs)), key=lambda i: vs[i] == self.ctx.failing_variant)

    def edit(self, prog, chosen):
        vs = [v for i, v in enumerate(variants(prog)) if i not in set(chosen)]
        prog.meta["variants"] = vs
        return bool(vs)
