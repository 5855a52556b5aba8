"""Delta passes on raw Relax IR: a user's TVMScript module that has no program model.

Runs only inside a sandbox child (``reducer.jobs``): the text is checked by the script guard,
parsed there, edited as IR, re-typed by TVM's own normalizer, verified with ``well_formed``
and printed back. An edit TVM refuses (inference raises, the verifier says no) gives no
candidate, so it costs no oracle call. Each pass lists its elements in a fixed order, so the
parent can name a subset by indices and ask for the candidate.

Every edit goes through ``rebuild``, which re-emits one function binding by binding: values
are substituted (a dropped binding's variable becomes its replacement), re-normalized (so types
follow new parameter shapes and dtypes), and dataflow variables that are now used after their
block are made block outputs.
"""
from __future__ import annotations

import contextvars
import functools
from typing import Callable, Optional

from .hints import matches

# Near-valid modules: a binding's declared type may disagree with inference on purpose (the
# bug), so rebuilt bindings keep their declared types instead of re-inferred ones.
_KEEP_DECLARED = contextvars.ContextVar("keep_declared", default=False)


class Refused(Exception):
    """This edit cannot be made (a value with no replacement, an untypable result)."""


@functools.lru_cache(maxsize=None)
def _tvm():
    import tvm
    import tvm_ffi
    from tvm import relax
    from tvm.relax.expr_functor import PyExprMutator, mutator

    @mutator
    class Subst(PyExprMutator):
        """Replace variables (and, optionally, static dims in shape expressions)."""

        def __init__(self, var_map: dict, dim_map: Optional[Callable] = None):
            super().__init__()
            self.var_map, self.dim_map = var_map, dim_map

        def visit_var_(self, op):
            return self.var_map.get(op, op)

        def visit_dataflow_var_(self, op):
            return self.var_map.get(op, op)

        def visit_shape_expr_(self, op):
            if self.dim_map is None:
                return op
            return relax.ShapeExpr([self.dim_map(v) for v in op.values])

    return tvm, tvm_ffi, relax, Subst


def same_type(a, b) -> bool:
    _, tvm_ffi, _, _ = _tvm()
    return a is not None and b is not None and bool(tvm_ffi.structural_equal(a, b))


def bindings(func) -> list:
    return [b for blk in func.body.blocks for b in blk.bindings]


def relax_functions(mod) -> list:
    """(GlobalVar, Function) of the Relax functions, entry ("main") first, then by name."""
    _, _, relax, _ = _tvm()
    fs = [(gv, f) for gv, f in mod.functions.items() if isinstance(f, relax.Function)]
    return sorted(fs, key=lambda x: (x[0].name_hint != "main", x[0].name_hint))


def entry(mod):
    for gv, f in relax_functions(mod):
        if gv.name_hint == "main":
            return gv, f
    raise Refused("no main function")


def makeable(ty) -> bool:
    """A parameter of this type can be fed a random tensor (known shape and dtype)."""
    _, _, relax, _ = _tvm()
    return (isinstance(ty, relax.TensorType) and ty.shape is not None
            and isinstance(ty.shape, relax.ShapeExpr) and ty.dtype is not None
            and str(ty.dtype) not in ("", "void"))


def _operand_vars(value) -> list:
    """Variables that are direct operands of a binding's value, in order."""
    _, _, relax, _ = _tvm()
    if isinstance(value, relax.Call):
        items = list(value.args)
    elif isinstance(value, relax.Tuple):
        items = list(value.fields)
    elif isinstance(value, relax.TupleGetItem):
        items = [value.tuple_value]
    else:
        items = [value]
    return [x for x in items if isinstance(x, relax.Var)]


def _used_after(func, block_index: int, resolve, ret) -> set:
    """Variables (resolved) referenced after block ``block_index`` and in the body."""
    _, _, relax, _ = _tvm()
    used = set()
    for blk in func.body.blocks[block_index + 1:]:
        for b in blk.bindings:
            used.update(resolve(v) for v in relax.analysis.free_vars(b.value))
    used.update(resolve(v) for v in relax.analysis.free_vars(ret))
    return used


