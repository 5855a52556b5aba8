"""The TVM seam for TIR cases: parse, verify, build, run and compare.

The only module of ``fuzz.tir`` that imports TVM (lazily, so the rest works without it). It
works on TVM 0.25, 0.26 and 0.27: the text is the spelling all three parse, ``tvm.tirx.build``
and ``tvm.runtime.tensor`` exist in each, and the one API difference that matters here,
``axis_separators`` (0.25 only), is detected from ``T.match_buffer``'s signature.
"""
from __future__ import annotations

import re

from typing import Optional

import numpy as np

from .. import compat
from .model import Alloc, Block, For, If, Let, Store, TirProgram, expr_nodes, walk
from .reference import first_mismatch, make_inputs
from .render import to_tvmscript


def materialize_tir(prog: TirProgram):
    """``tvm.IRModule`` {prog.name: PrimFunc} parsed from the rendered TVMScript (the renderer
    validates the case first; it raises ``TirRenderError`` for anything unsafe)."""
    import tvm

    text = to_tvmscript(prog, axis_separators_ok=compat.has_axis_separators())
    func = tvm.script.from_source(text)
    return tvm.IRModule({prog.name: func})


def verify(mod) -> tuple[bool, str]:
    """(ok, message) from TVM's well-formedness check, naming the check that ran.

    On 0.27 ``tvm.tirx.analysis.verify_well_formed`` rejects every function with sblocks (its
    verifier does not support them), so ``tvm.s_tir.analysis.verify_well_formed``, which knows
    S-TIR blocks, is used where it exists; 0.25/0.26 have only the tirx one, which there
    accepts blocks."""
    import tvm

    fn = getattr(getattr(getattr(tvm, "s_tir", None), "analysis", None),
                 "verify_well_formed", None)
    name = "tvm.s_tir.analysis.verify_well_formed"
    if fn is None:
        fn = tvm.tirx.analysis.verify_well_formed
        name = "tvm.tirx.analysis.verify_well_formed"
    try:
        ok = bool(fn(mod, True))
    except Exception as e:  # noqa: BLE001 - assert mode raises with the reason
        return False, f"{name}: {first_line(e)}"
    return ok, name if ok else f"{name}: returned False"


def first_line(e: BaseException) -> str:
    """The line of a TVM error that says what went wrong."""
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    for pre in ("Traceback: ", "error: "):     # the parser's diagnostics
        for ln in lines:
            if ln.startswith(pre):
                return f"{type(e).__name__}: {ln[len(pre):]}"
    # Elsewhere TVM puts the reason last, after the C++ frames.
    for ln in reversed(lines):
        if not ln.startswith(("File ", "at ", "0x", "|", "-->", "^")) and \
                "Traceback" not in ln:
            return f"{type(e).__name__}: {ln}"
    return type(e).__name__


def _device(target):
    import tvm

    kind = target if isinstance(target, str) else str(target)
    kind = kind.split()[0]
    return tvm.cpu() if kind in ("llvm", "c") else tvm.device(kind)


def build(prog: TirProgram, target="llvm", mod=None):
    """``tvm.tirx.build`` of ``prog`` (or of ``mod``, its already materialized module)."""
    import tvm

    mod = materialize_tir(prog) if mod is None else mod
    return tvm.tirx.build(mod, target=target)


def build_and_run(prog: TirProgram, target="llvm", inputs=None, lib=None) -> dict:
    """Build ``prog`` for ``target``, call it on ``inputs`` (default ``make_inputs(prog,
    seed)``) by its global symbol, and return every param's contents afterwards."""
    import tvm

    if inputs is None:
        inputs = make_inputs(prog, prog.meta.get("seed") or 0)
    lib = build(prog, target) if lib is None else lib
    dev = _device(target)
    args = [tvm.runtime.tensor(np.ascontiguousarray(inputs[p.name]), device=dev)
            for p in prog.params]
    lib[prog.name](*args)
    return {p.name: a.numpy() for p, a in zip(prog.params, args)}


def compare(prog: TirProgram, got: dict, want: dict) -> Optional[str]:
    """None when TVM's results agree with the reference within ``reference.tolerance``,
    otherwise one line on the first mismatching buffer and element."""
    return first_mismatch(prog, got, want)


