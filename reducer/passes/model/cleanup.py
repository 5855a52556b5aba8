from __future__ import annotations

from typing import Optional

from fuzz.model import Program

from ..base import ModelPass
from .drop_unused_params import DropUnusedParams
from .drop_variants import DropVariants
from .remove_dead import RemoveDead
from .simplify_variant import SimplifyVariant


class Cleanup(ModelPass):
    """One candidate that makes every change that almost always keeps a bug: the failing
    build alone, plain build options, no dead code, no unused parameters.
    Accepted, it saves a call per pass; refused, the passes run one by one."""

    name = "cleanup"
    strict = False
    parts = (DropVariants, SimplifyVariant, RemoveDead, DropUnusedParams)
    measures = tuple(dict.fromkeys(m for p in parts for m in p.measures))

    def targets(self, prog):
        return ["all"] if self._cleaned(prog) is not None else []

    def _cleaned(self, prog) -> Optional[Program]:
        cur, changed = prog, False
        for cls in self.parts:
            p = cls(self.ctx)
            n = p.count(cur)
            if not n:
                continue
            # DropVariants orders the failing variant last: keep it.
            chosen = range(n - 1) if cls is DropVariants else range(n)
            nxt = p.apply(cur, frozenset(chosen)) if chosen else None
            if nxt is not None:
                cur, changed = nxt, True
        return cur if changed else None

    def apply(self, prog, chosen):
        return self._cleaned(prog) if chosen else None
