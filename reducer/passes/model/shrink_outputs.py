from __future__ import annotations

from ..base import ModelPass
from .helpers import drop_nodes, free_signature


class ShrinkOutputs(ModelPass):
    """Return fewer values: drop fields of a returned tuple (one left: the value itself)."""

    name = "shrink_outputs"
    measures = ("nodes", "outputs")   # unwrapping a tuple removes its node

    def targets(self, prog):
        out = []
        for f in prog.functions:
            ret = next((n for n in f.nodes() if n.name == f.ret), None)
            if ret is None or ret.op != "tuple" or not ret.args or not free_signature(prog, f):
                continue
            out += [(f.name, i) for i in range(len(ret.args))]
        return out

    def edit(self, prog, chosen):
        for f in prog.functions:
            drop = {i for fn, i in chosen if fn == f.name}
            if not drop:
                continue
            ret = f.node(f.ret)
            read = any(ret.name in n.args for n in f.nodes())   # by index: get_item
            keep = [a for i, a in enumerate(ret.args) if i not in drop]
            if len(ret.args) == 1:
                keep = ret.args          # a 1-tuple: "dropping" its field unwraps it
            if not keep:
                return False
            if len(keep) == 1:
                f.ret = keep[0]
                if not read:
                    drop_nodes(f, {ret.name})
            else:
                if read:
                    return False     # the indices read would shift
                ret.args = keep
                # the tuple's own type changes with its fields (a strict retype refused every
                # partial drop, so only dropping all but one field of a 3-tuple was possible)
                ret.annot = ret.ty = None
        return True
