from __future__ import annotations

from fuzz.model import Function, Node, TensorTy

from ..base import ModelPass
from .helpers import drop_nodes, param_for, rename_uses, users


class RemoveFunctions(ModelPass):
    """Remove callees; each call to one becomes new parameters of the caller."""

    name = "remove_functions"
    measures = ("nodes", "functions")

    def targets(self, prog):
        # A branch function is an R.If's body, not a callee: if_to_branch removes it.
        return [f.name for f in prog.functions if f.name != prog.entry and f.kind != "branch"]

    def edit(self, prog, chosen):
        gone = set(chosen)
        for f in prog.functions:
            if f.name in gone:
                continue
            calls = [n for n in f.nodes() if n.op == "call" and n.attrs["func"] in gone]
            if calls and f.name != prog.entry:
                return False
            for n in calls:
                if not _replace_node_by_params(f, n, users(f)):
                    return False
            dead = {n.name for n in calls} | {u.name for n in calls for u in f.nodes()
                                              if u.op == "get_item" and u.args == [n.name]}
            drop_nodes(f, dead)
        prog.functions = [f for f in prog.functions if f.name not in gone]
        return True


def _replace_node_by_params(f: Function, node: Node, users: dict) -> bool:
    """Replace a node's value by new parameters: its own when it is a tensor; for a tuple,
    one per get_item user. Only in the entry function (a callee's signature is fixed)."""
    if isinstance(node.ty, TensorTy):
        p = param_for(f, node.ty)
        if p is None:
            return False
        rename_uses(f, node.name, p)
        return True
    for u in users.get(node.name, []):
        if u.op != "get_item" or not _replace_node_by_params(f, u, users):
            return False
    if f.ret == node.name:
        return False
    return True
