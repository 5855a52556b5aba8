"""Coverage as a measure of a campaign, and its feedback into generation.

Four kinds of cells, all computed in the campaign's process from a case and its outcome (no
work in the sandbox child):

``op_dtype_shape``
    catalogue op x dtype x shape kind: the dtype of the op's first tensor operand (its result's
    for ops without one), the shape kind the most dynamic of its operands' and result's types
    (``static`` < ``symbolic`` < ``ndim`` (rank only) < ``unknown``).
``edge``
    op -> op: a catalogue op's operand made by another catalogue op (through ``get_item``).
``pass_op``
    a variant's Relax pass (its random pass order) or, without one, its pipeline
    (``pipeline:default``, ``pipeline:dlight``, ...) x each op of the program.
``prim_block``
    schedule primitive x block shape, from the steps the build applied
    (``outcome.extra["schedule"]``): for a TIR case the block's iteration kinds
    (``SSR``: two spatial, one reduce; ``+init``, ``+where``), ``derived`` for a block a
    primitive made (cache_read's ``A_local``); for a Relax case's legalized PrimFuncs (whose
    blocks the parent never sees) ``legalized:<block name>`` (``T_add``, ``compute``).
``tvm_python``
    TVM's own Python functions the case ran (``relax/op/nn/nn.py:conv2d``), only where the
    sandbox traced them (``tvmfuzz run --py-coverage``, worker/pycoverage.py): the one kind
    the child computes, and off by default for its cost.

``Coverage`` counts cells (how many cases covered each) and, for the kinds report.html draws
(``FINDING_KINDS``: op x dtype x shape, pass x op, primitive x block), the findings (cases
whose verdict is ``fail``) among those cases: ``OUT/coverage.json`` is the one record of a
campaign's cells, which the guide, the summary and the page's heat maps all read.
``Coverage.current`` (made by ``refresh()``) is an immutable snapshot that the generator
(``fuzz.generate``, ``guide=``) uses to favour what is not yet covered, after HirGen's criteria:
op choice weighted up for ops whose cells were met least and for edges from the previous op
that were never met; dtype choice weighted up for the (op, dtype) pairs met least. A guided
program depends on the snapshot as well as the seed; its JSON is still the whole case.
"""
from __future__ import annotations

import collections
import json
import re
from typing import Iterable, Optional, Sequence

from .model import STRUCTURAL_OPS, TensorTy, TupleTy

KINDS = ("op_dtype_shape", "edge", "pass_op", "prim_block", "tvm_python")
FINDING_KINDS = ("op_dtype_shape", "pass_op", "prim_block")   # findings counted per cell
TITLES = {"op_dtype_shape": "op x dtype x shape", "edge": "op->op edges",
          "pass_op": "pass x op", "prim_block": "primitive x block",
          "tvm_python": "TVM Python functions"}
SHORT = {"op_dtype_shape": "cells", "edge": "edges", "pass_op": "pass x op",
         "prim_block": "prim x block", "tvm_python": "TVM py functions"}
SHAPE_KINDS = ("static", "symbolic", "ndim", "unknown")
_RANK = {k: i for i, k in enumerate(SHAPE_KINDS)}
SEP = "|"


# --- cells ---------------------------------------------------------------------------------
def shape_kind(ty) -> str:
    if isinstance(ty, TupleTy):
        kinds = [shape_kind(f) for f in ty.fields] or ["static"]
        return max(kinds, key=_RANK.__getitem__)
    if not isinstance(ty, TensorTy):
        return "unknown"
    if ty.shape is None:
        return "ndim" if ty.ndim >= 0 else "unknown"
    return "static" if all(isinstance(d, int) for d in ty.shape) else "symbolic"


def _first_dtype(ty) -> Optional[str]:
    if isinstance(ty, TupleTy):
        for f in ty.fields:
            d = _first_dtype(f)
            if d is not None:
                return d
        return None
    if isinstance(ty, TensorTy):
        return ty.dtype or "unknown"
    return None


def _is_op(op: str) -> bool:
    return op not in STRUCTURAL_OPS


