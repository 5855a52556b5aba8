from __future__ import annotations

from fuzz.model import Function, Node, TensorTy

from fuzz.retype import IllFormed
from ..base import ModelPass
from .helpers import declared, drop_nodes, free_signature, param_for, runtime, same


class RemoveNodes(ModelPass):
    """Remove nodes; users are rewired to an input of the same type, else (entry function
    only) to a new parameter of the node's type, as torch's fx minifier does. With
    ``to_params`` every removed node becomes a parameter (cuts the graph's head)."""

    name = "remove_nodes"
    measures = ("nodes",)
    to_params = False

    def targets(self, prog):
        out = []
        for f in prog.functions:
            free = free_signature(prog, f)
            params = {p.name for p in f.params}
            for n in f.nodes():
                if self.to_params and (not free or not isinstance(n.ty, TensorTy)
                                       or not self._operand_node(f, n, params)):
                    continue
                out.append((f.name, n.name))
        return out

    @staticmethod
    def _operand_node(f: Function, n: Node, params: set) -> bool:
        """``n`` has a same-typed operand that is a node: only then is a new parameter
        different from what remove_nodes tried (rewiring to that operand)."""
        decl = declared(f)
        same_ = [a for a in n.args if same(decl.get(a), decl.get(n.name))]
        return bool(same_) and same_[0] not in params

    def edit(self, prog, chosen):
        for f in prog.functions:
            removed = {n for fn, n in chosen if fn == f.name}
            if removed and not self._remove(f, removed, free_signature(prog, f)):
                return False
        return True

    def _remove(self, f: Function, removed: set, entry: bool) -> bool:
        defs = {n.name: n for n in f.nodes()}
        decl, rt = declared(f), runtime(f)
        repl: dict[str, str] = {}

        def resolve(name: str) -> str:
            if name not in removed:
                return name
            if name in repl:
                return repl[name]
            n = defs[name]
            same_ = [] if self.to_params else [
                a for a in n.args if same(decl.get(a), decl[name]) and same(rt.get(a), rt[name])]
            if same_:
                r = resolve(same_[0])
            elif entry and isinstance(n.ty, TensorTy) and (n.annot is None
                                                          or same(n.annot, n.ty)):
                r = param_for(f, n.ty)
                if r is None:
                    raise IllFormed(f"{name}: no parameter of its type")
            else:
                raise IllFormed(f"{name} cannot be replaced")
            repl[name] = r
            return r

        kept = [n for n in f.nodes() if n.name not in removed]
        for n in kept:
            n.args = [resolve(a) for a in n.args]
        f.ret = resolve(f.ret)
        drop_nodes(f, removed)
        return True


class NodesToParams(RemoveNodes):
    """Every removed node becomes a parameter (only where that differs from rewiring)."""

    name = "nodes_to_params"
    to_params = True
