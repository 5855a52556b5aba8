"""Mutating a seed given as a program model (``tvmfuzz run --seeds``: a reduced ``case.json``,
``tvmfuzz gen`` output): valid by construction, in the parent, deterministic from (seed
program, case seed).

The seed's values are brought back into a ``GenContext`` with their intervals (each node's
spec computes it from its inputs', as ``apply_op`` did when the seed was generated), then a
few mutations run, each one the generator's own moves:

* ``extend``   continue generation from the seed: new ops over the seed's values (and new
               parameters); the new sinks join the function's result;
* ``insert``   a type-preserving unary op after a value, its later users rewired to it; its
               result interval must lie inside the value's (and stay exact where it was), so
               every downstream op's domain still holds;
* ``replace``  an op by another of its family (same spec helper class, its dtype accepted,
               its domain met on the same inputs, result type equal, interval inside the old
               one, exactness kept);
* ``dtype``    a float parameter to another float dtype, the program re-inferred
               (``fuzz.retype``) and every interval checked against the new dtypes;
* ``dim``      a static dim of a parameter changed, the program re-inferred (only where every
               op is elementwise: an index or an attribute may depend on a dim).

A mutation that cannot apply is skipped; the names of those applied go to
``meta["seed_mutations"]`` (never ``meta["mutations"]``, which names a near-valid mutant's
broken promises).
"""
from __future__ import annotations

import math
import re
from typing import Optional

from .catalogue import CATALOGUE
from .catalogue.elementwise import Binary, Unary
from .catalogue.spec import FLOATS, Value, within
from .choice import Chooser, RandomChooser
from .generate import GenContext, _op_table, apply_op
from .model import Function, Node, Program, TensorTy, TupleTy
from .retype import IllFormed, check_uniform, retype, uniform_dtypes


class Skip(Exception):
    """This mutation does not apply to this program."""


# --- values and their intervals ----------------------------------------------------------
def scope(prog: Program, f: Function) -> dict:
    """name -> Value (tensors) or (lo, hi, exact) (tuples): what the generator knew."""
    out: dict = {}
    for p in f.params:
        t = p.runtime_ty
        if isinstance(t, TensorTy):
            out[p.name] = Value(p.name, t, p.lo, p.hi, exact=True)
    for n in f.nodes():
        ins = [out.get(a) for a in n.args]
        if n.op in CATALOGUE:
            spec = CATALOGUE[n.op]
            vals = [v if isinstance(v, Value) else Value(a, TensorTy([], "float32"))
                    for a, v in zip(n.args, ins)]
            try:
                lo, hi = spec.interval(vals, n.attrs, n.ty)
            except (ArithmeticError, ValueError):
                lo, hi = -math.inf, math.inf
            exact = spec.exact(vals, n.attrs, n.ty)
        elif n.op in ("match_cast",) and isinstance(ins[0], Value):
            lo, hi, exact = ins[0].lo, ins[0].hi, ins[0].exact
        elif n.op == "get_item" and isinstance(ins[0], tuple):
            lo, hi, exact = ins[0]
        elif n.op == "const":
            val = float(n.attrs.get("value", 0))
            lo, hi, exact = val, val, True
        else:
            lo, hi, exact = -math.inf, math.inf, False
        if isinstance(n.ty, TensorTy):
            out[n.name] = Value(n.name, n.ty, lo, hi, exact)
        elif isinstance(n.ty, TupleTy):
            out[n.name] = (lo, hi, exact)
    return out


def problems(prog: Program) -> set:
    """Re-infer every type (raises Skip where that fails) and return the values whose interval
    leaves their dtype or whose op's domain fails on its inputs. A seed may have some already
    (a call's result has unknown bounds): a mutation must add none."""
    try:
        retype(prog)
    except IllFormed as e:
        raise Skip(str(e))
    out = set()
    for f in prog.functions:
        vals = scope(prog, f)
        for n in f.nodes():
            v = vals.get(n.name)
            if isinstance(v, Value) and not within(v.dtype, v.lo, v.hi):
                out.add(f"{f.name}/{n.name}")
            spec = CATALOGUE.get(n.op)
            if spec is not None and not _domain_ok(spec, [vals.get(a) for a in n.args]):
                out.add(f"{f.name}/{n.name}")
    return out


