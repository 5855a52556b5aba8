"""Delta passes on the program model, coarse to fine (each is one small unit for ddmin.Driver).

Every pass enumerates elements of a program (``targets``) and edits a copy for a chosen
subset (``edit``). The edited copy is re-typed with the catalogue's shape rules
(``reducer.retype``) and, for edits that change shapes or dtypes, run through the numpy
reference; a candidate that fails either is ill-formed and never reaches the sandbox.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Optional

from fuzz import dims as D
from fuzz.catalogue import CATALOGUE
from fuzz.generate import default_range
from fuzz.model import Block, Function, Node, Param, Program, TensorTy, TupleTy, Ty, ty_from_json

from .hints import matches, op_hints
from .retype import IllFormed, check_uniform, frozen_nodes, retype, uniform_dtypes


@dataclass
class ModelContext:
    """What the passes need to know about the original case."""

    frozen: dict = field(default_factory=dict)     # nodes typed by hand (near-valid mutants)
    failing_variant: Optional[dict] = None         # the variant the finding failed under
    kind: str = ""                                 # the finding's kind (crash, verifier_build...)
    hints: list = field(default_factory=list)      # op names the failure's message mentions
    uniform: dict = field(default_factory=dict)    # nodes whose inputs share one dtype
    env: dict = field(default_factory=dict)        # symbolic dim values the case ran with
    check_reference: bool = False                  # the original runs in the numpy reference

    @staticmethod
    def of(prog: Program, outcome: Optional[dict] = None) -> "ModelContext":
        from fuzz import reference
        from fuzz.inputs import make_inputs

        env: dict = {}
        ok = False
        try:
            env, args = make_inputs(prog, prog.meta.get("seed") or 0)
            if prog.meta.get("mode") != "near-valid":
                reference.run(prog, args, env)
                ok = True
        except Exception:  # noqa: BLE001 - then the reference is no filter for this case
            pass
        outcome = outcome or {}
        return ModelContext(frozen_nodes(prog), outcome.get("extra", {}).get("variant"),
                            outcome.get("kind", ""), op_hints(outcome), uniform_dtypes(prog),
                            env, ok)


def reference_ok(prog: Program) -> bool:
    """The candidate still runs in the numpy reference with every shape rule holding."""
    from fuzz import reference
    from fuzz.inputs import make_inputs

    try:
        env, args = make_inputs(prog, prog.meta.get("seed") or 0)
        reference.run(prog, args, env)
        return True
    except Exception:  # noqa: BLE001
        return False


class ModelPass:
    """Base: ``targets`` lists the elements; ``edit`` changes the chosen ones in a copy.
    ``strict``: the edit must not change any node's type (rewiring edits)."""

    name = "pass"
    strict = True
    shapes = False    # edits shapes or dtypes: also run the numpy reference

    def __init__(self, ctx: ModelContext):
        self.ctx = ctx
        self._memo: tuple = (None, None)

    def targets(self, prog: Program) -> list:
        raise NotImplementedError

    def edit(self, prog: Program, chosen: list) -> bool:
        raise NotImplementedError

    def _targets(self, prog: Program) -> list:
        if self._memo[0] is not prog:
            self._memo = (prog, self.targets(prog))
        return self._memo[1]

    def count(self, prog: Program) -> int:
        return len(self._targets(prog))

    def describe(self, prog: Program, chunk: range):
        """The chunk's elements by name (stable across rounds, unlike indices)."""
        ts = self._targets(prog)
        return tuple(json.dumps(ts[i], sort_keys=True, default=str) for i in chunk)

    def apply(self, prog: Program, chosen: frozenset) -> Optional[Program]:
        ts = self._targets(prog)
        cand = Program.loads(prog.dumps())   # deep: meta (variants) must not be shared
        try:
            if not self.edit(cand, [ts[i] for i in sorted(chosen)]):
                return None
            retype(cand, strict=self.strict, frozen=self.ctx.frozen)
            if self.shapes:
                check_uniform(cand, self.ctx.uniform)
                if self.ctx.check_reference and not reference_ok(cand):
                    return None
        except (IllFormed, KeyError, IndexError, ValueError, TypeError):
            return None
        return cand

    def apply_many(self, prog: Program, chosen_sets) -> list[Optional[Program]]:
        return [self.apply(prog, c) for c in chosen_sets]


