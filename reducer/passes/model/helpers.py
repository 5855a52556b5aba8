"""What several model passes share: fresh names, types, users, liveness, variants."""
from __future__ import annotations

from typing import Optional

from fuzz import dims as D
from fuzz.generate import default_range
from fuzz.model import Function, Node, Param, Program, TensorTy, TupleTy, Ty, ty_from_json


def fresh(f: Function, prefix: str) -> str:
    used = {p.name for p in f.params} | {n.name for n in f.nodes()}
    i = 1
    while f"{prefix}{i}" in used:
        i += 1
    return f"{prefix}{i}"


def declared(f: Function) -> dict[str, Ty]:
    return f.value_types()


def runtime(f: Function) -> dict[str, Ty]:
    tys = {p.name: p.runtime_ty for p in f.params}
    tys.update({n.name: n.ty for n in f.nodes()})
    return tys


def same(a: Optional[Ty], b: Optional[Ty]) -> bool:
    return a is not None and b is not None and a.to_json() == b.to_json()


def param_for(f: Function, ty: Ty, prefix: str = "r") -> Optional[str]:
    """A new parameter of ``ty`` (a concrete tensor: inputs must be made for it)."""
    if not isinstance(ty, TensorTy) or ty.shape is None or not ty.dtype:
        return None
    lo, hi = default_range(ty.dtype)
    name = fresh(f, prefix)
    f.params.append(Param(name, TensorTy(list(ty.shape), ty.dtype), lo, hi))
    return name


def users(f: Function) -> dict[str, list[Node]]:
    out: dict[str, list[Node]] = {}
    for n in f.nodes():
        for a in n.args:
            out.setdefault(a, []).append(n)
    return out


def drop_nodes(f: Function, names: set) -> None:
    for b in f.blocks:
        b.nodes = [n for n in b.nodes if n.name not in names]


def rename_uses(f: Function, old: str, new: str) -> None:
    for n in f.nodes():
        n.args = [new if a == old else a for a in n.args]
    if f.ret == old:
        f.ret = new


def live(f: Function) -> set:
    """Names the return value depends on."""
    defs = {n.name: n for n in f.nodes()}
    seen: set = set()
    stack = [f.ret]
    while stack:
        x = stack.pop()
        if x in seen:
            continue
        seen.add(x)
        if x in defs:
            stack.extend(defs[x].args)
    return seen


def used_functions(prog: Program) -> set:
    """Functions a node names: callees, and the branch functions of ``if`` nodes."""
    out = set()
    for f in prog.functions:
        for n in f.nodes():
            if n.op == "call":
                out.add(n.attrs["func"])
            elif n.op == "if":
                out.update((n.attrs["then"], n.attrs["else"]))
    return out


def variants(prog: Program) -> list:
    return prog.meta.get("variants") or []


def free_signature(prog: Program, f: Function) -> bool:
    """Parameters and results of ``f`` may change: it is the entry, or nothing calls it (an
    uncalled private function is still compiled, and may be where the bug is)."""
    return f.name == prog.entry or f.name not in used_functions(prog)


def map_types(prog: Program, fn) -> None:
    """Apply ``fn`` to every tensor type in the program, including types inside attributes."""

    def ty(t):
        if t is None:
            return None
        if isinstance(t, TupleTy):
            return TupleTy([ty(x) for x in t.fields])
        return fn(t)

    for f in prog.functions:
        f.ret_annot = ty(f.ret_annot)
        for p in f.params:
            p.ty, p.actual = ty(p.ty), ty(p.actual)
        for n in f.nodes():
            n.ty, n.annot = ty(n.ty), ty(n.annot)
            if "ty" in n.attrs and n.op in ("match_cast", "const"):
                n.attrs["ty"] = ty(ty_from_json(n.attrs["ty"])).to_json()


def ty_vars(t) -> set:
    """The symbolic dim names in a type."""
    if t is None:
        return set()
    if isinstance(t, TupleTy):
        return {v for x in t.fields for v in ty_vars(x)}
    return {v for d in (t.shape or []) for v in D.free_vars(d)}


def splice_body(prog: Program, f: Function, name: str, callee: Function, args: list) -> None:
    """Replace the binding ``name`` of ``f`` with ``callee``'s bindings (its parameters bound
    to ``args``, its values renamed fresh), and its uses with the callee's result: inlining a
    call, or an R.If becoming one branch."""
    names = {p.name: a for p, a in zip(callee.params, args)}
    spliced: list = []
    for n in callee.nodes():
        new = _fresh_like(f, n.name, spliced)
        names[n.name] = new
        spliced.append(Node(new, n.op, [names[a] for a in n.args], dict(n.attrs), n.ty,
                            n.annot))
    for b in f.blocks:
        for i, n in enumerate(b.nodes):
            if n.name == name:
                b.nodes[i:i + 1] = spliced
                break
    rename_uses(f, name, names[callee.ret])


def _fresh_like(f: Function, base: str, extra: list) -> str:
    used = {p.name for p in f.params} | {n.name for n in f.nodes()} | {n.name for n in extra}
    i = 1
    while f"{base}_i{i}" in used:
        i += 1
    return f"{base}_i{i}"
