from __future__ import annotations

from ..base import ModelPass
from .helpers import free_signature


class DropUnusedParams(ModelPass):
    """Parameters nothing uses, where the signature may change; and a value an ``if`` node
    passes to its branches that neither branch uses (the argument and both parameters)."""

    name = "drop_unused_params"
    measures = ("params",)

    def targets(self, prog):
        out = []
        for f in prog.functions:
            if free_signature(prog, f):
                used = {a for n in f.nodes() for a in n.args} | {f.ret}
                out += [(f.name, p.name) for p in f.params if p.name not in used]
        for f in prog.functions:
            for n in f.nodes():
                if n.op != "if":
                    continue
                branches = prog.branches(n)
                if any(len(b.params) != len(n.args) - 1 for b in branches):
                    continue
                for i in range(len(n.args) - 1):
                    if all(b.params[i].name not in _used(b) for b in branches):
                        out.append((f.name, n.name, i))
        return out

    def edit(self, prog, chosen):
        plain = {c for c in chosen if len(c) == 2}
        for f in prog.functions:
            f.params = [p for p in f.params if (f.name, p.name) not in plain]
        drops: dict = {}
        for c in chosen:
            if len(c) == 3:
                drops.setdefault((c[0], c[1]), set()).add(c[2])
        for (fname, name), idx in drops.items():
            node = prog.func(fname).node(name)
            for b in prog.branches(node):
                b.params = [p for i, p in enumerate(b.params) if i not in idx]
            node.args = [node.args[0]] + [a for i, a in enumerate(node.args[1:]) if i not in idx]
        return True


def _used(f) -> set:
    return {a for n in f.nodes() for a in n.args} | {f.ret}
