"""Cheap well-formedness of a program model (a reduction candidate, a mutated seed), checked in
this process before the sandbox.

An edit (a node removed, a dim shrunk, a dtype changed) can leave a program that TVM would
refuse to construct: that costs a sandbox run and can never be interesting. ``retype`` walks the
program as the generator built it: every node's type comes from its op's shape rule
(``spec.infer``) over its inputs' types, every name is defined before use, calls match their
callee's signature, and match_cast targets agree with what they cast. It raises ``IllFormed``
when any of that fails, so the candidate is skipped without running TVM.
"""
from __future__ import annotations

import math

from fuzz import dims as D
from fuzz.catalogue import CATALOGUE
from fuzz.model import STRUCTURAL_OPS, Function, Program, TensorTy, TupleTy, Ty, ty_from_json


class IllFormed(ValueError):
    """The candidate breaks a rule of the program model; it is not worth a sandbox run."""


def _numel(shape) -> int | None:
    return math.prod(shape) if shape is not None and all(D.is_static(d) for d in shape) else None


def _same(a: Ty, b: Ty) -> bool:
    return a is not None and b is not None and a.to_json() == b.to_json()


def _check_ty(ty: Ty, where: str) -> None:
    if isinstance(ty, TupleTy):
        for f in ty.fields:
            _check_ty(f, where)
        return
    if not isinstance(ty, TensorTy):
        raise IllFormed(f"{where}: not a type")
    for d in ty.shape or []:
        if D.is_static(d) and d < 0:
            raise IllFormed(f"{where}: negative dim")


def _cast_ok(src: Ty, dst: TensorTy) -> bool:
    """A match_cast of a value of runtime type ``src`` to ``dst`` can succeed."""
    if not isinstance(src, TensorTy) or src.shape is None or dst.shape is None:
        return isinstance(src, TensorTy)
    if len(src.shape) != len(dst.shape) or (dst.dtype and src.dtype != dst.dtype):
        return False
    return all(not (D.is_static(a) and D.is_static(b)) or a == b
               for a, b in zip(src.shape, dst.shape))


def retype(prog: Program, strict: bool = False, frozen: dict | None = None) -> Program:
    """Re-infer every node's type in place (callees first) and return ``prog``.

    ``strict``: a node's type must not change (edits that rewire values, where a changed type
    means the rewiring changed what the program computes). ``frozen`` (see ``frozen_nodes``):
    nodes whose recorded type the rule cannot give; they keep it while their inputs keep
    theirs. Raises ``IllFormed``."""
    names = [f.name for f in prog.functions]
    if len(set(names)) != len(names) or prog.entry not in names:
        raise IllFormed("function names")
    ret_tys: dict[str, Ty] = {}
    declared = {f.name: _declared_ret(f) for f in prog.functions}
    for f in _call_order(prog):
        ret_tys[f.name] = _retype_function(prog, f, ret_tys, strict, frozen or {}, declared)
        if not _same(ret_tys[f.name], declared[f.name]) and f.ret_annot is None and any(
                n.op == "call" and n.attrs.get("func") == f.name and n.ty is not None
                and not _same(n.ty, ret_tys[f.name]) for g in prog.functions for n in g.nodes()):
            raise IllFormed(f"{f.name}: a call to it was typed before its body changed type")
    return prog


def frozen_nodes(prog: Program) -> dict:
    """Nodes of the original whose recorded type the shape rule does not reproduce: near-valid
    mutants change attributes after the generator typed the node (an axis out of range), so
    the rule raises or disagrees. Maps "func/node" to the JSON of its input types."""
    out: dict = {}
    prog = prog.copy()
    ret_tys: dict[str, Ty] = {}
    for f in _call_order(prog):
        tys = {p.name: p.runtime_ty for p in f.params}
        for n in f.nodes():
            ins = [tys.get(a) for a in n.args]
            try:
                ok = None not in ins and _same(_infer(prog, n, ins, ret_tys), n.ty)
            except Exception:  # noqa: BLE001
                ok = False
            if not ok:
                out[f"{f.name}/{n.name}"] = [t.to_json() if t else None for t in ins]
            tys[n.name] = n.ty
        ret_tys[f.name] = f.value_types().get(f.ret)
    return out


