from __future__ import annotations

from ..base import IRPass
from .helpers import Refused, bindings, entry, rebuild, tvm_api


class ShrinkOutputs(IRPass):
    """Return fewer values: drop fields of main's returned tuple (one left: itself)."""

    name = "shrink_outputs"
    measures = ("text",)   # a bound tuple stays, dead, for remove_unused

    def _tuple(self, func):
        _, _, relax, _ = tvm_api()
        body = func.body.body
        if isinstance(body, relax.Tuple):
            return body
        for b in bindings(func):
            if b.var.same_as(body) and isinstance(b.value, relax.Tuple):
                return b.value
        return None

    def targets(self, mod):
        t = self._tuple(entry(mod)[1])
        return list(range(len(t.fields))) if t is not None and len(t.fields) > 0 else []

    def edit(self, mod, chosen):
        _, _, relax, _ = tvm_api()
        gv, f = entry(mod)
        t = self._tuple(f)
        keep = [x for i, x in enumerate(t.fields) if i not in set(chosen)]
        if not keep:
            raise Refused("no output left")
        ret = keep[0] if len(keep) == 1 else relax.Tuple(keep)
        return self.finish(mod, {gv: rebuild(f, ret=ret)})