# --- helpers --------------------------------------------------------------------------------
def _fresh(f: Function, prefix: str) -> str:
    used = {p.name for p in f.params} | {n.name for n in f.nodes()}
    i = 1
    while f"{prefix}{i}" in used:
        i += 1
    return f"{prefix}{i}"


def _declared(f: Function) -> dict[str, Ty]:
    return f.value_types()


def _runtime(f: Function) -> dict[str, Ty]:
    tys = {p.name: p.runtime_ty for p in f.params}
    tys.update({n.name: n.ty for n in f.nodes()})
    return tys


def _same(a: Optional[Ty], b: Optional[Ty]) -> bool:
    return a is not None and b is not None and a.to_json() == b.to_json()


def _param_for(f: Function, ty: Ty, prefix: str = "r") -> Optional[str]:
    """A new parameter of ``ty`` (a concrete tensor: inputs must be made for it)."""
    if not isinstance(ty, TensorTy) or ty.shape is None or not ty.dtype:
        return None
    lo, hi = default_range(ty.dtype)
    name = _fresh(f, prefix)
    f.params.append(Param(name, TensorTy(list(ty.shape), ty.dtype), lo, hi))
    return name


def _users(f: Function) -> dict[str, list[Node]]:
    out: dict[str, list[Node]] = {}
    for n in f.nodes():
        for a in n.args:
            out.setdefault(a, []).append(n)
    return out


def _drop_nodes(f: Function, names: set) -> None:
    for b in f.blocks:
        b.nodes = [n for n in b.nodes if n.name not in names]


def _live(f: Function) -> set:
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


def _used_functions(prog: Program) -> set:
    return {n.attrs["func"] for f in prog.functions for n in f.nodes() if n.op == "call"}


def _variants(prog: Program) -> list:
    return prog.meta.get("variants") or []


def free_signature(prog: Program, f: Function) -> bool:
    """Parameters and results of ``f`` may change: it is the entry, or nothing calls it (an
    uncalled private function is still compiled, and may be where the bug is)."""
    return f.name == prog.entry or f.name not in _used_functions(prog)


# --- compile variants -------------------------------------------------------------------------
class DropVariants(ModelPass):
    """Build the case fewer ways: the failing variant alone is usually enough."""

    name = "drop_variants"

    def targets(self, prog):
        vs = _variants(prog)
        if len(vs) < 2:
            return []
        # The failing variant last: the first halving then tries dropping all the others.
        return sorted(range(len(vs)), key=lambda i: vs[i] == self.ctx.failing_variant)

    def edit(self, prog, chosen):
        vs = [v for i, v in enumerate(_variants(prog)) if i not in set(chosen)]
        prog.meta["variants"] = vs
        return bool(vs)


class ShortenPasses(ModelPass):
    """Drop passes from a recorded pass sequence (``pipeline: passes``) and extra passes."""

    name = "shorten_passes"
    lists = ("passes", "extra_passes")

    def targets(self, prog):
        return [(key, i, j) for key in self.lists for i, v in enumerate(_variants(prog))
                for j in range(len(v.get(key) or []))]

    def edit(self, prog, chosen):
        drop = set(chosen)
        for i, v in enumerate(_variants(prog)):
            for key in self.lists:
                if v.get(key):
                    v[key] = [p for j, p in enumerate(v[key]) if (key, i, j) not in drop]
            if v.get("pipeline") == "passes" and not v.get("passes"):
                v["pipeline"] = "default"
        return True


