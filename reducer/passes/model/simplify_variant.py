from __future__ import annotations

from ..base import ModelPass
from .helpers import variants


class SimplifyVariant(ModelPass):
    """Plainer builds: no extra target options, the default pipeline, bytecode, llvm over c."""

    name = "simplify_variant"
    measures = ("variant_fields",)

    def targets(self, prog):
        out = []
        for i, v in enumerate(variants(prog)):
            out += [(i, "target", k) for k in sorted(v.get("target", {})) if k != "kind"]
            if v.get("pipeline") not in ("default", "passes"):
                out.append((i, "pipeline", "default"))
            if v.get("exec_mode", "bytecode") != "bytecode":
                out.append((i, "exec_mode", "bytecode"))
            if v.get("target", {}).get("kind") == "c":
                out.append((i, "kind", "llvm"))
        return out

    def edit(self, prog, chosen):
        vs = variants(prog)
        for i, what, x in chosen:
            if what == "target":
                vs[i]["target"].pop(x, None)
            elif what == "kind":
                vs[i]["target"]["kind"] = x
            else:
                vs[i][what] = x
        return True