def _domain_ok(spec, ins: list) -> bool:
    if not all(isinstance(v, Value) for v in ins):
        return True
    if spec.discontinuous and not all(v.exact for v in ins):
        return False
    if isinstance(spec, Unary):
        return spec.domain is None or spec.domain(ins[0])
    if isinstance(spec, Binary) and len(ins) == 2:
        return ((spec.lhs_domain is None or spec.lhs_domain(ins[0]))
                and (spec.rhs_domain is None or spec.rhs_domain(ins[1])))
    return True


def _inside(new: tuple, old: Value) -> bool:
    lo, hi, exact = new
    return old.lo <= lo and hi <= old.hi and (exact or not old.exact)


def _last_number(prog: Program) -> int:
    n = 0
    for f in prog.functions:
        for name in [p.name for p in f.params] + [x.name for x in f.nodes()]:
            m = re.search(r"(\d+)$", name)
            if m:
                n = max(n, int(m.group(1)))
    return n


def _users_after(f: Function, name: str, after: int) -> list:
    nodes = list(f.nodes())
    return [n for n in nodes[after + 1:] if name in n.args]


def _rewire(f: Function, old: str, new: str, start: int) -> None:
    """Later nodes (index > start) and the result use ``new`` where they used ``old``."""
    for i, n in enumerate(f.nodes()):
        if i > start and n.name != new:
            n.args = [new if a == old else a for a in n.args]
    if f.ret == old:
        f.ret = new


def _insert_node(f: Function, index: int, node: Node) -> None:
    """Put ``node`` right after the node at ``index`` (-1: first)."""
    i = 0
    for b in f.blocks:
        if index < i + len(b.nodes):
            b.nodes.insert(index - i + 1, node)
            return
        i += len(b.nodes)
    f.blocks[-1].nodes.append(node)


# --- the mutations ---------------------------------------------------------------------
def extend(prog: Program, ch: Chooser) -> str:
    f = prog.main
    vals = scope(prog, f)
    ctx = GenContext(ch, "valid", allow_sym=False)
    ctx.params = f.params
    ctx.pool = [v for v in vals.values() if isinstance(v, Value) and v.ty.shape is not None]
    ctx._n = _last_number(prog)
    specs, cum = _op_table(None)
    made = []
    for _ in range(ch.integer(1, 4) * 4):
        if len(made) >= 3:
            break
        node = apply_op(ctx, ch.weighted_cum(specs, cum))
        if node is not None:
            made.append(node.op)
    if not made:
        raise Skip("no op applies")
    new_vals = [v for v in ctx.pool if v.name in {n.name for n in ctx.nodes}]
    used = {a for n in ctx.nodes for a in n.args}
    sinks = [v.name for v in new_vals if v.name not in used] or [new_vals[-1].name]
    by_name = {n.name: n for n in ctx.nodes}
    fields = [f.ret] + sinks[-2:]
    tys = [f.value_types()[f.ret]] + [by_name[s].ty for s in sinks[-2:]]
    ret = Node(ctx.fresh("v"), "tuple", fields, {}, TupleTy(tys))
    f.blocks[-1].nodes.extend(ctx.nodes + [ret])
    f.ret = ret.name
    return "extend: " + ",".join(made)


def insert(prog: Program, ch: Chooser) -> str:
    f = prog.main
    vals = scope(prog, f)
    nodes = list(f.nodes())
    index = {n.name: i for i, n in enumerate(nodes)}
    cands = [v for v in vals.values() if isinstance(v, Value) and v.ty.shape is not None
             and (_users_after(f, v.name, index.get(v.name, -1)) or f.ret == v.name)]
    if not cands:
        raise Skip("no value with users")
    v = ch.choice(cands)
    ops = [s for s in CATALOGUE.values() if isinstance(s, Unary) and not s.out_dtype
           and v.dtype in s.dtypes and _domain_ok(s, [v])]
    for spec in sorted(ops, key=lambda s: ch.integer(0, 1 << 20)):
        out = spec.infer([v.ty], dict(spec.attrs))
        lo, hi = spec.interval([v], dict(spec.attrs), out)
        if out.to_json() == v.ty.to_json() and _inside((lo, hi, spec.exact([v], {}, out)), v):
            name = f"v{_last_number(prog) + 1}"
            at = index.get(v.name, -1)
            _insert_node(f, at, Node(name, spec.name, [v.name], dict(spec.attrs), out))
            _rewire(f, v.name, name, at + 1)
            return f"insert: {spec.name} after {v.name}"
    raise Skip("no op keeps the value's type and interval")