def rebuild(func, *, replace: Optional[dict] = None, new_params: Optional[dict] = None,
            drop: frozenset = frozenset(),
            drop_params: frozenset = frozenset(), param_types: Optional[dict] = None,
            values: Optional[dict] = None, plain: bool = False, ret=None,
            dim_map: Optional[Callable] = None, type_map: Optional[Callable] = None):
    """A new function from ``func``.

    replace: binding var -> var it is replaced by (the binding goes); drop: bindings that
    go with no replacement (nothing uses them);
    new_params: binding var -> None (the binding goes; its value becomes a new parameter);
    drop_params / param_types: by parameter index; values: binding var -> new value;
    plain: no dataflow blocks (one binding block); ret: a new returned expression (in old
    variables); dim_map / type_map: applied to shape expressions / declared types."""
    tvm, _, relax, Subst = _tvm()
    replace, new_params = replace or {}, new_params or {}
    param_types, values = param_types or {}, values or {}
    type_map = type_map or (lambda t: t)
    var_map: dict = {}
    params = []
    for i, p in enumerate(func.params):
        if i in drop_params:
            continue
        nv = relax.Var(p.name, type_map(param_types.get(i, p.ty)))
        var_map[p] = nv
        params.append(nv)
    for old in new_params:
        if not makeable(old.ty):
            raise Refused(f"{old.name} has no concrete type for a parameter")
        nv = relax.Var(old.name, type_map(old.ty))
        var_map[old] = nv
        params.append(nv)
    for old, by in replace.items():
        var_map[old] = by   # resolved below, as substitution goes in binding order

    def resolve(v):
        seen = 0
        while v in replace and seen < 10000:
            v, seen = replace[v], seen + 1
        return v

    bb = relax.BlockBuilder()
    subst = Subst(var_map, dim_map)
    ret = ret if ret is not None else func.body.body
    blocks, current, current_df = [], [], None
    for bi, blk in enumerate(func.body.blocks):
        df = isinstance(blk, relax.DataflowBlock) and not plain
        after = _used_after(func, bi, resolve, ret) if df else set()
        if current and current_df != df:
            blocks.append((current_df, current))
            current = []
        current_df = df
        for b in blk.bindings:
            if b.var in drop:
                continue
            if b.var in new_params or b.var in replace:
                if b.var in replace:
                    var_map[b.var] = var_map.get(resolve(b.var), resolve(b.var))
                continue
            value = subst.visit_expr(values.get(b.var, b.value))
            value = bb.normalize(value)
            is_output = not isinstance(b.var, relax.DataflowVar) or b.var in after
            cls = relax.DataflowVar if df and not is_output else relax.Var
            if isinstance(b, relax.MatchCast):
                ty = type_map(b.ty)
                nv = cls(b.var.name, ty)
                current.append(relax.MatchCast(nv, value, ty))
            else:
                nv = cls(b.var.name, type_map(b.var.ty) if _KEEP_DECLARED.get() else value.ty)
                current.append(relax.VarBinding(nv, value))
            var_map[b.var] = nv
    if current:
        blocks.append((current_df, current))
    blocks = [relax.DataflowBlock(bs) if df else relax.BindingBlock(bs) for df, bs in blocks]
    body = bb.normalize(subst.visit_expr(ret))
    return relax.Function(params, relax.SeqExpr(blocks, body), body.ty, func.is_pure,
                          func.attrs)


def finish(mod, updates: dict, drop: set = frozenset(), check: bool = True):
    """The module with functions replaced (GlobalVar -> Function) or dropped, normalized and
    verified (unless ``check`` is off: a near-valid module is ill-formed on purpose); raises
    Refused when TVM says it is ill-formed."""
    tvm, _, relax, _ = _tvm()
    funcs = {gv: updates.get(gv, f) for gv, f in mod.functions.items() if gv not in drop}
    new = tvm.IRModule(funcs, attrs=mod.attrs, global_infos=mod.global_infos)
    try:
        new = relax.transform.Normalize()(new)
        if check and relax.analysis.well_formed(new) is False:
            raise Refused("ill-formed")
    except Refused:
        raise
    except Exception as e:  # noqa: BLE001 - TVM refusing the edit
        raise Refused(str(e).splitlines()[0] if str(e) else type(e).__name__)
    return new


