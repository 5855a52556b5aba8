from __future__ import annotations

from ..base import ModelPass
from .helpers import splice_body, used_functions


class IfToBranch(ModelPass):
    """Replace an ``if`` node by the nodes of one of its branches (then or else), its
    parameters bound to the node's arguments; branch functions no longer named go. A branch
    that calls the function holding the ``if`` (a loop's recursion) is not taken: without
    its guard the recursion would not end."""

    name = "if_to_branch"
    measures = ("nodes", "functions")

    def targets(self, prog):
        out = []
        for f in prog.functions:
            for n in f.nodes():
                if n.op != "if":
                    continue
                for side in ("then", "else"):
                    branch = prog.func(n.attrs[side])
                    if not any(m.op == "call" and m.attrs.get("func") == f.name
                               for m in branch.nodes()):
                        out.append((f.name, n.name, side))
        return out

    def edit(self, prog, chosen):
        done = set()
        for fname, name, side in chosen:
            if (fname, name) in done:
                return False   # both branches of one if: one candidate, one branch
            done.add((fname, name))
            f = prog.func(fname)
            node = f.node(name)
            splice_body(prog, f, name, prog.func(node.attrs[side]), node.args[1:])
        used = used_functions(prog)
        prog.functions = [g for g in prog.functions if g.name == prog.entry or g.name in used]
        return True
