"""Delta passes on the TIR program model (fuzz/tir/model.py), for ddmin.Driver.

The TIR counterpart of reducer/model_passes.py: each pass lists elements of a TirProgram
(``targets``) and edits a copy for a chosen subset (``edit``). Edits need no TVM; a candidate
that no longer renders or no longer fails the same way is refused by the sandbox oracle. The
passes run coarse to fine: compile variants and schedule steps, whole statements, loops and
conditionals unwrapped, then buffer attributes, expressions and extents.
"""
from __future__ import annotations

import json
from typing import Optional

from fuzz.tir import model as M

from .model_passes import ModelContext


class TirPass:
    name = "tir"

    def __init__(self, ctx: Optional[ModelContext] = None):
        self.ctx = ctx
        self._memo: tuple = (None, None)

    def targets(self, prog) -> list:
        raise NotImplementedError

    def edit(self, prog, chosen: list) -> bool:
        raise NotImplementedError

    def _targets(self, prog) -> list:
        if self._memo[0] is not prog:
            self._memo = (prog, self.targets(prog))
        return self._memo[1]

    def count(self, prog) -> int:
        return len(self._targets(prog))

    def describe(self, prog, chunk: range):
        ts = self._targets(prog)
        return tuple(json.dumps(ts[i], sort_keys=True, default=str) for i in chunk)

    def apply(self, prog, chosen: frozenset):
        ts = self._targets(prog)
        cand = prog.copy()
        try:
            if not self.edit(cand, [ts[i] for i in sorted(chosen)]):
                return None
            if not defined_ok(cand):
                return None
        except (KeyError, IndexError, ValueError, TypeError):
            return None
        return cand

    def apply_many(self, prog, chosen_sets) -> list:
        return [self.apply(prog, c) for c in chosen_sets]


# --- statement addressing: a path of (list field, index) steps from the body ----------------
def stmt_paths(body: list, prefix=()) -> list[tuple]:
    out = []
    for i, s in enumerate(body):
        p = prefix + (i,)
        out.append(p)
        for f in M._BODIES:
            sub = getattr(s, f, None)
            if isinstance(sub, list):
                out.extend(stmt_paths(sub, p + (f,)))
    return out


def _container(body: list, path: tuple) -> tuple[list, int]:
    """The list holding the statement at ``path`` and its index there."""
    lst = body
    for k in range(0, len(path) - 1, 2):
        lst = getattr(lst[path[k]], path[k + 1])
    return lst, path[-1]


def _paths_where(prog, keep) -> list[list]:
    """The paths (as JSON lists) of the statements for which ``keep(stmt)`` holds."""
    out = []
    for p in stmt_paths(prog.body):
        lst, i = _container(prog.body, p)
        if keep(lst[i]):
            out.append(list(p))
    return out


def _outermost(chosen: list) -> list[tuple]:
    """The chosen paths that are not under another chosen one (an edit takes its subtree)."""
    paths = [tuple(c) for c in chosen]
    return [p for p in paths if not any(q != p and p[:len(q)] == q for q in paths)]


def _replace_at(body: list, edits: dict) -> None:
    """Apply {path: [replacement statements]} deepest-last-first so indices stay valid."""
    for path in sorted(edits, key=lambda p: (len(p), p), reverse=True):
        lst, i = _container(body, path)
        lst[i:i + 1] = edits[path]


def subst(e, name: str, value):
    """``e`` with variable ``name`` replaced by the expression ``value``."""
    if not isinstance(e, list):
        return e
    if e[0] == "var" and e[1] == name:
        return value
    return [subst(x, name, value) if isinstance(x, list) else x for x in e]


def subst_stmts(stmts: list, name: str, value) -> None:
    for s in M.walk(stmts):
        for f in ("value", "cond", "where"):
            if getattr(s, f, None) is not None:
                setattr(s, f, subst(getattr(s, f), name, value))
        if isinstance(s, M.Store):
            s.indices = [subst(i, name, value) for i in s.indices]
        if isinstance(s, M.Block):
            for iv in s.iter_vars:
                iv.binding = subst(iv.binding, name, value)


