from __future__ import annotations

from ...hints import matches
from ..base import IRPass
from .helpers import KEEP_DECLARED, Refused, bindings, entry, makeable, relax_functions, tvm_api


class IsolateOp(IRPass):
    """The op the failure names, alone in main with its operands as parameters: one call
    when the message is right about the culprit (``hints``, from reducer.hints)."""

    name = "isolate_op"
    measures = ("bindings", "functions", "params")

    def targets(self, mod):
        _, _, relax, _ = tvm_api()
        hints = getattr(self, "hints", None) or []
        fs = relax_functions(mod)
        if not hints or sum(len(bindings(f)) for _, f in fs) <= 1:
            return []
        out = []
        for gv, f in fs:
            for i, b in enumerate(bindings(f)):
                op = getattr(b.value, "op", None) if isinstance(b.value, relax.Call) else None
                if op is not None and hasattr(op, "name") and matches(str(op.name), hints):
                    out.append((gv.name_hint, i))
        return out

    def edit(self, mod, chosen):
        _, _, relax, Subst = tvm_api()
        gv, main = entry(mod)
        bb = relax.BlockBuilder()
        params, var_map, new = [], {}, []
        for fname, i in chosen:
            f = next(fn for g, fn in relax_functions(mod) if g.name_hint == fname)
            b = bindings(f)[i]
            for v in relax.analysis.free_vars(b.value):
                if v not in var_map:
                    if not makeable(v.ty):
                        raise Refused(f"{v.name} has no concrete type for a parameter")
                    var_map[v] = relax.Var(v.name, v.ty)
                    params.append(var_map[v])
            value = bb.normalize(Subst(var_map).visit_expr(b.value))
            new.append(relax.VarBinding(relax.Var(b.var.name, b.var.ty if KEEP_DECLARED.get()
                                                  else value.ty), value))
        ret = new[0].var if len(new) == 1 else bb.normalize(relax.Tuple([x.var for x in new]))
        body = relax.SeqExpr([relax.BindingBlock(new)], ret)
        func = relax.Function(params, body, ret.ty, main.is_pure, main.attrs)
        return self.finish(mod, {gv: func})