# --- the passes -------------------------------------------------------------------------------
class IRPass:
    name = "ir"

    def __init__(self, check_well_formed: bool = True):
        self.check = check_well_formed

    def finish(self, mod, updates: dict, drop: set = frozenset()):
        return finish(mod, updates, drop, self.check)

    def targets(self, mod) -> list:
        raise NotImplementedError

    def edit(self, mod, chosen: list):
        raise NotImplementedError

    def apply(self, mod, chosen: set):
        ts = self.targets(mod)
        token = _KEEP_DECLARED.set(not self.check)
        try:
            return self.edit(mod, [ts[i] for i in sorted(chosen) if i < len(ts)])
        except Refused:
            raise
        except Exception as e:  # noqa: BLE001 - TVM's inference refusing the edit
            raise Refused(f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
        finally:
            _KEEP_DECLARED.reset(token)


def _replacement_plan(func, chosen_vars: set, allow_params: bool, prefer_operands: bool):
    """For bindings to remove: (replace: var -> same-typed operand, new_params: vars whose
    value becomes a parameter, drop: vars nothing needs any more). Only a value still used
    must have a replacement."""
    _, _, relax, _ = _tvm()
    bs = bindings(func)
    by_var = {b.var: b for b in bs}
    choice = {}
    for var in chosen_vars:
        b = by_var[var]
        ops = [v for v in _operand_vars(b.value) if same_type(v.ty, var.ty)] \
            if prefer_operands and not _is_match_cast(b) else []
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


def _is_match_cast(b) -> bool:
    _, _, relax, _ = _tvm()
    return isinstance(b, relax.MatchCast)


class IsolateOp(IRPass):
    """The op the failure names, alone in main with its operands as parameters: one call
    when the message is right about the culprit (``hints``, from reducer.hints)."""

    name = "isolate_op"

    def targets(self, mod):
        _, _, relax, _ = _tvm()
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
        _, _, relax, Subst = _tvm()
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
            new.append(relax.VarBinding(relax.Var(b.var.name, b.var.ty if _KEEP_DECLARED.get()
                                                  else value.ty), value))
        ret = new[0].var if len(new) == 1 else bb.normalize(relax.Tuple([x.var for x in new]))
        body = relax.SeqExpr([relax.BindingBlock(new)], ret)
        func = relax.Function(params, body, ret.ty, main.is_pure, main.attrs)
        return self.finish(mod, {gv: func})


class DropFunctions(IRPass):
    """Remove functions other than main; bindings that used one become parameters."""

    name = "drop_functions"

    def targets(self, mod):
        return sorted(gv.name_hint for gv in mod.functions if gv.name_hint != "main")

    def edit(self, mod, chosen):
        _, _, relax, _ = _tvm()
        gone = {gv for gv in mod.functions if gv.name_hint in set(chosen)}
        updates = {}
        for gv, f in relax_functions(mod):
            if gv in gone:
                continue
            hit = {b.var for b in bindings(f)
                   if set(relax.analysis.all_global_vars(b.value)) & gone}
            if not hit:
                continue
            if gv.name_hint != "main":
                raise Refused("a callee uses a dropped function")
            updates[gv] = rebuild(f, new_params={v: None for v in _order(f, hit)})
        return self.finish(mod, updates, gone)


def _order(func, vars_: set) -> list:
    return [b.var for b in bindings(func) if b.var in vars_]


class ShrinkOutputs(IRPass):
    """Return fewer values: drop fields of main's returned tuple (one left: itself)."""

    name = "shrink_outputs"

    def _tuple(self, func):
        _, _, relax, _ = _tvm()
        body = func.body.body
        if isinstance(body, relax.Tuple):
            return body
        for b in bindings(func):
            if b.var.same_as(body) and isinstance(b.value, relax.Tuple):
                return b.value
        return None

    def targets(self, mod):
        t = self._tuple(entry(mod)[1])
        return list(range(len(t.fields))) if t is not None and len(t.fields) > 0 else []

    def edit(self, mod, chosen):
        _, _, relax, _ = _tvm()
        gv, f = entry(mod)
        t = self._tuple(f)
        keep = [x for i, x in enumerate(t.fields) if i not in set(chosen)]
        if not keep:
            raise Refused("no output left")
        ret = keep[0] if len(keep) == 1 else relax.Tuple(keep)
        return self.finish(mod, {gv: rebuild(f, ret=ret)})


def _live_vars(func) -> set:
    _, _, relax, _ = _tvm()
    live = set(relax.analysis.free_vars(func.body.body))
    for b in reversed(bindings(func)):
        if b.var in live:
            live.update(relax.analysis.free_vars(b.value))
    return live


class RemoveUnused(IRPass):
    """Remove bindings the returned value does not depend on."""

    name = "remove_unused"

    def targets(self, mod):
        out = []
        for gv, f in relax_functions(mod):
            live = _live_vars(f)
            out += [(gv.name_hint, i) for i, b in enumerate(bindings(f)) if b.var not in live]
        return out

    def edit(self, mod, chosen):
        _, _, relax, _ = _tvm()
        updates = {}
        for gv, f in relax_functions(mod):
            idx = {i for name, i in chosen if name == gv.name_hint}
            if idx:
                bs = bindings(f)
                gone = {bs[i].var for i in idx}
                live = _live_vars(f)
                for b in bs:   # dead users of a dropped value go with it
                    if b.var not in live and set(relax.analysis.free_vars(b.value)) & gone:
                        gone.add(b.var)
                updates[gv] = rebuild(f, drop=frozenset(gone))
        return self.finish(mod, updates)


def _operand_binding(b, params: set) -> bool:
    """A same-typed operand that is not a parameter: only then does a new parameter differ
    from remove_bindings' rewiring to that operand."""
    same = [v for v in _operand_vars(b.value) if same_type(v.ty, b.var.ty)]
    return bool(same) and same[0] not in params and not _is_match_cast(b)


class RemoveBindings(IRPass):
    """Remove bindings; users take a same-typed operand instead, else (main only) a new
    parameter of the binding's type. ``to_params``: always a new parameter."""

    name = "remove_bindings"
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
                                  new_params={v: None for v in _order(f, new_params)})
        return self.finish(mod, updates)


