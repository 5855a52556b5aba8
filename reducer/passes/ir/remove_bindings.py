from __future__ import annotations

from ..base import IRPass
from .helpers import (Refused, bindings, is_match_cast, makeable, operand_vars, order, rebuild,
                      relax_functions, same_type, tvm_api)


class RemoveBindings(IRPass):
    """Remove bindings; users take a same-typed operand instead, else (main only) a new
    parameter of the binding's type. ``to_params``: always a new parameter."""

    name = "remove_bindings"
    measures = ("bindings",)
    to_params = False

    def targets(self, mod):
        out = []
        for gv, f in relax_functions(mod):
            if self.to_params and gv.name_hint != "main":
                continue
            params = set(f.params)
            for i, b in enumerate(bindings(f)):
                if self.to_params and not (makeable(b.var.ty) and _operand_binding(b, params)):
                    continue
                out.append((gv.name_hint, i))
        return out

    def edit(self, mod, chosen):
        updates = {}
        for gv, f in relax_functions(mod):
            idx = sorted(i for name, i in chosen if name == gv.name_hint)
            if not idx:
                continue
            bs = bindings(f)
            replace, new_params, drop = _replacement_plan(
                f, {bs[i].var for i in idx}, gv.name_hint == "main", not self.to_params)
            updates[gv] = rebuild(f, replace=replace, drop=drop,
                                  new_params={v: None for v in order(f, new_params)})
        return self.finish(mod, updates)


class BindingsToParams(RemoveBindings):
    """Every removed binding becomes a parameter (only where that differs from rewiring)."""

    name = "bindings_to_params"
    to_params = True


def _operand_binding(b, params: set) -> bool:
    """A same-typed operand that is not a parameter: only then does a new parameter differ
    from remove_bindings' rewiring to that operand."""
    same = [v for v in operand_vars(b.value) if same_type(v.ty, b.var.ty)]
    return bool(same) and same[0] not in params and not is_match_cast(b)


def _replacement_plan(func, chosen_vars: set, allow_params: bool, prefer_operands: bool):
    """For bindings to remove: (replace: var -> same-typed operand, new_params: vars whose
    value becomes a parameter, drop: vars nothing needs any more). Only a value still used
    must have a replacement."""
    _, _, relax, _ = tvm_api()
    bs = bindings(func)
    by_var = {b.var: b for b in bs}
    choice = {}
    for var in chosen_vars:
        b = by_var[var]
        ops = [v for v in operand_vars(b.value) if same_type(v.ty, var.ty)] \
            if prefer_operands and not is_match_cast(b) else []
        choice[var] = ops[0] if ops else ("param" if allow_params and makeable(var.ty)
                                          else None)
    needed = set(relax.analysis.free_vars(func.body.body))
    for b in bs:
        if b.var not in chosen_vars:
            needed.update(relax.analysis.free_vars(b.value))
    replace, new_params, work = {}, set(), [v for v in needed if v in chosen_vars]
    while work:
        v = work.pop()
        if v in replace or v in new_params:
            continue
        c = choice[v]
        if c is None:
            raise Refused(f"{v.name} cannot be replaced")
        if c == "param":
            new_params.add(v)
        else:
            replace[v] = c
            if c in chosen_vars:
                work.append(c)
    drop = frozenset(v for v in chosen_vars if v not in replace and v not in new_params)
    return replace, new_params, drop
