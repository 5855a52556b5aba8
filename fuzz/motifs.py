"""Generator motifs that repeat structure: a layer applied again with fresh constant weights.

``gen_repeat`` takes an op already in the function whose operands after the first include a
value of static shape (its "weights"), and applies the same op with the same attributes two or
three more times, each time with new ``const`` nodes of those operands' types in place of the
weights (a fill value drawn inside the weight's interval, so the op's domain still holds, and
distinct from the other copies' values). A copy takes the previous copy's result as its first
operand when that result has the first operand's type and lies inside its interval (a stack of
layers, as in conv -> conv -> conv), else the same first operand (parallel heads).

The copies are structurally equal subgraphs that differ only in their constants: what pattern
fusion with ``bind_constants`` (worker.variants' ``FuseOpsByPattern`` entries), FuseOps,
lifting and deduplication of functions must keep apart.
"""
from __future__ import annotations

import math

from .catalogue import CATALOGUE
from .catalogue.spec import NUMERIC, Value, is_float, within
from .model import TensorTy

MAX_WEIGHT_NUMEL = 4096
GRID = 4               # float fill values are multiples of 1/GRID: exact in float16/bfloat16


def _weight(v: Value) -> bool:
    return (v.ty.shape is not None and all(isinstance(d, int) for d in v.ty.shape)
            and math.prod(v.ty.shape) <= MAX_WEIGHT_NUMEL and v.dtype in NUMERIC
            and v.dtype != "bool" and math.isfinite(v.lo) and math.isfinite(v.hi)
            and v.lo < v.hi)


def _fill_values(ch, v: Value, k: int) -> list:
    """``k`` distinct fill values inside ``v``'s interval, or [] when it holds fewer."""
    step = GRID if is_float(v.dtype) else 1
    lo, hi = math.ceil(v.lo * step), math.floor(v.hi * step)
    a, b = max(lo, -4 * step), min(hi, 4 * step)
    if a > b:
        a, b = lo, min(hi, lo + 8 * step)
    if b - a + 1 < k:
        return []
    got: list[int] = []
    while len(got) < k:
        q = ch.integer(a, b)
        if q not in got:
            got.append(q)
    return [q / step if step != 1 else q for q in got]


def gen_repeat(ctx) -> bool:
    """Add two or three copies of an op in ``ctx`` with fresh constant weights."""
    ch = ctx.ch
    vals = {v.name: v for v in ctx.pool}
    cands = [n for n in ctx.nodes if n.op in CATALOGUE and len(n.args) >= 2
             and isinstance(n.ty, TensorTy) and n.name in vals
             and all(a in vals for a in n.args)
             and any(_weight(vals[a]) for a in n.args[1:])]
    if not cands:
        return False
    n = cands[-1] if ch.boolean(0.5) else ch.choice(cands)
    spec = CATALOGUE[n.op]
    ins = [vals[a] for a in n.args]
    x = ins[0]
    copies = ch.integer(2, 3)
    fills = {}
    for i, v in enumerate(ins[1:], 1):
        if _weight(v) and v.name != x.name:
            f = _fill_values(ch, v, copies)
            if f:
                fills[i] = f
    if not fills:
        return False
    cur = x
    made = 0
    for c in range(copies):
        args = [cur]
        for i, v in enumerate(ins[1:], 1):
            if i in fills:
                node = ctx.add_node("const", [], {"value": fills[i][c], "ty": v.ty.to_json()},
                                    v.ty)
                args.append(Value(node.name, v.ty, fills[i][c], fills[i][c], True))
            else:
                args.append(v)
        try:
            out = spec.infer([a.ty for a in args], dict(n.attrs))
            lo, hi = spec.interval(args, dict(n.attrs), out)
        except (ArithmeticError, ValueError):
            lo, hi = -math.inf, math.inf
            out = n.ty
        if out.to_json() != n.ty.to_json() or not within(out.dtype, lo, hi):
            del ctx.nodes[len(ctx.nodes) - len(fills):]
            break
        node = ctx.add_node(n.op, [a.name for a in args], dict(n.attrs), out)
        val = ctx.add_value(node, lo, hi, spec.exact(args, dict(n.attrs), out))
        made += 1
        if (val is not None and out.to_json() == x.ty.to_json() and x.lo <= lo
                and hi <= x.hi and (val.exact or not x.exact)):
            cur = val
        else:
            cur = x
    return made > 0
