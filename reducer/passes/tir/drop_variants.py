from __future__ import annotations

from ..base import TirPass


class DropVariants(TirPass):
    """Extra compile variants, then TIR passes of a variant's pass order."""

    name = "tir-drop-variants"
    measures = ("variants",)

    def targets(self, prog):
        vs = prog.meta.get("variants") or []
        out = [["variant", i] for i in range(1, len(vs))]
        out += [["pass", i, j] for i, v in enumerate(vs) for j in range(len(v.get("passes") or []))]
        return out

    def edit(self, prog, chosen):
        vs = prog.meta.get("variants") or []
        drop_v = {c[1] for c in chosen if c[0] == "variant"}
        for c in chosen:
            if c[0] == "pass":
                vs[c[1]]["passes"][c[2]] = None
        for v in vs:
            v["passes"] = [p for p in v.get("passes") or [] if p is not None]
        prog.meta["variants"] = [v for i, v in enumerate(vs) if i not in drop_v]
        return True