def replace(prog: Program, ch: Chooser) -> str:
    f = prog.main
    vals = scope(prog, f)
    nodes = [n for n in f.nodes() if isinstance(CATALOGUE.get(n.op), (Unary, Binary))]
    ch_nodes = list(nodes)
    while ch_nodes:
        n = ch.choice(ch_nodes)
        ch_nodes.remove(n)
        spec = CATALOGUE[n.op]
        ins = [vals.get(a) for a in n.args]
        old = vals.get(n.name)
        if not isinstance(old, Value) or not all(isinstance(x, Value) for x in ins):
            continue
        family = [s for s in CATALOGUE.values() if type(s) is type(spec) and s.name != n.op
                  and ins[0].dtype in s.dtypes and _domain_ok(s, ins)
                  and not getattr(s, "attrs", None)]
        for other in sorted(family, key=lambda s: ch.integer(0, 1 << 20)):
            out = other.infer([x.ty for x in ins], {})
            try:
                lo, hi = other.interval(ins, {}, out)
            except (ArithmeticError, ValueError):
                continue
            if out.to_json() == n.ty.to_json() and _inside((lo, hi, other.exact(ins, {}, out)),
                                                            old):
                was = n.op
                n.op, n.attrs = other.name, {}
                return f"replace: {n.name} {was} -> {other.name}"
    raise Skip("no op has a replacement in its family")


def dtype(prog: Program, ch: Chooser) -> str:
    f = prog.main
    params = [p for p in f.params if p.actual is None and isinstance(p.ty, TensorTy)
              and p.ty.dtype in FLOATS]
    if not params:
        raise Skip("no float parameter")
    p = ch.choice(params)
    new = ch.choice([d for d in FLOATS if d != p.ty.dtype])
    was, p.ty = p.ty.dtype, TensorTy(p.ty.shape, new, p.ty.ndim)
    return f"dtype: {p.name} {was} -> {new}"


def dim(prog: Program, ch: Chooser) -> str:
    if not all(isinstance(CATALOGUE.get(op), (Unary, Binary)) for op in prog.ops()):
        raise Skip("an op other than elementwise ones may depend on a dim")
    f = prog.main
    params = [p for p in f.params if p.actual is None and isinstance(p.ty, TensorTy)
              and any(isinstance(d, int) for d in p.ty.shape or [])]
    if not params:
        raise Skip("no static dim")
    p = ch.choice(params)
    i = ch.choice([i for i, d in enumerate(p.ty.shape) if isinstance(d, int)])
    old = p.ty.shape[i]
    # Every parameter's dim of that size changes with it, so broadcasts keep agreeing.
    new = ch.choice([d for d in (1, 2, 3, 4, 5, 7, 8) if d != old])
    for q in f.params:
        if isinstance(q.ty, TensorTy) and q.ty.shape is not None:
            q.ty = TensorTy([new if d == old else d for d in q.ty.shape], q.ty.dtype)
    return f"dim: {old} -> {new}"


MUTATIONS = {"extend": extend, "insert": insert, "replace": replace, "dtype": dtype,
             "dim": dim}
WEIGHTS = {"extend": 3, "insert": 3, "replace": 3, "dtype": 1, "dim": 1}


def grow(seed: Program, case_seed: int, steps: Optional[int] = None) -> Program:
    """A valid mutant of ``seed`` (a Relax program model), deterministic from (seed,
    ``case_seed``). The seed's own variants, schedule and outcome are dropped: the campaign
    gives the mutant its own."""
    ch = RandomChooser(case_seed * 1_000_033 + 11)
    prog = seed.copy()
    if prog.ir != "relax":
        raise ValueError("only Relax program models grow")
    try:
        before = problems(prog)
    except Skip as e:
        raise ValueError(f"the seed is not a valid program model: {e}")
    applied = []
    names = list(MUTATIONS)
    for _ in range(steps if steps is not None else ch.integer(1, 3)):
        name = ch.weighted(names, [WEIGHTS[n] for n in names])
        cand = prog.copy()
        uniform = uniform_dtypes(prog)
        try:
            what = MUTATIONS[name](cand, ch)
            now = problems(cand)
            if now - before:
                continue
            check_uniform(cand, uniform)   # an op whose inputs shared a dtype still does
        except (Skip, IllFormed):
            continue
        prog, before = cand, now
        applied.append(what)
    meta = {k: v for k, v in seed.meta.items() if k in ("generator",)}
    prog.meta = dict(meta, mode="valid", seed=case_seed, seed_mutations=applied)
    return prog