class ReturnDead(IRPass):
    """Return a value nothing uses (the crashing op a removal left dead) instead of main's
    result, and drop the parameters that only the old result needed."""

    name = "return_dead_value"

    def targets(self, mod):
        f = entry(mod)[1]
        live = _live_vars(f)
        return [i for i, b in enumerate(bindings(f)) if b.var not in live]

    def edit(self, mod, chosen):
        _, _, relax, _ = _tvm()
        gv, f = entry(mod)
        bs = bindings(f)
        f = rebuild(f, ret=bs[max(chosen)].var)
        used = set()
        for b in bindings(f):
            used.update(relax.analysis.free_vars(b.value))
        used.update(relax.analysis.free_vars(f.body.body))
        unused = frozenset(i for i, p in enumerate(f.params) if p not in used)
        return self.finish(mod, {gv: rebuild(f, drop_params=unused)})


class BindingsToParams(RemoveBindings):
    name = "bindings_to_params"
    to_params = True


class DropUnusedParams(IRPass):
    name = "drop_unused_params"

    def targets(self, mod):
        _, _, relax, _ = _tvm()
        f = entry(mod)[1]
        used = set()
        for b in bindings(f):
            used.update(relax.analysis.free_vars(b.value))
        used.update(relax.analysis.free_vars(f.body.body))
        return [i for i, p in enumerate(f.params) if p not in used]

    def edit(self, mod, chosen):
        gv, f = entry(mod)
        return self.finish(mod, {gv: rebuild(f, drop_params=frozenset(chosen))})


