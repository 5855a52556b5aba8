"""What the IR passes share: TVM imported lazily (the parent never parses user text),
bindings and functions of a module, and ``rebuild``, which re-emits one function binding by
binding: values are substituted (a dropped binding's variable becomes its replacement),
re-normalized (so types follow new parameter shapes and dtypes), and dataflow variables that
are now used after their block are made block outputs."""
from __future__ import annotations

import contextvars
import functools
from typing import Callable, Optional

# Near-valid modules: a binding's declared type may disagree with inference on purpose (the
# bug), so rebuilt bindings keep their declared types instead of re-inferred ones.
KEEP_DECLARED = contextvars.ContextVar("keep_declared", default=False)


class Refused(Exception):
    """This edit cannot be made (a value with no replacement, an untypable result)."""


@functools.lru_cache(maxsize=None)
def tvm_api():
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
    _, tvm_ffi, _, _ = tvm_api()
    return a is not None and b is not None and bool(tvm_ffi.structural_equal(a, b))


def bindings(func) -> list:
    return [b for blk in func.body.blocks for b in blk.bindings]


def relax_functions(mod) -> list:
    """(GlobalVar, Function) of the Relax functions, entry ("main") first, then by name."""
    _, _, relax, _ = tvm_api()
    fs = [(gv, f) for gv, f in mod.functions.items() if isinstance(f, relax.Function)]
    return sorted(fs, key=lambda x: (x[0].name_hint != "main", x[0].name_hint))


def entry(mod):
    for gv, f in relax_functions(mod):
        if gv.name_hint == "main":
            return gv, f
    raise Refused("no main function")


def makeable(ty) -> bool:
    """A parameter of this type can be fed a random tensor (known shape and dtype)."""
    _, _, relax, _ = tvm_api()
    return (isinstance(ty, relax.TensorType) and ty.shape is not None
            and isinstance(ty.shape, relax.ShapeExpr) and ty.dtype is not None
            and str(ty.dtype) not in ("", "void"))


def _used_after(func, block_index: int, resolve, ret) -> set:
    """Variables (resolved) referenced after block ``block_index`` and in the body."""
    _, _, relax, _ = tvm_api()
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
    tvm, _, relax, Subst = tvm_api()
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
                nv = cls(b.var.name, type_map(b.var.ty) if KEEP_DECLARED.get() else value.ty)
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
    tvm, _, relax, _ = tvm_api()
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


def order(func, vars_: set) -> list:
    """``vars_`` in binding order."""
    return [b.var for b in bindings(func) if b.var in vars_]


def live_vars(func) -> set:
    _, _, relax, _ = tvm_api()
    live = set(relax.analysis.free_vars(func.body.body))
    for b in reversed(bindings(func)):
        if b.var in live:
            live.update(relax.analysis.free_vars(b.value))
    return live


def operand_vars(value) -> list:
    """Variables that are direct operands of a binding's value, in order."""
    _, _, relax, _ = tvm_api()
    if isinstance(value, relax.Call):
        items = list(value.args)
    elif isinstance(value, relax.Tuple):
        items = list(value.fields)
    elif isinstance(value, relax.TupleGetItem):
        items = [value.tuple_value]
    else:
        items = [value]
    return [x for x in items if isinstance(x, relax.Var)]


def is_match_cast(b) -> bool:
    _, _, relax, _ = tvm_api()
    return isinstance(b, relax.MatchCast)