# --- scope check: every buffer and variable used is declared (cheap, before the sandbox) ----
def defined_ok(prog) -> bool:
    bufs = {p.name for p in prog.params}

    def expr_ok(e, names) -> bool:
        for n in M.expr_nodes(e):
            if n[0] == "var" and n[1] not in names:
                return False
            if n[0] == "load" and n[1] not in bufs_now[-1]:
                return False
        return True

    bufs_now = [set(bufs)]

    def stmts_ok(stmts, names) -> bool:
        bufs_now.append(set(bufs_now[-1]))
        try:
            for s in stmts:
                if isinstance(s, M.Alloc):
                    if s.buf.how == "view" and s.buf.base not in bufs_now[-1]:
                        return False
                    bufs_now[-1].add(s.buf.name)
                elif isinstance(s, M.For):
                    if not stmts_ok(s.body, names | {s.var}):
                        return False
                elif isinstance(s, M.Let):
                    if not expr_ok(s.value, names) or not stmts_ok(s.body, names | {s.var}):
                        return False
                elif isinstance(s, M.If):
                    if not expr_ok(s.cond, names) or not stmts_ok(s.then, names):
                        return False
                    if s.else_ is not None and not stmts_ok(s.else_, names):
                        return False
                elif isinstance(s, M.Block):
                    if not all(expr_ok(iv.binding, names) for iv in s.iter_vars):
                        return False
                    inner = names | {iv.name for iv in s.iter_vars}
                    if s.where is not None and not expr_ok(s.where, inner):
                        return False
                    if s.init is not None and not stmts_ok(s.init, inner):
                        return False
                    if not stmts_ok(s.body, inner):
                        return False
                elif isinstance(s, M.Store):
                    if s.buf not in bufs_now[-1]:
                        return False
                    if not all(expr_ok(i, names) for i in s.indices) or not expr_ok(s.value, names):
                        return False
            return True
        finally:
            bufs_now.pop()

    return stmts_ok(prog.body, set())


# --- the passes -------------------------------------------------------------------------------
class DropVariants(TirPass):
    """Extra compile variants, then TIR passes of a variant's pass order."""
    name = "tir-drop-variants"

    def targets(self, prog):
        vs = prog.meta.get("variants") or []
        out = [["variant", i] for i in range(1, len(vs))]
        out += [["pass", i, j] for i, v in enumerate(vs) for j in range(len(v.get("passes") or []))]
        return out

    def edit(self, prog, chosen):
        vs = prog.meta.get("variants") or []
        drop_v = {c[1] for c in chosen if c[0] == "variant"}
        for c in chosen:
            if c[0] == "pass":
                vs[c[1]]["passes"][c[2]] = None
        for v in vs:
            v["passes"] = [p for p in v.get("passes") or [] if p is not None]
        prog.meta["variants"] = [v for i, v in enumerate(vs) if i not in drop_v]
        return True


class DropScheduleSteps(TirPass):
    name = "tir-drop-schedule-steps"

    def targets(self, prog):
        steps = (prog.meta.get("schedule") or {}).get("applied") or []
        return [[i, s.get("prim")] for i, s in enumerate(steps)]

    def edit(self, prog, chosen):
        sched = prog.meta["schedule"]
        drop = {c[0] for c in chosen}
        sched["applied"] = [s for i, s in enumerate(sched["applied"]) if i not in drop]
        if not sched["applied"]:
            del prog.meta["schedule"]
        return True


class RemoveStmts(TirPass):
    """Whole statements (with everything under them)."""
    name = "tir-remove-stmts"

    def targets(self, prog):
        return _paths_where(prog, lambda s: True)

    def edit(self, prog, chosen):
        # A statement under a removed one goes with it.
        _replace_at(prog.body, {p: [] for p in _outermost(chosen)})
        return bool(prog.body)


class Unwrap(TirPass):
    """A loop becomes its body at iteration 0; a conditional its then-branch; a let its body
    with the value substituted; a block its body with each iter var bound to its binding."""
    name = "tir-unwrap"

    def targets(self, prog):
        return _paths_where(prog, lambda s: isinstance(s, (M.For, M.If, M.Let, M.Block)))

    def edit(self, prog, chosen):
        edits = {}
        for p in _outermost(chosen):
            lst, i = _container(prog.body, p)
            s = lst[i]
            if isinstance(s, M.For):
                body = s.body
                subst_stmts(body, s.var, M.const("int32", 0))
            elif isinstance(s, M.If):
                body = s.then
            elif isinstance(s, M.Let):
                body = s.body
                subst_stmts(body, s.var, s.value)
            else:
                if s.init is not None or any(iv.kind == "R" for iv in s.iter_vars):
                    return False   # a reduction needs its block (init runs once)
                body = s.body
                for iv in s.iter_vars:
                    subst_stmts(body, iv.name, iv.binding)
            edits[p] = body
        _replace_at(prog.body, edits)
        return True


