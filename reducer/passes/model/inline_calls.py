from __future__ import annotations

from ..base import ModelPass
from .helpers import splice_body, used_functions


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
            splice_body(prog, f, call, prog.func(node.attrs["func"]), node.args)
        used = used_functions(prog)
        prog.functions = [g for g in prog.functions if g.name == prog.entry or g.name in used]
        return True