def graph_cells(prog) -> tuple[set, set]:
    """(op x dtype x shape cells, op->op edges) of a Relax program model (ONNX cases are one);
    empty for TIR and TVMScript cases."""
    cells, edges = set(), set()
    for f in getattr(prog, "functions", None) or []:
        tys = f.value_types()
        producer: dict[str, str] = {}
        for n in f.nodes():
            if n.op == "get_item" and n.args:
                src = producer.get(n.args[0])
                if src is not None:
                    producer[n.name] = src
                continue
            if not _is_op(n.op):
                continue
            producer[n.name] = n.op
            arg_tys = [tys.get(a) for a in n.args]
            dtype = next((d for d in map(_first_dtype, arg_tys) if d is not None), None) \
                or _first_dtype(n.ty) or "none"
            kinds = [shape_kind(t) for t in arg_tys + [n.ty]
                     if isinstance(t, (TensorTy, TupleTy))] or ["static"]
            cells.add(SEP.join((n.op, dtype, max(kinds, key=_RANK.__getitem__))))
            for a in n.args:
                src = producer.get(a)
                if src is not None:
                    edges.add(f"{src}->{n.op}")
    return cells, edges


def pass_cells(prog) -> set:
    ops = set(prog.ops()) if hasattr(prog, "ops") else set()
    if not ops:
        return set()
    out = set()
    for v in prog.meta.get("variants") or []:
        passes = v.get("passes") or [f"pipeline:{v.get('pipeline', 'default')}"]
        for p in passes:
            name = p if isinstance(p, str) else json.dumps(p, sort_keys=True)
            out.update(f"{name}{SEP}{op}" for op in ops)
    return out


def _tir_blocks(prog) -> dict:
    """Block name -> shape (``SSR+init``) of a TIR case model."""
    out: dict[str, str] = {}

    def walk(stmts):
        for s in stmts or []:
            if hasattr(s, "iter_vars"):
                shape = "".join(iv.kind for iv in s.iter_vars) or "scalar"
                shape += "+init" if s.init else ""
                shape += "+where" if s.where is not None else ""
                out[s.name] = shape
                walk(s.init)
            for attr in ("body", "then", "else_"):
                sub = getattr(s, attr, None)
                if isinstance(sub, list):
                    walk(sub)

    walk(getattr(prog, "body", None))
    return out


def schedule_cells(prog, outcome) -> set:
    steps = (getattr(outcome, "extra", None) or {}).get("schedule") or []
    if not steps:
        return set()
    tir = getattr(prog, "ir", "relax") == "tir"
    blocks = _tir_blocks(prog) if tir else {}
    out = set()
    for s in steps:
        b = s.get("block")
        if isinstance(b, (list, tuple)):
            b = b[0] if b else None
        if tir:
            shape = blocks.get(b, "derived") if isinstance(b, str) else "none"
        else:
            shape = f"legalized:{re.sub(r'_?[0-9]+$', '', b)}" if isinstance(b, str) else "none"
        out.add(f"{s.get('prim', '?')}{SEP}{shape}")
    return out


def case_cells(prog, outcome=None) -> dict:
    """Every cell one case covers, by kind."""
    cells, edges = graph_cells(prog)
    extra = (getattr(outcome, "extra", None) or {}) if outcome is not None else {}
    return {"op_dtype_shape": cells, "edge": edges, "pass_op": pass_cells(prog),
            "prim_block": schedule_cells(prog, outcome) if outcome is not None else set(),
            "tvm_python": set(extra.get("tvm_python") or ())}


COVERAGE_FILE = "coverage.json"   # a campaign's cells, in its out dir


def load_coverage(out_dir) -> "Coverage":
    """A campaign's saved coverage (empty where it has none: an older campaign)."""
    from pathlib import Path

    try:
        return Coverage.from_json(json.loads((Path(out_dir) / COVERAGE_FILE).read_text()))
    except (OSError, ValueError):
        return Coverage()


def coverage_line(snap: dict) -> str:
    """``cells 812, edges 640, pass x op 2310, prim x block 41`` from a stats snapshot."""
    t = snap.get("coverage") or {}
    return ", ".join(f"{SHORT[k]} {t.get(k, 0)}" for k in KINDS
                     if k != "tvm_python" or t.get(k))


