from __future__ import annotations

from fuzz.model import TensorTy

from ..base import ModelPass
from .helpers import drop_nodes, users


class CallTirToConst(ModelPass):
    """An ``R.call_tir`` to a generated PrimFunc becomes a constant of its output type (a
    tuple of outputs: each ``get_item`` of it becomes one, and the call goes); the PrimFunc
    goes with it, its arguments are left to the removal passes."""

    name = "call_tir_to_const"
    measures = ("nodes", "call_tir")

    def targets(self, prog):
        out = []
        for f in prog.functions:
            us = users(f)
            for n in f.nodes():
                if n.op != "call_tir":
                    continue
                if isinstance(n.ty, TensorTy) or all(
                        u.op == "get_item" for u in us.get(n.name, [])) and n.name != f.ret:
                    out.append((f.name, n.name))
        return out

    def edit(self, prog, chosen):
        for fname, name in chosen:
            f = prog.func(fname)
            n = f.node(name)
            if isinstance(n.ty, TensorTy):
                _to_const(n, n.ty)
                continue
            for u in users(f).get(name, []):
                _to_const(u, u.ty)
            drop_nodes(f, {name})
        return True


def _to_const(n, ty: TensorTy) -> None:
    n.op, n.args, n.attrs = "const", [], {"value": 1, "ty": ty.to_json()}
