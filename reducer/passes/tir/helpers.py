"""What the TIR passes share: statements addressed by path, substitution, the scope check
and the buffer attributes that have a plain default."""
from __future__ import annotations

from fuzz.tir import model as M


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


def container(body: list, path: tuple) -> tuple[list, int]:
    """The list holding the statement at ``path`` and its index there."""
    lst = body
    for k in range(0, len(path) - 1, 2):
        lst = getattr(lst[path[k]], path[k + 1])
    return lst, path[-1]


def paths_where(prog, keep) -> list[list]:
    """The paths (as JSON lists) of the statements for which ``keep(stmt)`` holds."""
    out = []
    for p in stmt_paths(prog.body):
        lst, i = container(prog.body, p)
        if keep(lst[i]):
            out.append(list(p))
    return out


def outermost(chosen: list) -> list[tuple]:
    """The chosen paths that are not under another chosen one (an edit takes its subtree)."""
    paths = [tuple(c) for c in chosen]
    return [p for p in paths if not any(q != p and p[:len(q)] == q for q in paths)]


def replace_at(body: list, edits: dict) -> None:
    """Apply {path: [replacement statements]} deepest-last-first so indices stay valid."""
    for path in sorted(edits, key=lambda p: (len(p), p), reverse=True):
        lst, i = container(body, path)
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


# --- buffer layout attributes that have a plain default ------------------------------------
BUFFER_DEFAULTS = (("axis_separators", None), ("strides", None), ("elem_offset", None),
                   ("offset_factor", 0), ("scope", "global"))


def buffers(prog) -> list:
    return list(prog.params) + prog.allocs()


def layout_attrs(prog) -> list[list]:
    """[buffer, attribute] for every attribute off its default; [buffer, "how"] for a
    match_buffer parameter."""
    out = []
    for b in buffers(prog):
        for attr, default in BUFFER_DEFAULTS:
            value = getattr(b, attr)
            # An empty list stands for "none" where the default is None.
            if value != default and (default is not None or value != []):
                out.append([b.name, attr])
        if b.how == "match_buffer":
            out.append([b.name, "how"])
    return out


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