def _call_order(prog: Program) -> list[Function]:
    """Callees (and branch functions) before their callers. A recursive function (a loop) is
    typed after the calls to it, which use its recorded return type; ``retype`` then checks
    that its body still gives that type."""
    by_name = {f.name: f for f in prog.functions}
    done: list[Function] = []
    state: dict[str, int] = {}

    def visit(f: Function):
        if f.name in state:
            return
        state[f.name] = 1
        for n in f.nodes():
            names = [n.attrs.get("func")] if n.op == "call" else \
                [n.attrs.get("then"), n.attrs.get("else")] if n.op == "if" else []
            for name in names:
                callee = by_name.get(name)
                if callee is None:
                    raise IllFormed(f"{n.name} names missing function {name}")
                if (callee.kind == "branch") != (n.op == "if"):
                    raise IllFormed(f"{n.name}: {n.op} of a {callee.kind} function {name}")
                visit(callee)
        state[f.name] = 2
        done.append(f)

    for f in prog.functions:
        visit(f)
    return done


def _declared_ret(f: Function) -> Ty:
    return f.ret_annot or f.value_types().get(f.ret)


def _retype_function(prog: Program, f: Function, ret_tys: dict, strict: bool,
                     frozen: dict, declared: dict | None = None) -> Ty:
    # Runtime types of parameters: an erased parameter is still fed a concrete tensor, and
    # the generator typed its users from that (fuzz.mutate erases after generation).
    tys: dict[str, Ty] = {}
    for p in f.params:
        if p.name in tys:
            raise IllFormed(f"duplicate name {p.name}")
        _check_ty(p.runtime_ty, p.name)
        tys[p.name] = p.runtime_ty
    for n in f.nodes():
        if n.name in tys:
            raise IllFormed(f"duplicate name {n.name}")
        missing = [a for a in n.args if a not in tys]
        if missing:
            raise IllFormed(f"{n.name} uses undefined {missing[0]}")
        ins = [tys[a] for a in n.args]
        key = f"{f.name}/{n.name}"
        if key in frozen:
            if frozen[key] != [t.to_json() for t in ins]:
                raise IllFormed(f"{n.name}: inputs of a node typed by hand changed")
            tys[n.name] = n.ty
            continue
        try:
            ty = _infer(prog, n, ins, ret_tys, declared)
        except IllFormed:
            raise
        except Exception as e:  # noqa: BLE001 - a shape rule refusing its inputs
            raise IllFormed(f"{n.name} ({n.op}): {type(e).__name__}: {e}") from e
        _check_ty(ty, n.name)
        if strict and n.ty is not None and not _same(ty, n.ty):
            raise IllFormed(f"{n.name}: type changed")
        n.ty = ty
        tys[n.name] = ty
    if f.ret not in tys:
        raise IllFormed(f"{f.name} returns undefined {f.ret}")
    # The declared (annotated) type flows out of the function, as value_types() says.
    if f.ret_annot is not None:
        return f.ret_annot
    return f.value_types()[f.ret] if f.ret in f.value_types() else tys[f.ret]