class PlainBlocks(IRPass):
    """No dataflow blocks: one plain binding block per function."""

    name = "plain_blocks"

    def targets(self, mod):
        _, _, relax, _ = _tvm()
        return [gv.name_hint for gv, f in relax_functions(mod)
                if len(f.body.blocks) > 1
                or any(isinstance(b, relax.DataflowBlock) for b in f.body.blocks)]

    def edit(self, mod, chosen):
        updates = {gv: rebuild(f, plain=True) for gv, f in relax_functions(mod)
                   if gv.name_hint in set(chosen)}
        return self.finish(mod, updates)


def _param_dims(func):
    _, _, relax, _ = _tvm()
    for p in func.params:
        if makeable(p.ty):
            yield from p.ty.shape.values


class StaticDims(IRPass):
    """Make main's symbolic dims static, with the values the script judge binds them to."""

    name = "static_dims"

    def targets(self, mod):
        _, _, relax, _ = _tvm()
        f = entry(mod)[1]
        names = []
        for p in f.params:
            for v in relax.analysis.tir_vars_in_type(p.ty):
                if v.name not in names:
                    names.append(v.name)
        return names

    def edit(self, mod, chosen):
        tvm, _, relax, _ = _tvm()
        gv, f = entry(mod)
        env = script_env(mod)
        f = f.bind_symbolic_vars({n: tvm.tirx.IntImm("int64", env.get(n, 1)) for n in chosen})
        return self.finish(mod, {gv: rebuild(f)})


def script_env(mod, input_seed: int = 0) -> dict:
    """Symbolic dim values as worker.execute.run_script binds them for this module."""
    import numpy as np

    from fuzz import dims as D
    from fuzz.inputs import make_array
    from fuzz.materialize import sinfo_to_ty

    rng = np.random.default_rng(input_seed)
    env: dict = {}
    try:
        for p in entry(mod)[1].params:
            ty = sinfo_to_ty(p.ty)
            for d in ty.shape or []:
                for v in (D.free_vars(d) if isinstance(d, str) else []):
                    env.setdefault(v, int(rng.integers(1, 5)))
            make_array(ty, -2, 2, env, rng)
    except Exception:  # noqa: BLE001 - values past this point are a guess
        pass
    return env