# --- TVM bugs the generator is known to meet --------------------------------------------------
def known_bug(prog: TirProgram, error: Optional[str] = None) -> Optional[str]:
    """The known TVM defect that explains ``prog``'s failure, if any: ``error`` is the first
    line of TVM's exception, None for a wrong result.

    Each was reproduced by hand on TVM 0.25, 0.26 and 0.27 (llvm) with a few-line PrimFunc.
    Generation keeps producing these shapes (avoiding them would hide the bugs from campaigns,
    and their neighbours too); tests and the validity bench use this to tell them from
    generator defects."""
    if error is not None:
        if "DeclBuffer" in error and any(isinstance(s, Block) and _scalar_let(s.body)
                                         for s in walk(prog.body)):
            return ("local scalar (x: T.float32 = v) inside a T.sblock: the parser's own "
                    "well-formed check says buffer x is used without a DeclBuffer")
        m = re.search(r"exceeds range of (\w+)", error)
        if "cannot make uint from negative value" in error:
            m = re.search(r"(uint)", error)   # a negative float cast to an unsigned type
        if m and any(e[0] == "cast" and str(e[1]).startswith(m.group(1)) for e in _exprs(prog)):
            return ("a cast of a constant (also a loop variable after unrolling) to a type that "
                    "cannot hold it folds to an out-of-range IntImm and aborts (bool, or e.g. "
                    "T.Cast(\"int8\", T.uint8(255)): 'Literal value 255 exceeds range of int8')")
        if "negative uint" in error and _uses_uint(prog):
            return ("unsigned comparison with a constant in an unrolled loop: the simplifier "
                    "builds 0U - cU and aborts")
        if "IntImm supp" in error and any(
                isinstance(s, For) and s.kind == "parallel" and any(
                    isinstance(x, Let) and x.dtype.startswith("float") for x in walk(s.body))
                for s in walk(prog.body)):
            return ("float Let of Cast(float32, i) * Cast(float32, j) inside a parallel loop: "
                    "CodeGenLLVM's Analyzer::Bind builds a float IntImm and aborts")
        if "not passed in as API arguments" in error and _vector_let_ite(prog):
            return ("Let bound to T.if_then_else in a vectorized loop: 0.25 leaves the loop "
                    "variable free (0.26/0.27 miscompile it instead)")
        return None
    if any(isinstance(s, For) and s.kind == "vectorized" and _scalar_let(s.body)
           for s in walk(prog.body)) or _vectorized_local_alloc(prog):
        return LOCAL_SCALAR_VECTORIZED
    if _vector_let_ite(prog):
        return ("Let bound to T.if_then_else in a vectorized loop: every lane gets the else "
                "value (0.26/0.27; e.g. x = if_then_else(i < 5, A[i], 0); B[i] = x)")
    if _floormod_pair_index(prog):
        return ("index floormod(v, c) * c + floormod(v + k, c) (v beyond c) is simplified to "
                "the wrong address, e.g. A[floormod(v, 4), floormod(v + 2, 4)] for v < 16")
    if any(e[0] == "cast" and e[1] == "bool" and not _has(e[2], "load")
           for e in _exprs(prog)):
        return ("constant folding of a cast to bool truncates: Cast(bool, 0.5) folds to False "
                "while the same cast at run time gives True")
    return None


LOCAL_SCALAR_VECTORIZED = ("local scalar (x: T.float32 = v) in a vectorized loop: every lane "
                           "reads the last lane's value")


def known_schedule_bug(prog: TirProgram, step: dict) -> Optional[str]:
    """The known defect a schedule step met in ``prog`` (the step that made a result wrong),
    or None. Vectorizing the loop of a block that allocates its own buffer (a local scalar,
    or a ``T.sblock_alloc_buffer``) is the local scalar's defect: one buffer for all lanes
    (campaign seed 90000, bucket 84bf5cfa6eea: a block-local uint8[8] written per lane, read
    back as the last lane's)."""
    if step.get("prim") != "vectorize":
        return None
    for b in walk(prog.body):
        if isinstance(b, Block) and b.name == step.get("block") and (_scalar_let(b.body) or any(
                isinstance(x, Alloc) and x.buf.how == "alloc" for x in walk(b.body))):
            return LOCAL_SCALAR_VECTORIZED
    return None


def _vectorized_local_alloc(prog: TirProgram) -> bool:
    return any(known_schedule_bug(prog, step) for step in
               (prog.meta.get("schedule") or {}).get("applied") or [])


def _scalar_let(stmts) -> bool:
    return any(isinstance(x, Let) and x.form == "scalar" for x in walk(stmts))


def _vector_let_ite(prog: TirProgram) -> bool:
    return any(isinstance(s, For) and s.kind == "vectorized" and any(
        isinstance(x, Let) and _has(x.value, "ite") for x in walk(s.body))
        for s in walk(prog.body))


def _exprs(prog: TirProgram):
    """Every expression node of ``prog``."""
    for s in walk(prog.body):
        roots = []
        if isinstance(s, Store):
            roots = list(s.indices) + [s.value]
        elif isinstance(s, If):
            roots = [s.cond]
        elif isinstance(s, Let):
            roots = [s.value]
        elif isinstance(s, Block):
            roots = [iv.binding for iv in s.iter_vars] + ([s.where] if s.where else [])
        for r in roots:
            yield from expr_nodes(r)


def _has(e, kind: str) -> bool:
    return any(x[0] == kind for x in expr_nodes(e))


def _uses_uint(prog: TirProgram) -> bool:
    return any((e[0] in ("const", "cast") and str(e[1]).startswith("uint")) for e in _exprs(prog))


def _floormod_pair_index(prog: TirProgram) -> bool:
    def key(e):     # floormod(v, c) or floormod(v + k, c) -> (v, c, k)
        if e[0] != "bin" or e[1] != "floormod" or e[3][0] != "const":
            return None
        a = e[2]
        if a[0] == "var":
            return a[1], e[3][2], 0
        if a[0] == "bin" and a[1] == "+" and a[2][0] == "var" and a[3][0] == "const":
            return a[2][1], e[3][2], a[3][2]
        return None

    def divs(e):    # (v, c) of every floordiv(v, c) inside e: the carry of an outer index
        if not isinstance(e, (tuple, list)):
            return []
        here = [(e[2][1], e[3][2])] if (e[0] == "bin" and e[1] == "floordiv" and
                                        e[2][0] == "var" and e[3][0] == "const") else []
        return here + [d for x in e[1:] for d in divs(x)]

    for e in _exprs(prog):
        if e[0] != "load":
            continue
        ks = [k for i in e[2] for k in [key(i)] if k]
        seen = {}
        for v, c, k in ks:
            if seen.get((v, c), k) != k:
                return True
            seen[(v, c)] = k
        # floormod(floordiv(v, c), m) beside floormod(v + k, c): the same address fold
        # (campaign seed 90000: p0[floormod(floordiv(i, 4), 7), floormod(i + 3, 4)] read as
        # the flat address i + 3)
        carried = {d for i in e[2] for d in divs(i)}
        if any(k and (v, c) in carried for v, c, k in ks):
            return True
    return False