# --- counting and feedback -----------------------------------------------------------------
class Coverage:
    """Cell counts per kind (how many cases covered each cell) and, for FINDING_KINDS, the
    findings among them (``findings``: only cells with at least one). Updated from one thread;
    the generator reads the ``current`` snapshot only."""

    def __init__(self):
        self.counts = {k: collections.Counter() for k in KINDS}
        self.findings = {k: collections.Counter() for k in FINDING_KINDS}
        self.current = Guide(self.counts["op_dtype_shape"], self.counts["edge"])

    def add(self, cells: dict, failed: bool = False) -> None:
        """One case's cells; ``failed``: the case is a finding (its verdict is fail)."""
        for k, cs in cells.items():
            self.counts.setdefault(k, collections.Counter()).update(cs)
            if failed and k in self.findings:
                self.findings[k].update(cs)

    def add_case(self, prog, outcome=None) -> None:
        failed = outcome is not None and getattr(outcome, "verdict", None) == "fail"
        self.add(case_cells(prog, outcome), failed)

    def totals(self) -> dict:
        return {k: len(self.counts[k]) for k in KINDS}

    def refresh(self) -> "Guide":
        """A new snapshot for the generator (``current``), from the thread that adds: other
        threads only read ``current``, which is replaced whole."""
        self.current = Guide(self.counts["op_dtype_shape"], self.counts["edge"])
        return self.current

    def to_json(self) -> dict:
        """``{"totals": {kind: cells}, "cells": {kind: {cell: cases}}, "findings": {kind:
        {cell: findings}}}``; ``findings`` holds FINDING_KINDS' cells with a finding only (a
        cell not there has none). A file without ``findings`` (written before it) loads as
        none."""
        return {"totals": self.totals(),
                "cells": {k: dict(sorted(self.counts[k].items())) for k in KINDS},
                "findings": {k: dict(sorted((c, n) for c, n in self.findings[k].items() if n))
                             for k in FINDING_KINDS}}

    @staticmethod
    def from_json(d: dict) -> "Coverage":
        c = Coverage()
        for k, cells in (d.get("cells") or {}).items():
            if k in c.counts:
                c.counts[k].update({str(a): int(b) for a, b in cells.items()})
        for k, cells in (d.get("findings") or {}).items():
            if k in c.findings:
                c.findings[k].update({str(a): int(b) for a, b in cells.items()})
        c.refresh()
        return c


POWER = 1.0
CAP = 8.0


def _boost(n: float, mean: float) -> float:
    """How much more often something met ``n`` times is drawn, where things are met ``mean``
    times on average: ((mean + 1) / (n + 1)) ** POWER, between 1/CAP and CAP."""
    return min(CAP, max(1 / CAP, ((mean + 1.0) / (n + 1.0)) ** POWER))


UNCOVERED_EDGE = 6.0   # an op or operand that makes an edge never met: this much likelier


class Guide:
    """An immutable snapshot of coverage for the generator: op weights (per previous op) and
    dtype weights (per op)."""

    def __init__(self, cells: collections.Counter, edges: collections.Counter):
        self.op_n: collections.Counter = collections.Counter()
        self.op_dtype: collections.Counter = collections.Counter()
        for cell, n in cells.items():
            op, dtype, _ = cell.split(SEP)
            self.op_n[op] += n
            self.op_dtype[op, dtype] += n
        self.edges = collections.Counter(edges)
        self._base: dict = {}

    def _op_base(self, specs: Sequence) -> list[float]:
        key = tuple(s.name for s in specs)
        got = self._base.get(key)
        if got is None:
            mean = sum(self.op_n[s.name] for s in specs) / max(1, len(specs))
            got = [s.weight * _boost(self.op_n[s.name], mean) for s in specs]
            self._base[key] = got
        return got

    def op_weights(self, specs: Sequence, prev: Optional[str]) -> list[float]:
        base = self._op_base(specs)
        if prev is None:
            return base
        return [w * (UNCOVERED_EDGE if self.edges[f"{prev}->{s.name}"] == 0 else 1.0)
                for w, s in zip(base, specs)]

    def value_weights(self, op: str, producers: Sequence[Optional[str]]) -> list[float]:
        """Operand choice among values in scope: a value whose producer's edge to ``op`` was
        never met is UNCOVERED_EDGE times likelier (parameters and others: 1)."""
        return [UNCOVERED_EDGE if p is not None and self.edges[f"{p}->{op}"] == 0 else 1.0
                for p in producers]

    def dtype_weights(self, op: str, allowed: Iterable[str], weights: Sequence[float]
                      ) -> list[float]:
        allowed = list(allowed)
        ns = [self.op_dtype[op, d] for d in allowed]
        mean = sum(ns) / max(1, len(ns))
        return [w * _boost(n, mean) for w, n in zip(weights, ns)]