class SimplifyVariant(ModelPass):
    """Plainer builds: no extra target options, the default pipeline, bytecode, llvm over c."""

    name = "simplify_variant"

    def targets(self, prog):
        out = []
        for i, v in enumerate(_variants(prog)):
            out += [(i, "target", k) for k in sorted(v.get("target", {})) if k != "kind"]
            if v.get("pipeline") not in ("default", "passes"):
                out.append((i, "pipeline", "default"))
            if v.get("exec_mode", "bytecode") != "bytecode":
                out.append((i, "exec_mode", "bytecode"))
            if v.get("target", {}).get("kind") == "c":
                out.append((i, "kind", "llvm"))
        return out

    def edit(self, prog, chosen):
        vs = _variants(prog)
        for i, what, x in chosen:
            if what == "target":
                vs[i]["target"].pop(x, None)
            elif what == "kind":
                vs[i]["target"]["kind"] = x
            else:
                vs[i][what] = x
        return True


# --- functions and outputs ----------------------------------------------------------------------
def _replace_node_by_params(f: Function, node: Node, users: dict) -> bool:
    """Replace a node's value by new parameters: its own when it is a tensor; for a tuple,
    one per get_item user. Only in the entry function (a callee's signature is fixed)."""
    if isinstance(node.ty, TensorTy):
        p = _param_for(f, node.ty)
        if p is None:
            return False
        _rename_uses(f, node.name, p)
        return True
    for u in users.get(node.name, []):
        if u.op != "get_item" or not _replace_node_by_params(f, u, users):
            return False
    if f.ret == node.name:
        return False
    return True


def _rename_uses(f: Function, old: str, new: str) -> None:
    for n in f.nodes():
        n.args = [new if a == old else a for a in n.args]
    if f.ret == old:
        f.ret = new


class RemoveFunctions(ModelPass):
    """Remove callees; each call to one becomes new parameters of the caller."""

    name = "remove_functions"

    def targets(self, prog):
        return [f.name for f in prog.functions if f.name != prog.entry]

    def edit(self, prog, chosen):
        gone = set(chosen)
        for f in prog.functions:
            if f.name in gone:
                continue
            calls = [n for n in f.nodes() if n.op == "call" and n.attrs["func"] in gone]
            if calls and f.name != prog.entry:
                return False
            for n in calls:
                if not _replace_node_by_params(f, n, _users(f)):
                    return False
            dead = {n.name for n in calls} | {u.name for n in calls for u in f.nodes()
                                              if u.op == "get_item" and u.args == [n.name]}
            _drop_nodes(f, dead)
        prog.functions = [f for f in prog.functions if f.name not in gone]
        return True


class InlineCalls(ModelPass):
    """Inline a call: the callee's nodes take the call's place; an unused callee goes."""

    name = "inline_calls"

    def targets(self, prog):
        return [(f.name, n.name) for f in prog.functions for n in f.nodes() if n.op == "call"]

    def edit(self, prog, chosen):
        for fname, call in chosen:
            f = prog.func(fname)
            node = f.node(call)
            callee = prog.func(node.attrs["func"])
            names = {p.name: a for p, a in zip(callee.params, node.args)}
            spliced = []
            for n in callee.nodes():
                new = _fresh_like(f, n.name, spliced)
                names[n.name] = new
                spliced.append(Node(new, n.op, [names[a] for a in n.args], dict(n.attrs),
                                    n.ty, n.annot))
            for b in f.blocks:
                for i, n in enumerate(b.nodes):
                    if n.name == call:
                        b.nodes[i:i + 1] = spliced
                        break
            _rename_uses(f, call, names[callee.ret])
        used = _used_functions(prog)
        prog.functions = [g for g in prog.functions if g.name == prog.entry or g.name in used]
        return True


def _fresh_like(f: Function, base: str, extra: list) -> str:
    used = {p.name for p in f.params} | {n.name for n in f.nodes()} | {n.name for n in extra}
    i = 1
    while f"{base}_i{i}" in used:
        i += 1
    return f"{base}_i{i}"


