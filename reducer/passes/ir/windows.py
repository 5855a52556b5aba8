"""Dependency-aware slices of main's bindings, for the reducer's first cuts of a large module
(``reducer.split``, sandbox job ``reducer.ir_split``; not a registered pass: it cuts whole
ranges from one parse instead of listing elements for ddmin).

A slice keeps a set of main's bindings in their order. Values it uses from bindings outside
the slice become parameters of their type (the dependency closure is cut there, so the
candidate stays well formed), except values no parameter can stand for (tuples, shapes,
tensors of unknown shape), whose bindings the slice keeps too; what the kept bindings make
and nothing kept uses, or what the rest of the function used, is returned (a tuple when
there are several), so no kept binding is dead. Functions other than main stay as they are."""
from __future__ import annotations

from typing import Iterable

from .helpers import KEEP_DECLARED, Refused, bindings, entry, finish, makeable, tvm_api


class Slicer:
    """Main's bindings and their dependencies, computed once per parsed module; ``module``
    makes one slice."""

    def __init__(self, mod, check: bool = True):
        _, _, relax, _ = tvm_api()
        self.mod, self.check = mod, check
        self.gv, self.func = entry(mod)
        self.bs = bindings(self.func)
        self.defined = {b.var: i for i, b in enumerate(self.bs)}
        self.free = [relax.analysis.free_vars(b.value) for b in self.bs]
        # uses[i]: the bindings whose variables binding i's value uses
        self.uses = [sorted({self.defined[v] for v in fv if v in self.defined})
                     for fv in self.free]
        self.ret_uses = {self.defined[v] for v in relax.analysis.free_vars(self.func.body.body)
                         if v in self.defined}
        self.param_ok = [makeable(b.var.ty) for b in self.bs]
        self.block = [bi for bi, blk in enumerate(self.func.body.blocks) for _ in blk.bindings]
        self.in_df = [isinstance(blk, relax.DataflowBlock) for blk in self.func.body.blocks
                      for _ in blk.bindings]

    def __len__(self) -> int:
        return len(self.bs)

    def cone(self, i: int) -> list[int]:
        """Binding ``i`` and every binding it depends on (its cone of influence)."""
        seen, todo = {i}, [i]
        while todo:
            for j in self.uses[todo.pop()]:
                if j not in seen:
                    seen.add(j)
                    todo.append(j)
        return sorted(seen)

    def closure(self, keep: Iterable[int]) -> list[int]:
        """``keep`` with the bindings of the values it uses that cannot be parameters (no
        concrete tensor type: tuples, shapes, symbolic shapes), and theirs, so that a cut
        never falls on one of them."""
        kept, todo = set(keep), list(keep)
        while todo:
            for j in self.uses[todo.pop()]:
                if j not in kept and not self.param_ok[j]:
                    kept.add(j)
                    todo.append(j)
        return sorted(kept)

    def module(self, keep: Iterable[int]):
        """The module whose main keeps exactly the bindings ``keep`` (indices into main's
        flattened bindings); raises Refused when a cut value cannot be a parameter or TVM
        refuses the result."""
        _, _, relax, Subst = tvm_api()
        bs, func = self.bs, self.func
        keep = self.closure(keep)
        if not keep:
            raise Refused("empty slice")
        kept = set(keep)
        var_map: dict = {}
        params = []
        used = {v for i in keep for v in self.free[i]}
        for p in func.params:   # the original parameters the slice uses, in their order
            if p in used:
                var_map[p] = relax.Var(p.name, p.ty)
                params.append(var_map[p])
        # Values made outside the slice and used in it: new parameters, in binding order.
        for j in sorted({j for i in keep for j in self.uses[i] if j not in kept}):
            v = bs[j].var
            var_map[v] = relax.Var(v.name, v.ty)
            params.append(var_map[v])
        # What the slice returns: kept values that dropped bindings or the body used, and
        # kept values nothing kept uses (so that no kept binding is dead).
        used_in = {j for i in keep for j in self.uses[i]}
        after = set(self.ret_uses)
        for j in range(len(bs)):
            if j not in kept:
                after.update(self.uses[j])
        outs = [i for i in keep if i in after or i not in used_in]
        # Kept dataflow variables returned or used in another block must be plain variables.
        crosses = set(outs) | {j for i in keep for j in self.uses[i]
                               if j in kept and self.block[j] != self.block[i]}
        bb = relax.BlockBuilder()
        subst = Subst(var_map)
        blocks, current, cur_key = [], [], None
        for i in keep:
            key = (self.block[i], self.in_df[i])
            if current and key != cur_key:
                blocks.append((cur_key[1], current))
                current = []
            cur_key = key
            b = bs[i]
            value = bb.normalize(subst.visit_expr(b.value))
            cls = relax.DataflowVar if self.in_df[i] and i not in crosses else relax.Var
            if isinstance(b, relax.MatchCast):
                nv = cls(b.var.name, b.ty)
                current.append(relax.MatchCast(nv, value, b.ty))
            else:
                nv = cls(b.var.name, b.var.ty if KEEP_DECLARED.get() else value.ty)
                current.append(relax.VarBinding(nv, value))
            var_map[b.var] = nv
        blocks.append((cur_key[1], current))
        blocks = [relax.DataflowBlock(x) if df else relax.BindingBlock(x) for df, x in blocks]
        rets = [var_map[bs[i].var] for i in outs]
        ret = rets[0] if len(rets) == 1 else bb.normalize(relax.Tuple(rets))
        new = relax.Function(params, relax.SeqExpr(blocks, ret), ret.ty, func.is_pure,
                             func.attrs)
        token = KEEP_DECLARED.set(not self.check)
        try:
            return finish(self.mod, {self.gv: new}, check=self.check)
        finally:
            KEEP_DECLARED.reset(token)
