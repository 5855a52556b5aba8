"""The size of a TIR case: a table of named measures, compared in table order (see
reducer/passes/model/size.py for how passes and the driver use it)."""
from __future__ import annotations

from fuzz.tir import model as M

from .helpers import layout_attrs


def _expr_size(s) -> int:
    n = 0
    for f in ("value", "cond", "where"):
        e = getattr(s, f, None)
        if isinstance(e, list):
            n += sum(1 for _ in M.expr_nodes(e))
    return n


def _variants(prog) -> int:
    vs = prog.meta.get("variants") or []
    return len(vs) + sum(len(v.get("passes") or []) for v in vs)


MEASURES = {                              # in size-key order: earlier ones weigh more
    "statements": lambda prog: sum(1 for _ in M.walk(prog.body)),
    "params": lambda prog: len(prog.params),
    "schedule_steps": lambda prog: len((prog.meta.get("schedule") or {}).get("applied") or []),
    "variants": _variants,                # compile variants and their TIR pass lists
    "buffer_attrs": lambda prog: len(layout_attrs(prog)),
    "expressions": lambda prog: sum(_expr_size(s) for s in M.walk(prog.body)),
    "extents": lambda prog: sum(s.extent for s in M.walk(prog.body) if isinstance(s, M.For)),
}
STRUCTURE = ("statements", "params", "schedule_steps", "variants")


def size_key(prog) -> tuple:
    return tuple(m(prog) for m in MEASURES.values())


def smaller(a, b) -> bool:
    return size_key(a) < size_key(b)


def structure(prog) -> tuple:
    return tuple(MEASURES[m](prog) for m in STRUCTURE)


def statements(prog) -> int:
    """The size the reducer reports for a TIR case: statements."""
    return MEASURES["statements"](prog)
