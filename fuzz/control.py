"""Control flow for the Relax generator: ``R.If`` and loops written as recursive functions.

An ``if`` node (``fuzz.model``) names two branch functions (``kind="branch"``) whose
parameters are bound, by position, to the node's arguments after the condition; materialize
inlines each branch's nodes as the bindings of its ``SeqExpr``, the numpy reference runs only
the branch taken. A branch is generated as a function of its own (the values it takes come in
as its parameters, so every model pass sees an ordinary function), and may hold an ``if`` of
its own (nested), calls and new inputs: a parameter a branch draws is lifted into the
enclosing function and passed down.

Conditions are 0-d bool tensors, passed in as a parameter or computed in the graph (a
reduction of an exactly-known value compared with a constant, so TVM and numpy take the same
branch). Both branches yield the type of the first value they take (a tensor), or a tuple of
the first two's types.

A loop is ``loop(i, x, *inv)``: ``if i < k`` then ``loop(i + 1, body(x), *inv)`` else ``x``,
called from the function with ``i`` a constant 0 or an input in [0, k]. Its body's result
interval must lie inside ``x``'s, so every iteration stays in the ops' domains.
"""
from __future__ import annotations

import math
from typing import Optional

from .catalogue.spec import NUMERIC, Value, is_float
from .model import Block, Function, Node, Param, TensorTy, TupleTy, Ty

MAX_DEPTH = 2          # if nodes nested in branches
MAX_TRIP = 4           # iterations of a generated loop
CMP_OPS = ("relax.greater", "relax.less", "relax.greater_equal", "relax.less_equal")
BOOL0 = TensorTy([], "bool")
INT0 = TensorTy([], "int64")


def _const(ctx, ty: TensorTy, value) -> Node:
    return ctx.add_node("const", [], {"value": value, "ty": ty.to_json()}, ty)


def _same_ty(a: Ty, b: Ty) -> bool:
    return a.to_json() == b.to_json()


def condition(ctx) -> str:
    """The name of a 0-d bool value: an input, or an exactly-known value reduced with max
    and compared with a constant inside its range."""
    ch = ctx.ch
    cands = [v for v in ctx.pool if v.exact and v.dtype in NUMERIC and v.ty.shape is not None
             and math.isfinite(v.lo) and math.isfinite(v.hi)
             and all(not isinstance(d, int) or d > 0 for d in v.ty.shape)]
    if not cands or ch.boolean(0.3):
        return ctx.new_param([], "bool").name
    v = cands[-1] if ch.boolean(0.5) else ch.choice(cands)
    name, lo, hi = v.name, v.lo, v.hi
    if v.rank > 0:
        name = ctx.add_node("relax.max", [v.name], {"axis": None, "keepdims": False},
                            TensorTy([], v.dtype)).name
    mid = (lo + hi) / 2
    if not is_float(v.dtype):
        mid = int(math.floor(mid))
    elif v.dtype in ("float16", "bfloat16"):
        mid = float(round(mid * 4) / 4)   # exactly representable
    c = _const(ctx, TensorTy([], v.dtype), mid)
    return ctx.add_node(ch.choice(CMP_OPS), [name, c.name], {}, BOOL0).name


def _sub_context(ctx, caps: list[Value], names: list[str]):
    sub = ctx.sub()
    for v, pname in zip(caps, names):
        p = Param(pname, v.ty, v.lo if math.isfinite(v.lo) else -2.0,
                  v.hi if math.isfinite(v.hi) else 2.0)
        sub.params.append(p)
        sub.pool.append(Value(pname, v.ty, v.lo, v.hi, v.exact))
    return sub


def _fill(sub, n_ops: int, specs, cum, funcs: list, depth: int, fname: str) -> None:
    made = tries = 0
    while made < n_ops and tries < n_ops * 8:
        tries += 1
        if depth < MAX_DEPTH and sub.ch.boolean(0.15):
            if gen_if(sub, specs, cum, funcs, depth + 1, fname):
                made += 1
            continue
        if sub.apply(sub.ch.weighted_cum(specs, cum)) is not None:
            made += 1