def _infer(prog: Program, n, ins: list, ret_tys: dict, declared: dict | None = None) -> Ty:
    op = n.op
    if op == "if":
        if not ins or not _same(ins[0], TensorTy([], "bool")):
            raise IllFormed(f"{n.name}: the condition is not a 0-d bool tensor")
        out = []
        for b in prog.branches(n):
            if len(ins) - 1 != len(b.params) or not all(
                    _same(t, p.runtime_ty) for t, p in zip(ins[1:], b.params)):
                raise IllFormed(f"{n.name}: arguments do not match {b.name}")
            out.append(ret_tys.get(b.name))
        if not _same(out[0], out[1]):
            raise IllFormed(f"{n.name}: the branches give different types")
        return out[0]
    if op == "tuple":
        return TupleTy(list(ins))
    if op == "get_item":
        if len(ins) != 1 or not isinstance(ins[0], TupleTy):
            raise IllFormed(f"{n.name}: get_item of a non-tuple")
        i = int(n.attrs["index"])
        if not 0 <= i < len(ins[0].fields):
            raise IllFormed(f"{n.name}: index out of range")
        return ins[0].fields[i]
    if op == "match_cast":
        dst = ty_from_json(n.attrs["ty"])
        if len(ins) != 1 or not isinstance(dst, TensorTy) or not _cast_ok(ins[0], dst):
            raise IllFormed(f"{n.name}: match_cast cannot succeed")
        return dst
    if op == "call":
        callee = prog.func(n.attrs["func"])
        if len(ins) != len(callee.params) or not all(
                _same(t, p.runtime_ty) for t, p in zip(ins, callee.params)):
            raise IllFormed(f"{n.name}: arguments do not match {callee.name}")
        if callee.name not in ret_tys:   # recursion: the type it is declared with
            return (declared or {}).get(callee.name) or _declared_ret(callee)
        return ret_tys[callee.name]
    if op == "const":
        return ty_from_json(n.attrs["ty"])
    if op == "dps_copy":
        if len(ins) != 1 or not isinstance(ins[0], TensorTy) or not ins[0].known():
            raise IllFormed(f"{n.name}: call_dps_packed needs a tensor of known type")
        return ins[0]
    if op == "call_tir":   # the arguments must be what the PrimFunc's inputs declare
        from fuzz.calltir import out_type, prim_of, split_params

        try:
            inputs = split_params(prim_of(n))[0]
        except (KeyError, TypeError, ValueError) as e:
            raise IllFormed(f"{n.name}: no PrimFunc: {e}")
        if len(ins) != len(inputs) or not all(
                _same(t, TensorTy(list(p.shape), p.dtype)) for t, p in zip(ins, inputs)):
            raise IllFormed(f"{n.name}: arguments do not match its PrimFunc's parameters")
        return out_type(prim_of(n))
    if op == "shape_tensor":
        if len(ins) != 1 or not isinstance(ins[0], TensorTy) or ins[0].shape is None:
            raise IllFormed(f"{n.name}: shape_of needs a tensor of known rank")
        return TensorTy([len(ins[0].shape)], "int64")
    if op == "reshape_dyn":
        dims = list(n.attrs.get("dims") or [])
        if len(ins) != 2 or not isinstance(ins[0], TensorTy) or not _same(
                ins[1], TensorTy([len(dims)], "int64")):
            raise IllFormed(f"{n.name}: reshape_dyn needs a tensor and its shape's tensor")
        known = n.attrs.get("known") or {}
        a, b = _numel(ins[0].shape), math.prod(known.get(d, 0) for d in dims)
        if a is not None and a != b:
            raise IllFormed(f"{n.name}: reshape changes the number of elements")
        return TensorTy(dims, ins[0].dtype)
    if op == "dyn_slice":   # the extents are the run's: the node's own type is the result's
        x, t = (ins[0] if ins else None), n.ty
        if not (len(ins) == 4 and isinstance(x, TensorTy) and x.shape is not None
                and isinstance(t, TensorTy) and t.shape is not None
                and len(t.shape) == len(x.shape) and t.dtype == x.dtype and all(
                    _same(v, TensorTy([len(x.shape)], "int64")) for v in ins[1:])):
            raise IllFormed(f"{n.name}: dynamic_strided_slice needs a tensor and three int64 "
                            "vectors of its rank")
        return t
    if op in STRUCTURAL_OPS or op not in CATALOGUE:
        raise IllFormed(f"{n.name}: unknown op {op}")
    spec = CATALOGUE[op]
    if any(not isinstance(t, TensorTy) or t.shape is None for t in ins):
        raise IllFormed(f"{n.name}: {op} needs tensors of known shape")
    if ins and ins[0].dtype not in spec.dtypes:
        raise IllFormed(f"{n.name}: {op} does not take {ins[0].dtype}")
    spec.call(list(n.args), dict(n.attrs))   # raises when a required attribute is gone
    out = spec.infer(list(ins), dict(n.attrs))
    if op == "relax.reshape":   # the rule trusts the target shape; numel must still agree
        a, b = _numel(ins[0].shape), _numel(out.shape)
        if a is not None and b is not None and a != b:
            raise IllFormed(f"{n.name}: reshape changes the number of elements")
    return out


def uniform_dtypes(prog: Program) -> dict[str, bool]:
    """Per node: whether all its tensor inputs share one dtype (an invariant an edit of
    parameter dtypes must keep, else TVM refuses the binary op)."""
    out = {}
    for f in prog.functions:
        tys = {p.name: p.runtime_ty for p in f.params}
        tys.update({n.name: n.ty for n in f.nodes()})
        for n in f.nodes():
            if n.op in CATALOGUE:
                ds = {tys[a].dtype for a in n.args if isinstance(tys.get(a), TensorTy)}
                out[f"{f.name}/{n.name}"] = len(ds) <= 1
    return out


def check_uniform(prog: Program, before: dict[str, bool]) -> None:
    for key, same in uniform_dtypes(prog).items():
        if before.get(key) and not same:
            raise IllFormed(f"{key}: mixed dtypes")