class DropBufferAttrs(TirPass):
    """Layout attributes one at a time: strides, elem_offset, offset_factor, scope,
    axis_separators; a match_buffer parameter becomes a plain T.Buffer."""
    name = "tir-drop-buffer-attrs"
    DEFAULTS = (("axis_separators", None), ("strides", None), ("elem_offset", None),
                ("offset_factor", 0), ("scope", "global"))

    def _bufs(self, prog):
        return list(prog.params) + prog.allocs()

    def targets(self, prog):
        out = []
        for b in self._bufs(prog):
            for attr, default in self.DEFAULTS:
                value = getattr(b, attr)
                # An empty list stands for "none" where the default is None.
                if value != default and (default is not None or value != []):
                    out.append([b.name, attr])
            if b.how == "match_buffer":
                out.append([b.name, "how"])
        return out

    def edit(self, prog, chosen):
        bufs = {b.name: b for b in self._bufs(prog)}
        for name, attr in chosen:
            b = bufs[name]
            if attr == "how":
                b.how = "param"
            else:
                setattr(b, attr, dict(self.DEFAULTS)[attr])
        return True


class SimplifyValues(TirPass):
    """A stored value becomes one of its operands, or a constant of the buffer's dtype."""
    name = "tir-simplify-values"

    def targets(self, prog):
        return _paths_where(prog, lambda s: isinstance(s, M.Store) and s.value[0] != "const")

    def edit(self, prog, chosen):
        dtypes = {b.name: b.dtype for b in list(prog.params) + prog.allocs()}
        for c in chosen:
            lst, i = _container(prog.body, tuple(c))
            s = lst[i]
            dt = dtypes[s.buf]
            v = s.value
            if v[0] == "bin" and v[1] in ("+", "-", "*", "min", "max"):
                s.value = v[2]   # same dtype as the whole
            else:
                s.value = M.const(dt, False if dt == "bool" else (0.5 if "float" in dt else 1))
        return True


class ShrinkExtents(TirPass):
    """A serial loop of extent > 1 runs once."""
    name = "tir-shrink-extents"

    def targets(self, prog):
        return _paths_where(prog, lambda s: isinstance(s, M.For) and s.extent > 1)

    def edit(self, prog, chosen):
        for c in chosen:
            lst, i = _container(prog.body, tuple(c))
            lst[i].extent = 1
        return True


class DropParams(TirPass):
    """Parameters the body no longer uses."""
    name = "tir-drop-params"

    def targets(self, prog):
        text = json.dumps([M.stmt_to_json(s) for s in prog.body])
        return [p.name for p in prog.params if f'"{p.name}"' not in text and len(prog.params) > 1]

    def edit(self, prog, chosen):
        prog.params = [p for p in prog.params if p.name not in set(chosen)]
        return bool(prog.params)


PASSES = (DropVariants, DropScheduleSteps, RemoveStmts, Unwrap, DropBufferAttrs, SimplifyValues,
          ShrinkExtents, DropParams)


def tir_passes(ctx: Optional[ModelContext] = None) -> list[TirPass]:
    return [cls(ctx) for cls in PASSES]


# --- size: the measure every accepted candidate must decrease ----------------------------------
def size_key(prog) -> tuple:
    stmts = sum(1 for _ in M.walk(prog.body))
    steps = len((prog.meta.get("schedule") or {}).get("applied") or [])
    vs = prog.meta.get("variants") or []
    variants = len(vs) + sum(len(v.get("passes") or []) for v in vs)
    exprs = sum(_expr_size(s) for s in M.walk(prog.body))
    attrs = len(DropBufferAttrs().targets(prog))
    extents = sum(s.extent for s in M.walk(prog.body) if isinstance(s, M.For))
    return (stmts, len(prog.params), steps, variants, attrs, exprs, extents)


def _expr_size(s) -> int:
    n = 0
    for f in ("value", "cond", "where"):
        e = getattr(s, f, None)
        if isinstance(e, list):
            n += sum(1 for _ in M.expr_nodes(e))
    return n


def smaller(a, b) -> bool:
    return size_key(a) < size_key(b)


def structure(prog) -> tuple:
    return size_key(prog)[:4]


def statements(prog) -> int:
    """The size the reducer reports for a TIR case: statements."""
    return sum(1 for _ in M.walk(prog.body))