def _result(sub, want: Ty, n_fixed: int) -> Optional[Value]:
    """A value of the branch of type ``want``: its latest op's, else its own parameter."""
    vals = [v for v in sub.pool if _same_ty(v.ty, want)]
    made = [v for v in vals if v.name not in {p.name for p in sub.params}]
    if made:
        return made[-1] if sub.ch.boolean(0.7) else sub.ch.choice(made)
    return vals[0] if vals else None


def gen_if(ctx, specs, cum, funcs: list, depth: int = 1, fname: str = "main") -> bool:
    """Add an ``if`` node (and its branch functions to ``funcs``) to ``ctx``."""
    ch = ctx.ch
    mark = (len(ctx.params), len(ctx.pool), len(ctx.nodes), len(funcs))
    try:
        cond = condition(ctx)
        k = ch.integer(1, 3)
        caps: list[Value] = []
        for _ in range(k):
            v = ctx.pick(dtypes=NUMERIC, rank=(0, 3), fresh_p=0.2)
            if v.name not in {c.name for c in caps} and v.ty.shape is not None:
                caps.append(v)
        tuple_out = len(caps) >= 2 and ch.boolean(0.3)
        want = [caps[0].ty] + ([caps[1].ty] if tuple_out else [])
        base = ctx.fresh(f"{fname}_if")
        branches = []
        for side in ("then", "else"):
            sub = _sub_context(ctx, caps, [ctx.fresh("b") for _ in caps])
            _fill(sub, ch.integer(0, 4), specs, cum, funcs, depth, f"{base}_{side}")
            ctx._n = sub._n
            outs = [_result(sub, t, len(caps)) for t in want]
            if any(o is None for o in outs):
                raise ValueError("no branch result")
            ret = outs[0].name
            if tuple_out:
                ret = sub.add_node("tuple", [o.name for o in outs], {},
                                   TupleTy([o.ty for o in outs])).name
            branches.append((sub, outs, ret, f"{base}_{side}"))
    except ValueError:
        del ctx.params[mark[0]:]
        del ctx.pool[mark[1]:]
        del ctx.nodes[mark[2]:]
        del funcs[mark[3]:]
        return False
    # Inputs a branch drew are inputs of the enclosing function, passed down to both.
    extra: list[Param] = [p for sub, *_ in branches for p in sub.params[len(caps):]]
    for p in extra:
        ctx.params.append(p)
        ctx.pool.append(Value(p.name, p.ty, p.lo, p.hi, exact=True))
    for i, (sub, outs, ret, name) in enumerate(branches):
        own = sub.params[len(caps):]
        params = list(sub.params[:len(caps)])
        for p in extra:
            params.append(p if p in own else Param(ctx.fresh("u"), p.ty, p.lo, p.hi))
        funcs.append(Function(name, params, [Block(False, sub.nodes)], ret, kind="branch"))
    args = [cond] + [c.name for c in caps] + [p.name for p in extra]
    outs_t, outs_e = branches[0][1], branches[1][1]
    ty = want[0] if not tuple_out else TupleTy(list(want))
    node = ctx.add_node("if", args, {"then": branches[0][3], "else": branches[1][3]}, ty)
    hulls = [(min(a.lo, b.lo), max(a.hi, b.hi), a.exact and b.exact)
             for a, b in zip(outs_t, outs_e)]
    if not tuple_out:
        ctx.add_value(node, *hulls[0])
    else:
        for i, t in enumerate(want):
            item = ctx.add_node("get_item", [node.name], {"index": i}, t)
            ctx.add_value(item, *hulls[i])
    return True