class ShrinkOutputs(ModelPass):
    """Return fewer values: drop fields of a returned tuple (one left: the value itself)."""

    name = "shrink_outputs"

    def targets(self, prog):
        out = []
        for f in prog.functions:
            ret = next((n for n in f.nodes() if n.name == f.ret), None)
            if ret is None or ret.op != "tuple" or not ret.args or not free_signature(prog, f):
                continue
            out += [(f.name, i) for i in range(len(ret.args))]
        return out

    def edit(self, prog, chosen):
        for f in prog.functions:
            drop = {i for fn, i in chosen if fn == f.name}
            if not drop:
                continue
            ret = f.node(f.ret)
            keep = [a for i, a in enumerate(ret.args) if i not in drop]
            if len(ret.args) == 1:
                keep = ret.args          # a 1-tuple: "dropping" its field unwraps it
            if not keep:
                return False
            if len(keep) == 1:
                f.ret = keep[0]
                if not any(ret.name in n.args for n in f.nodes()):
                    _drop_nodes(f, {ret.name})
            else:
                ret.args = keep
                ret.annot = None
        return True


class RemoveDead(ModelPass):
    """Remove nodes the returned value does not depend on."""

    name = "remove_dead"

    def targets(self, prog):
        return [(f.name, n.name) for f in prog.functions for n in f.nodes()
                if n.name not in _live(f)]

    def edit(self, prog, chosen):
        for f in prog.functions:
            _drop_nodes(f, {n for fn, n in chosen if fn == f.name})
        return True


class RemoveNodes(ModelPass):
    """Remove nodes; users are rewired to an input of the same type, else (entry function
    only) to a new parameter of the node's type, as torch's fx minifier does. With
    ``to_params`` every removed node becomes a parameter (cuts the graph's head)."""

    name = "remove_nodes"
    to_params = False

    def targets(self, prog):
        out = []
        for f in prog.functions:
            free = free_signature(prog, f)
            params = {p.name for p in f.params}
            for n in f.nodes():
                if self.to_params and (not free or not isinstance(n.ty, TensorTy)
                                       or not self._operand_node(f, n, params)):
                    continue
                out.append((f.name, n.name))
        return out

    @staticmethod
    def _operand_node(f: Function, n: Node, params: set) -> bool:
        """``n`` has a same-typed operand that is a node: only then is a new parameter
        different from what remove_nodes tried (rewiring to that operand)."""
        decl = _declared(f)
        same = [a for a in n.args if _same(decl.get(a), decl.get(n.name))]
        return bool(same) and same[0] not in params

    def edit(self, prog, chosen):
        for f in prog.functions:
            removed = {n for fn, n in chosen if fn == f.name}
            if removed and not self._remove(f, removed, free_signature(prog, f)):
                return False
        return True

    def _remove(self, f: Function, removed: set, entry: bool) -> bool:
        defs = {n.name: n for n in f.nodes()}
        decl, rt = _declared(f), _runtime(f)
        repl: dict[str, str] = {}

        def resolve(name: str) -> str:
            if name not in removed:
                return name
            if name in repl:
                return repl[name]
            n = defs[name]
            same = [] if self.to_params else [
                a for a in n.args if _same(decl.get(a), decl[name]) and _same(rt.get(a), rt[name])]
            if same:
                r = resolve(same[0])
            elif entry and isinstance(n.ty, TensorTy) and (n.annot is None
                                                          or _same(n.annot, n.ty)):
                r = _param_for(f, n.ty)
                if r is None:
                    raise IllFormed(f"{name}: no parameter of its type")
            else:
                raise IllFormed(f"{name} cannot be replaced")
            repl[name] = r
            return r

        kept = [n for n in f.nodes() if n.name not in removed]
        for n in kept:
            n.args = [resolve(a) for a in n.args]
        f.ret = resolve(f.ret)
        _drop_nodes(f, removed)
        return True


