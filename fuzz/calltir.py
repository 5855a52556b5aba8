"""``R.call_tir`` to a generated TIR PrimFunc in a Relax program (the ``call_tir`` node).

The PrimFunc is a TIR case of ``fuzz.tir`` (its generator, its numpy reference) held in the
node as its JSON (``attrs["prim"]``), so the program stays plain data: ``fuzz.materialize``
renders and parses it into the module (as ``tir_<node>``) and emits
``R.call_tir(tir_<node>, (args...), out_sinfo)``; ``fuzz.reference`` runs the TIR reference
on the node's arguments.

``R.call_tir`` is destination-passing: the PrimFunc's last parameters are its outputs, which
the VM allocates fresh (their contents undefined). A TIR case may read or only partly write
an output (its own judge starts outputs with defined contents), so only a case that, by its
reference, writes every element of its outputs before reading it (``dps_ok``), and whose
outputs are its last parameters, is called. Its other parameters are the node's
arguments: a value in scope of the same dtype and static shape whose range lies inside the
range the TIR generator drew the parameter in (so division, ``log`` and ``sqrt`` stay in
their domains), else a new parameter of that range. TIR floats are exact only on multiples of
2**-QUANT (the TIR generator's premise, which keeps comparisons and ``floor`` from flipping on
a rounding difference), so a float argument is first made one, exactly:
``floor(x * 8) / 8`` of an exactly known ``x``.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from .catalogue.spec import Value
from .model import Node, TensorTy, TupleTy, Ty

TRIES = 6         # TIR seeds drawn for one call_tir node before giving up
CHECKS = 3        # input draws on which the reference checks the outputs' writes


def prim_of(node: Node):
    """The node's PrimFunc, a ``fuzz.tir.model.TirProgram`` named ``tir_<node>``."""
    from .tir.model import TirProgram

    prog = TirProgram.from_json(node.attrs["prim"])
    prog.name = func_name(node)
    return prog


def func_name(node: Node) -> str:
    return f"tir_{node.name}"


def split_params(prim) -> tuple[list, list]:
    """(input params, output params) of a PrimFunc: its outputs are its last parameters."""
    outs = set(prim.meta.get("outputs") or [])
    k = len(prim.params) - len(outs)
    ins, tail = prim.params[:k], prim.params[k:]
    if {p.name for p in tail} != outs or not tail:
        raise ValueError(f"{prim.name}: its outputs are not its last parameters")
    return ins, tail


def out_type(prim) -> Ty:
    """The node's type: one output's tensor, or a tuple of them."""
    tys = [TensorTy(list(p.shape), p.dtype) for p in split_params(prim)[1]]
    return tys[0] if len(tys) == 1 else TupleTy(tys)


def run(node: Node, xs: list) -> object:
    """The numpy reference of a call_tir node: the TIR reference on the arguments, its
    outputs undefined when it starts (as the VM's fresh ones), as the result."""
    from .tir import reference as R

    prim = prim_of(node)
    ins, outs = split_params(prim)
    if len(xs) != len(ins):
        raise ValueError(f"{node.name}: {len(xs)} arguments for {len(ins)} parameters")
    feed = {p.name: np.asarray(x) for p, x in zip(ins, xs)}
    feed.update({p.name: np.zeros(p.shape, dtype=R._np(p.dtype)) for p in outs})
    got = R.run(prim, feed, frozenset(p.name for p in outs))
    res = [got[p.name] for p in outs]
    return res[0] if len(res) == 1 else tuple(res)


def precision(node: Node) -> set:
    """The float dtypes the node's outputs were computed through (``fuzz.tir.reference
    .precision``): a float32 output of float16 math is only as exact as float16."""
    from .tir import reference as R

    prim = prim_of(node)
    p = R.precision(prim)
    return {p[o.name] for o in split_params(prim)[1] if o.name in p}


def dps_ok(prim) -> bool:
    """The PrimFunc can be called destination-passing: outputs last, and by the reference
    (``unset``: outputs start undefined) it writes every element of its outputs, reads none
    before writing it and writes no input, on each of ``CHECKS`` draws of its inputs."""
    from .tir import reference as R

    try:
        ins, outs = split_params(prim)
    except ValueError:
        return False
    unset = frozenset(p.name for p in outs)
    try:
        for seed in range(CHECKS):
            feed = R.make_inputs(prim, seed)
            got = R.run(prim, feed, unset)
            if not all(np.array_equal(got[p.name], feed[p.name],
                                      equal_nan=feed[p.name].dtype.kind == "f") for p in ins):
                return False   # writes an input, which call_tir's caller still holds
    except R.ReferenceError:
        return False
    return True


def _argument(ctx, p, lo: float, hi: float, q: int) -> Optional[str]:
    """The name of a value for input parameter ``p`` (a TIR BufDecl) of range [lo, hi]."""
    shape = list(p.shape)

    def fits(v: Value) -> bool:
        return (v.exact and v.ty.shape == shape and lo <= v.lo and v.hi <= hi)

    cands = [v for v in ctx.pool if v.dtype == p.dtype and isinstance(v.ty, TensorTy)
             and v.ty.shape is not None and all(isinstance(d, int) for d in v.ty.shape)
             and fits(v)]
    if cands and ctx.ch.boolean(0.7):
        v = cands[-1] if ctx.ch.boolean(0.5) else ctx.ch.choice(cands)
    else:
        v = ctx.new_param(shape, p.dtype, lo, hi)
    if not p.dtype.startswith("float"):
        return v.name
    # floor(x * s) / s: a multiple of 1/s, exactly (x is exact, s a power of two)
    ty, s0 = TensorTy(shape, p.dtype), TensorTy([], p.dtype)
    s = ctx.add_node("const", [], {"value": float(2 ** q), "ty": s0.to_json()}, s0)
    m = ctx.add_node("relax.multiply", [v.name, s.name], {}, ty)
    f = ctx.add_node("relax.floor", [m.name], {}, ty)
    d = ctx.add_node("relax.divide", [f.name, s.name], {}, ty)
    ctx.add_value(d, lo, hi, True)
    return d.name


def gen_call_tir(ctx) -> bool:
    """Add a ``call_tir`` node (and its arguments) to ``ctx``; False when no TIR case drawn
    can be called destination-passing."""
    from .tir.generate import generate_tir_bounds
    from .tir.reference import _range

    ch = ctx.ch
    for _ in range(TRIES):
        seed = ch.integer(0, 2 ** 31 - 1)
        prim, bounds = generate_tir_bounds(seed)
        if dps_ok(prim):
            break
    else:
        return False
    ins, outs = split_params(prim)
    args = []
    for p in ins:
        lo, hi, q = _range(prim, p)
        args.append(_argument(ctx, p, lo, hi, q))
    node = ctx.add_node("call_tir", args, {"prim": prim.to_json()}, out_type(prim))
    vals = []
    for i, p in enumerate(outs):
        lo, hi, exact = bounds[p.name]
        exact = exact or not p.dtype.startswith("float")
        vals.append((TensorTy(list(p.shape), p.dtype), lo, hi, exact))
    if len(outs) == 1:
        ctx.add_value(node, *vals[0][1:])
    else:
        for i, (t, lo, hi, exact) in enumerate(vals):
            item = ctx.add_node("get_item", [node.name], {"index": i}, t)
            ctx.add_value(item, lo, hi, exact)
    return True