def gen_loop(ctx, specs, cum, funcs: list, fname: str = "main") -> bool:
    """Add a call of a new recursive loop function (and its functions to ``funcs``)."""
    ch = ctx.ch
    cands = [v for v in ctx.pool if v.ty.shape is not None and v.dtype in NUMERIC
             and math.isfinite(v.lo) and math.isfinite(v.hi)]
    if not cands:
        return False
    x = cands[-1] if ch.boolean(0.5) else ch.choice(cands)
    trip = ch.integer(1, MAX_TRIP)
    base = ctx.fresh(f"{fname}_loop")
    body = None
    for _ in range(3):
        sub = _sub_context(ctx, [Value("i", INT0, 0, trip, True), x],
                           [ctx.fresh("i"), ctx.fresh("x")])
        sub.pool = sub.pool[1:]   # the counter is not the body's to use
        _fill(sub, ch.integer(1, 3), specs, cum, funcs, MAX_DEPTH, base)
        ctx._n = sub._n
        ok = [v for v in sub.pool[1:] if _same_ty(v.ty, x.ty) and x.lo <= v.lo
              and v.hi <= x.hi and (v.exact or not x.exact)
              and v.name not in {p.name for p in sub.params}]
        if ok:
            body = (sub, ok[-1])
            break
    if body is None:
        return False
    sub, x2 = body
    inv = sub.params[2:]     # inputs the body drew: loop invariants
    # The caller's argument for each invariant: a new input where its shape is static; where
    # the shape names the caller's symbolic dims (defined in its body, by a match_cast, or an
    # expression such as ``d5 - 1 + 1``), a value of that type already in scope. A new input of
    # that type would use the dims before anything defines them (an ill-formed program).
    outer_from: list = []
    for p in inv:
        if p.ty.shape is not None and all(isinstance(d, int) for d in p.ty.shape):
            outer_from.append(None)
            continue
        same = [v for v in ctx.pool if _same_ty(v.ty, p.ty) and p.lo <= v.lo and v.hi <= p.hi]
        if not same:
            return False
        outer_from.append(same[-1].name)
    bi, bx = sub.params[0], sub.params[1]
    one = Node(ctx.fresh("v"), "const", [], {"value": 1, "ty": INT0.to_json()}, INT0)
    i2 = Node(ctx.fresh("v"), "relax.add", [bi.name, one.name], {}, INT0)
    loop_name = base
    rec = Node(ctx.fresh("v"), "call", [i2.name, x2.name] + [p.name for p in inv],
               {"func": loop_name}, x.ty)
    body_f = Function(f"{base}_body", sub.params, [Block(False, [one, i2] + sub.nodes + [rec])],
                      rec.name, kind="branch")
    exit_params = [Param(ctx.fresh("i"), INT0, 0, trip), Param(ctx.fresh("x"), x.ty, x.lo, x.hi)]
    exit_params += [Param(ctx.fresh("u"), p.ty, p.lo, p.hi) for p in inv]
    exit_f = Function(f"{base}_exit", exit_params, [Block(False, [])], exit_params[1].name,
                      kind="branch")
    li = Param(ctx.fresh("i"), INT0, 0, trip)
    lx = Param(ctx.fresh("x"), x.ty, x.lo, x.hi)
    linv = [Param(ctx.fresh("u"), p.ty, p.lo, p.hi) for p in inv]
    k = Node(ctx.fresh("v"), "const", [], {"value": trip, "ty": INT0.to_json()}, INT0)
    c = Node(ctx.fresh("v"), "relax.less", [li.name, k.name], {}, BOOL0)
    r = Node(ctx.fresh("v"), "if", [c.name, li.name, lx.name] + [p.name for p in linv],
             {"then": body_f.name, "else": exit_f.name}, x.ty)
    loop_f = Function(loop_name, [li, lx] + linv, [Block(False, [k, c, r])], r.name)
    funcs += [loop_f, body_f, exit_f]
    # The caller: the counter starts at 0, or at an input in [0, trip].
    if ch.boolean(0.7):
        start = _const(ctx, INT0, 0).name
    else:
        start = ctx.new_param([], "int64", 0, trip).name
    outer = [have or ctx.new_param(list(p.ty.shape), p.ty.dtype, p.lo, p.hi).name
             for p, have in zip(inv, outer_from)]
    call = ctx.add_node("call", [start, x.name] + outer, {"func": loop_name}, x.ty)
    ctx.add_value(call, x.lo, x.hi, x.exact)
    return True