class ReturnDead(ModelPass):
    """Return a value nothing uses (the crashing op a removal left dead) instead of the
    function's result, and drop the parameters only the old result needed."""

    name = "return_dead_value"

    def targets(self, prog):
        return [(f.name, n.name) for f in prog.functions if free_signature(prog, f)
                for n in f.nodes() if n.name not in _live(f)]

    def edit(self, prog, chosen):
        for f in prog.functions:
            mine = [n for fn, n in chosen if fn == f.name]
            if mine:
                order = [n.name for n in f.nodes()]
                f.ret = max(mine, key=order.index)
                used = {a for n in f.nodes() for a in n.args} | {f.ret}
                f.params = [p for p in f.params if p.name in used]
        return True


class NodesToParams(RemoveNodes):
    name = "nodes_to_params"
    to_params = True


class DropUnusedParams(ModelPass):
    name = "drop_unused_params"

    def targets(self, prog):
        out = []
        for f in prog.functions:
            if free_signature(prog, f):
                used = {a for n in f.nodes() for a in n.args} | {f.ret}
                out += [(f.name, p.name) for p in f.params if p.name not in used]
        return out

    def edit(self, prog, chosen):
        for f in prog.functions:
            f.params = [p for p in f.params if (f.name, p.name) not in set(chosen)]
        return True


class SimplifyBlocks(ModelPass):
    """One block per function, then no dataflow block (shorter TVMScript)."""

    name = "simplify_blocks"

    def targets(self, prog):
        out = []
        for f in prog.functions:
            if sum(1 for b in f.blocks if b.nodes) < len(f.blocks):
                out.append((f.name, "empty"))
            if len(f.blocks) > 1:
                out.append((f.name, "merge"))
            if any(b.dataflow for b in f.blocks):
                out.append((f.name, "plain"))
        return out

    def edit(self, prog, chosen):
        for fname, what in chosen:
            f = prog.func(fname)
            if what == "empty":
                f.blocks = [b for b in f.blocks if b.nodes]
            elif what == "merge":
                f.blocks = [Block(f.blocks[0].dataflow, [n for b in f.blocks for n in b.nodes])]
            else:
                for b in f.blocks:
                    b.dataflow = False
        return True


class DropAnnotations(ModelPass):
    """Undo near-valid promises: explicit annotations and erased parameter types."""

    name = "drop_annotations"

    def targets(self, prog):
        if self.ctx.kind == "verifier_build":
            return []   # a verifier/build disagreement is about the broken promise itself
        return ([(f.name, "node", n.name) for f in prog.functions for n in f.nodes()
                 if n.annot is not None]
                + [(f.name, "param", p.name) for f in prog.functions for p in f.params
                   if p.actual is not None])

    def edit(self, prog, chosen):
        for fname, what, name in chosen:
            f = prog.func(fname)
            if what == "node":
                f.node(name).annot = None
            else:
                p = next(p for p in f.params if p.name == name)
                p.ty, p.actual = p.actual, None
        return True


# --- shapes, dtypes, attributes --------------------------------------------------------------
def _map_types(prog: Program, fn) -> None:
    """Apply ``fn`` to every tensor type in the program, including types inside attributes."""

    def ty(t):
        if t is None:
            return None
        if isinstance(t, TupleTy):
            return TupleTy([ty(x) for x in t.fields])
        return fn(t)

    for f in prog.functions:
        for p in f.params:
            p.ty, p.actual = ty(p.ty), ty(p.actual)
        for n in f.nodes():
            n.ty, n.annot = ty(n.ty), ty(n.annot)
            if "ty" in n.attrs and n.op in ("match_cast", "const"):
                n.attrs["ty"] = ty(ty_from_json(n.attrs["ty"])).to_json()


def _subst_dim(d, var: str, value: int):
    if isinstance(d, int) or var not in D.free_vars(d):
        return d
    text = re.sub(rf"\b{re.escape(var)}\b", str(value), d)
    try:
        return D.evaluate(text, {}) if not D.free_vars(text) else text
    except (ValueError, KeyError, ZeroDivisionError, SyntaxError):
        return text


def _subst_attr(x: Any, var: str, value: int):
    if isinstance(x, str):
        try:
            D.parse(x)
        except (ValueError, SyntaxError):
            return x
        return _subst_dim(x, var, value)
    if isinstance(x, list):
        return [_subst_attr(y, var, value) for y in x]
    if isinstance(x, dict):
        return {k: _subst_attr(v, var, value) for k, v in x.items()}
    return x


