from __future__ import annotations

from fuzz.model import Node

from ..base import ModelPass
from .helpers import rename_uses, used_functions
from .inline_calls import _fresh_like


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
            branch = prog.func(node.attrs[side])
            names = {p.name: a for p, a in zip(branch.params, node.args[1:])}
            spliced = []
            for n in branch.nodes():
                new = _fresh_like(f, n.name, spliced)
                names[n.name] = new
                spliced.append(Node(new, n.op, [names[a] for a in n.args], dict(n.attrs),
                                    n.ty, n.annot))
            for b in f.blocks:
                for i, n in enumerate(b.nodes):
                    if n.name == name:
                        b.nodes[i:i + 1] = spliced
                        break
            rename_uses(f, name, names[branch.ret])
        used = used_functions(prog)
        prog.functions = [g for g in prog.functions if g.name == prog.entry or g.name in used]
        return True