class ShrinkDims(IRPass):
    """Shrink a static dim value of main's parameters everywhere (parameters, shape
    expressions, match_cast types), to 1 or to half."""

    name = "shrink_dims"

    def targets(self, mod):
        tvm, _, _, _ = _tvm()
        vals = sorted({int(d.value) for d in _param_dims(entry(mod)[1])
                       if isinstance(d, tvm.tirx.IntImm) and int(d.value) > 1}, reverse=True)
        return [(v, 1) for v in vals] + [(v, v // 2) for v in vals if v >= 4]

    def edit(self, mod, chosen):
        tvm, _, relax, _ = _tvm()
        new: dict = {}
        for v, to in chosen:
            new[v] = min(new.get(v, v), to)

        def dim(d):
            if isinstance(d, tvm.tirx.IntImm) and int(d.value) in new:
                return tvm.tirx.IntImm(str(d.ty), new[int(d.value)])
            return d

        def ty(t):
            if isinstance(t, relax.TensorType) and isinstance(t.shape, relax.ShapeExpr):
                return relax.TensorType([dim(d) for d in t.shape.values], t.dtype)
            if isinstance(t, relax.TupleType):
                return relax.TupleType([ty(x) for x in t.fields])
            return t

        gv, f = entry(mod)
        return self.finish(mod, {gv: rebuild(f, dim_map=dim, type_map=ty)})


class SimplifyDtypes(IRPass):
    """float32 for main's parameters of another dtype (all of one dtype at once)."""

    name = "simplify_dtypes"

    def targets(self, mod):
        f = entry(mod)[1]
        return sorted({str(p.ty.dtype) for p in f.params if makeable(p.ty)
                       and str(p.ty.dtype) != "float32"})

    def edit(self, mod, chosen):
        _, _, relax, _ = _tvm()
        gv, f = entry(mod)
        types = {i: relax.TensorType(p.ty.shape.values, "float32")
                 for i, p in enumerate(f.params)
                 if makeable(p.ty) and str(p.ty.dtype) in set(chosen)}
        return self.finish(mod, {gv: rebuild(f, param_types=types)})


def _attr_fields(attrs) -> list:
    info = getattr(type(attrs), "__tvm_ffi_type_info__", None)
    fields = []
    while info is not None:
        fields = list(info.fields) + fields
        info = info.parent_type_info
    return fields


def _default(field):
    import dataclasses

    if not getattr(field, "c_has_default", False):
        return dataclasses.MISSING
    d = field.c_default
    return dataclasses.MISSING if d is dataclasses.MISSING or repr(d) == "<MISSING>" else d


class ResetAttrs(IRPass):
    """Operator attributes back to their declared defaults."""

    name = "reset_attrs"

    def targets(self, mod):
        import dataclasses

        _, _, relax, _ = _tvm()
        out = []
        for gv, f in relax_functions(mod):
            for i, b in enumerate(bindings(f)):
                v = b.value
                if not isinstance(v, relax.Call) or v.attrs is None:
                    continue
                for fld in _attr_fields(v.attrs):
                    d = _default(fld)
                    if d is dataclasses.MISSING:
                        continue
                    try:
                        cur = getattr(v.attrs, fld.name)
                        if cur == d or (cur is None and d is None):
                            continue
                    except Exception:  # noqa: BLE001
                        continue
                    out.append((gv.name_hint, i, fld.name))
        return out

    def edit(self, mod, chosen):
        tvm, _, relax, _ = _tvm()
        updates = {}
        for gv, f in relax_functions(mod):
            mine = [(i, name) for fn, i, name in chosen if fn == gv.name_hint]
            if not mine:
                continue
            bs = bindings(f)
            values = {}
            for i in sorted({i for i, _ in mine}):
                call = bs[i].value
                info = type(call.attrs).__tvm_ffi_type_info__
                fields = {fld.name: getattr(call.attrs, fld.name)
                          for fld in _attr_fields(call.attrs)}
                for j, name in mine:
                    if j == i:
                        fld = next(x for x in _attr_fields(call.attrs) if x.name == name)
                        fields[name] = _default(fld)
                attrs = tvm.ir.make_node(info.type_key, **fields)
                values[bs[i].var] = relax.Call(call.op, call.args, attrs, call.ty_args)
            updates[gv] = rebuild(f, values=values)
        return self.finish(mod, updates)


class Cleanup(IRPass):
    """One candidate with every change that almost always keeps a bug (no dead bindings, no
    unused parameters, plain blocks); refused, the passes run one by one."""

    name = "cleanup"
    parts = (RemoveUnused, DropUnusedParams, PlainBlocks)

    def targets(self, mod):
        return [0] if any(p(self.check).targets(mod) for p in self.parts) else []

    def edit(self, mod, chosen):
        changed = False
        for cls in self.parts:
            p = cls(self.check)
            n = len(p.targets(mod))
            if n:
                try:
                    mod, changed = p.apply(mod, set(range(n))), True
                except Refused:
                    pass
        if not changed:
            raise Refused("nothing to clean")
        return mod


def _tir_passes() -> tuple:
    from .tir import TIR_PASSES   # the extension point for PrimFunc passes (reducer/tir.py)

    return tuple(TIR_PASSES)


PASSES = (IsolateOp, Cleanup, DropFunctions, ShrinkOutputs, RemoveUnused, RemoveBindings,
          ReturnDead, Cleanup, BindingsToParams, DropUnusedParams, PlainBlocks, StaticDims,
          ShrinkDims, SimplifyDtypes, ResetAttrs) + _tir_passes()
BY_NAME = {p.name: p for p in PASSES}
NAMES = [p.name for p in PASSES]