class StaticDims(ModelPass):
    """Make a symbolic dim static, with the value the case ran with."""

    name = "static_dims"
    strict, shapes = False, True

    def targets(self, prog):
        names = set()
        for f in prog.functions:
            for p in f.params:
                for t in (p.ty, p.actual):
                    names.update(_ty_vars(t))
            for n in f.nodes():
                names.update(_ty_vars(n.ty))
        return sorted(names)

    def edit(self, prog, chosen):
        for var in chosen:
            value = int(self.ctx.env.get(var, 1))

            def fn(t, var=var, value=value):
                if t.shape is None:
                    return t
                return TensorTy([_subst_dim(d, var, value) for d in t.shape], t.dtype, t.ndim)

            _map_types(prog, fn)
            for f in prog.functions:
                for n in f.nodes():
                    if n.op not in ("match_cast", "const"):
                        n.attrs = _subst_attr(n.attrs, var, value)
        return True


def _ty_vars(t) -> set:
    if t is None:
        return set()
    if isinstance(t, TupleTy):
        return {v for x in t.fields for v in _ty_vars(x)}
    return {v for d in (t.shape or []) for v in D.free_vars(d)}


class ShrinkDims(ModelPass):
    """Shrink a static dim value everywhere it occurs in the entry's inputs (and in shape
    attributes), to 1 or to half; one value at a time keeps ops that tie dims together."""

    name = "shrink_dims"
    strict, shapes = False, True

    def targets(self, prog):
        values = set()
        for f in prog.functions:
            for p in f.params:
                t = p.runtime_ty
                if isinstance(t, TensorTy):
                    values.update(d for d in t.shape or [] if isinstance(d, int) and d > 1)
        out = [(v, 1) for v in sorted(values, reverse=True)]
        return out + [(v, v // 2) for v in sorted(values, reverse=True) if v >= 4]

    def edit(self, prog, chosen):
        new: dict[int, int] = {}
        for v, to in chosen:
            new[v] = min(new.get(v, v), to)

        def fn(t):
            if t.shape is None:
                return t
            return TensorTy([new.get(d, d) if isinstance(d, int) else d for d in t.shape],
                            t.dtype, t.ndim)

        _map_types(prog, fn)
        for f in prog.functions:
            for n in f.nodes():
                if isinstance(n.attrs.get("shape"), list):
                    n.attrs["shape"] = [new.get(d, d) if isinstance(d, int) else d
                                        for d in n.attrs["shape"]]
        return True


class SimplifyDtypes(ModelPass):
    """float32 instead of another dtype, for all inputs of that dtype at once."""

    name = "simplify_dtypes"
    strict, shapes = False, True

    def targets(self, prog):
        ds = set()
        for f in prog.functions:
            for p in f.params:
                for t in (p.ty, p.actual):
                    if isinstance(t, TensorTy) and t.dtype not in ("", "float32"):
                        ds.add(t.dtype)
        return sorted(ds)

    def edit(self, prog, chosen):
        gone = set(chosen)
        for f in prog.functions:
            for p in f.params:
                for attr in ("ty", "actual"):
                    t = getattr(p, attr)
                    if isinstance(t, TensorTy) and t.dtype in gone:
                        setattr(p, attr, TensorTy(t.shape, "float32", t.ndim))
                if p.runtime_ty.dtype == "float32" and (p.lo, p.hi) != default_range("float32"):
                    p.lo, p.hi = default_range("float32")
            for n in f.nodes():
                if n.op in ("match_cast", "const"):
                    t = ty_from_json(n.attrs["ty"])
                    if isinstance(t, TensorTy) and t.dtype in gone:
                        n.attrs["ty"] = TensorTy(t.shape, "float32", t.ndim).to_json()
        return True


_GONE = object()


class SimplifyAttrs(ModelPass):
    """Attributes toward their plainest value: absent, 0 or 1, False, float32."""

    name = "simplify_attrs"
    strict, shapes = False, True

    def targets(self, prog):
        out = []
        for f in prog.functions:
            for n in f.nodes():
                if n.op not in CATALOGUE:
                    continue
                for k, v in sorted(n.attrs.items()):
                    for rank, x in enumerate(_simpler(v)):
                        out.append((f.name, n.name, k, rank, x))
        return out

    def edit(self, prog, chosen):
        pick: dict = {}
        for fname, node, k, rank, x in chosen:
            key = (fname, node, k)
            if key not in pick or rank < pick[key][0]:
                pick[key] = (rank, x)
        for (fname, node, k), (_, x) in pick.items():
            n = prog.func(fname).node(node)
            if x is _GONE:
                n.attrs.pop(k, None)
            else:
                n.attrs[k] = x
        return True


def _simpler(v) -> list:
    """Plainer values than ``v``, plainest first."""
    out: list = [_GONE] if v is not None else []
    if isinstance(v, bool):
        out += [False] if v else []
    elif isinstance(v, int):
        out += [x for x in (0, 1) if abs(x) < abs(v) or (v < 0 and x >= 0 and x != v)]
    elif isinstance(v, float):
        out += [0.0] if v != 0.0 else []
    elif isinstance(v, str) and v in ("float16", "float64", "bfloat16", "int8", "int32",
                                      "int64", "uint8", "bool"):
        out += ["float32"]
    elif v is not None and not isinstance(v, (list, dict, str)):
        out += [None]
    return out


class IsolateOp(ModelPass):
    """The op the failure names (or, for a verifier/build disagreement, the node with the
    mutant's wrong annotation) alone in the entry function, its inputs as parameters, built
    the failing way only: one call when the guess about the culprit is right."""

    name = "isolate_op"

    def targets(self, prog):
        nodes = [(f, n) for f in prog.functions for n in f.nodes()]
        if len(nodes) <= 1:
            return []
        if self.ctx.hints:
            return [(f.name, n.name) for f, n in nodes
                    if n.op in CATALOGUE and matches(n.op, self.ctx.hints)]
        if self.ctx.kind == "verifier_build":
            # A verifier/build disagreement of a near-valid mutant: its wrong annotation.
            return [(f.name, n.name) for f, n in nodes if n.op in CATALOGUE and n.annot]
        return []

    def edit(self, prog, chosen):
        old = prog.main
        params: list[Param] = []
        nodes: list[Node] = []
        made: dict = {}
        for fname, name in chosen:
            f = prog.func(fname)
            n, rt = f.node(name), _runtime(f)
            srcp = {p.name: p for p in f.params}
            args = []
            for a in n.args:
                if (fname, a) not in made:
                    made[(fname, a)] = name_ = f"p{len(params) + 1}"
                    t = rt[a]
                    if a in srcp:   # a parameter stays as declared (erased types are bugs too)
                        q = srcp[a]
                        params.append(Param(name_, q.ty, q.lo, q.hi, q.actual))
                    elif isinstance(t, TensorTy) and t.shape is not None and t.dtype:
                        params.append(Param(name_, TensorTy(list(t.shape), t.dtype),
                                            *default_range(t.dtype)))
                    else:
                        return False
                args.append(made[(fname, a)])
            nodes.append(Node(f"v{len(nodes) + 1}", n.op, args, dict(n.attrs), n.ty, n.annot))
        ret = nodes[0].name
        if len(nodes) > 1:
            nodes.append(Node("out", "tuple", [x.name for x in nodes], {}))
            ret = "out"
        dataflow = any(b.dataflow for b in old.blocks)
        prog.functions = [Function(prog.entry, params, [Block(dataflow, nodes)], ret)]
        vs = _variants(prog)
        if self.ctx.failing_variant in vs:
            prog.meta["variants"] = [self.ctx.failing_variant]
        return True


class Cleanup(ModelPass):
    """One candidate that makes every change that almost always keeps a bug: the failing
    build alone, plain build options, no dead code, no unused parameters.
    Accepted, it saves a call per pass; refused, the passes run one by one."""

    name = "cleanup"
    strict = False
    parts = ("DropVariants", "SimplifyVariant", "RemoveDead", "DropUnusedParams")

    def targets(self, prog):
        return ["all"] if self._cleaned(prog) is not None else []

    def _cleaned(self, prog) -> Optional[Program]:
        cur, changed = prog, False
        for name in self.parts:
            p = globals()[name](self.ctx)
            n = p.count(cur)
            if not n:
                continue
            # DropVariants orders the failing variant last: keep it.
            chosen = range(n - 1) if name == "DropVariants" else range(n)
            nxt = p.apply(cur, frozenset(chosen)) if chosen else None
            if nxt is not None:
                cur, changed = nxt, True
        return cur if changed else None

    def apply(self, prog, chosen):
        return self._cleaned(prog) if chosen else None


PASSES = (IsolateOp, Cleanup, DropVariants, ShortenPasses, RemoveFunctions, ShrinkOutputs,
          RemoveDead, RemoveNodes, ReturnDead, Cleanup, NodesToParams, InlineCalls,
          DropUnusedParams, SimplifyBlocks, DropAnnotations, StaticDims, ShrinkDims,
          SimplifyDtypes, SimplifyAttrs, SimplifyVariant)


def model_passes(ctx: ModelContext) -> list[ModelPass]:
    return [cls(ctx) for cls in PASSES]



# --- size: the measure every accepted candidate must decrease ----------------------------------
def size_key(prog: Program) -> tuple:
    fs = prog.functions
    nodes = sum(1 for f in fs for _ in f.nodes())
    outputs = sum(len(n.args) + 1 for f in fs for n in f.nodes() if n.name == f.ret
                  and n.op == "tuple")
    vs = _variants(prog)
    variants = len(vs) + sum(len(v.get("passes") or []) + len(v.get("extra_passes") or [])
                             for v in vs)
    vfields = sum(len(v.get("target", {})) - 1 + (v.get("pipeline") not in ("default",))
                  + (v.get("exec_mode", "bytecode") != "bytecode")
                  + (v.get("target", {}).get("kind") == "c") for v in vs)
    params = sum(len(f.params) for f in fs)
    blocks = sum(len(f.blocks) + sum(b.dataflow for b in f.blocks) for f in fs)
    annots = sum(n.annot is not None for f in fs for n in f.nodes()) + sum(
        p.actual is not None for f in fs for p in f.params)
    tys = [p.runtime_ty for f in fs for p in f.params]
    sym = sum(len(_ty_vars(t)) for t in tys)
    dims = sum(d for t in tys if isinstance(t, TensorTy) for d in t.shape or []
               if isinstance(d, int))
    dtypes = sum(isinstance(t, TensorTy) and t.dtype != "float32" for t in tys)
    attrs = sum(_attr_cost(v) for f in fs for n in f.nodes() if n.op in CATALOGUE
                for v in n.attrs.values()) + sum(len(n.attrs) for f in fs for n in f.nodes()
                                                 if n.op in CATALOGUE)
    return (nodes, len(fs), outputs, variants, params, blocks, annots, sym, dims, dtypes,
            attrs, vfields)


def _attr_cost(v) -> int:
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, int):
        return min(abs(v), 1000) + (v < 0)
    if isinstance(v, float):
        return int(v != 0.0)
    if isinstance(v, str):
        return 0 if v == "float32" else 1
    if isinstance(v, (list, tuple)):
        return sum(_attr_cost(x) for x in v) + len(v)
    return 0 if v is None else 1


def smaller(a: Program, b: Program) -> bool:
    return size_key(a) < size_key(b)


def structure(prog: Program) -> tuple:
    """What removals depend on: bindings, functions, outputs, builds, parameters."""
    return size_key(prog)[:5]


def bindings(prog: Program) -> int:
    """The size the reducer reports: value bindings over all functions."""
    return sum(1 for f in prog.functions for _ in f.nodes())
