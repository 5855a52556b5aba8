from __future__ import annotations

from fuzz.model import Function, Node

from ..base import ModelPass
from .helpers import rename_uses, used_functions


class InlineCalls(ModelPass):
    """Inline a call: the callee's nodes take the call's place; an unused callee goes."""

    name = "inline_calls"
    # Inlining a call to a callee that is still called elsewhere adds the callee's nodes:
    # such a candidate is larger and never accepted.
    measures = ("nodes", "functions")

    def targets(self, prog):
        # An R.If may not stand in a dataflow block: a callee holding one is not inlined there.
        return [(f.name, n.name) for f in prog.functions for b in f.blocks for n in b.nodes
                if n.op == "call" and not (b.dataflow and any(
                    m.op == "if" for m in prog.func(n.attrs["func"]).nodes()))]

    def edit(self, prog, chosen):
        for fname, call in chosen:
            f = prog.func(fname)
            node = f.node(call)
            callee = prog.func(node.attrs["func"])
            names = {p.name: a for p, a in zip(callee.params, node.args)}
            spliced = []
            for n in callee.nodes():
                new = _fresh_like(f, n.name, spliced)
                names[n.name] = new
                spliced.append(Node(new, n.op, [names[a] for a in n.args], dict(n.attrs),
                                    n.ty, n.annot))
            for b in f.blocks:
                for i, n in enumerate(b.nodes):
                    if n.name == call:
                        b.nodes[i:i + 1] = spliced
                        break
            rename_uses(f, call, names[callee.ret])
        used = used_functions(prog)
        prog.functions = [g for g in prog.functions if g.name == prog.entry or g.name in used]
        return True


def _fresh_like(f: Function, base: str, extra: list) -> str:
    used = {p.name for p in f.params} | {n.name for n in f.nodes()} | {n.name for n in extra}
    i = 1
    while f"{base}_i{i}" in used:
        i += 1
    return f"{base}_i{i}"
