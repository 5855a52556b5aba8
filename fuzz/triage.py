"""The status of a bug: ``new``, ``known`` or ``expected``, always with a reason.

* ``known``: a TVM defect tvmfuzz already knows. Relax cases are matched against
  ``fuzz/catalogue/known_bugs.py`` (``explain``), TIR cases against ``fuzz.tir.build.known_bug``,
  schedules against ``worker.tir_schedule.KNOWN_BUGS``; a user can also record one
  (``tvmfuzz triage BUG --known URL``, kept by the corpus).
* ``expected``: a near-valid mutant (case meta ``mode: near-valid``) whose failure is what TVM
  means to do with the promise that was broken on purpose: CodeGenVM's clear refusal ("cannot
  emit this Relax operator directly. Run the appropriate lowering pass ...") of an op whose
  parameter had its dtype or shape erased, and the verifier rejecting a module that the build
  then accepts ("ill-formed module builds and runs": no TVM API promises that building re-checks
  what ``well_formed`` rejects, shared/bug-classes.md class 1). A user's ``--not-a-bug REASON``
  is recorded as expected too.
* ``new``: everything else, which is what a person should look at.

A bug (``worker.signature.bug_id``) groups buckets; it is new when any of its buckets is, so a
status never hides a finding that nothing explains. This module imports nothing from TVM.
"""
from __future__ import annotations

import re

from typing import TYPE_CHECKING, Iterable, Optional

from .signature import CODEGEN_REFUSAL, bug_key, outcome_fields, target_kind

if TYPE_CHECKING:
    from .outcome import Outcome

NEW, KNOWN, EXPECTED = "new", "known", "expected"
STATUSES = (NEW, KNOWN, EXPECTED)
ORDER = {s: i for i, s in enumerate(STATUSES)}   # new first
ILL_FORMED_BUILDS = "ill-formed module builds and runs"


# --- what a near-valid mutant broke --------------------------------------------------------
def _ty(t) -> str:
    from fuzz.model import TensorTy

    if t is None:
        return "?"
    if not isinstance(t, TensorTy):
        return "R.Tuple(" + ", ".join(_ty(f) for f in t.fields) + ")"
    args = []
    if t.shape is not None:
        args.append("(" + ", ".join(str(d) for d in t.shape) + ("," if len(t.shape) == 1 else "")
                    + ")")
    elif t.ndim >= 0:
        args.append(f"ndim={t.ndim}")
    if t.dtype:
        args.append(f'"{t.dtype}"' if t.shape is not None else f'dtype="{t.dtype}"')
    return f"R.Tensor({', '.join(args)})"


def _erased(p) -> str:
    from fuzz.model import TensorTy

    t = p.ty
    if not isinstance(t, TensorTy):
        return ""
    what = []
    if t.shape is None:
        what.append("shape" if t.ndim >= 0 else "shape and rank")
    if not t.dtype:
        what.append("dtype")
    return " and ".join(what)


def is_near_valid(prog) -> bool:
    meta = getattr(prog, "meta", None) or {}
    return meta.get("mode") == "near-valid" or bool(meta.get("mutations")) \
        or bool(meta.get("invalid"))


def mutations(prog) -> list[str]:
    """What a near-valid case broke on purpose, one line per mutation (empty for a valid
    case). Read from the case: ``meta["mutations"]`` names them (fuzz/mutate.py), the program
    shows where (erased parameter types, disagreeing annotations); TIR mutants say it in
    ``meta["invalid"]``."""
    if not is_near_valid(prog):
        return []
    meta = prog.meta
    if getattr(prog, "ir", "relax") == "tir":
        return [f"malformed layout: {meta['invalid']}"] if meta.get("invalid") else []
    out = []
    for name in dict.fromkeys(meta.get("mutations") or []):
        if name == "erase_param":
            for f in prog.functions:
                direct = {a for n in f.nodes() if n.op != "match_cast" for a in n.args}
                for p in f.params:
                    what = _erased(p)
                    if p.actual is not None and what and p.name in direct:
                        out.append(f"erase_param: parameter {p.name} of {f.name} annotated "
                                   f"{_ty(p.ty)} ({what} erased; called with "
                                   f"{_ty(p.actual)}) and used without match_cast")
        elif name == "wrong_annotation":
            for f in prog.functions:
                for n in f.nodes():
                    if n.annot is not None and n.annot != n.ty:
                        out.append(f"wrong_annotation: {n.name} = {n.op}(...) annotated "
                                   f"{_ty(n.annot)}, inferred {_ty(n.ty)}")
        elif name == "wrong_ret":
            for f in prog.functions:
                if f.ret_annot is not None:
                    out.append(f"wrong_ret: {f.name} (holding an R.If) declared to return "
                               f"{_ty(f.ret_annot)}, its body gives "
                               f"{_ty(f.value_types().get(f.ret))}")
        elif name == "edge_attrs":
            out.append("edge_attrs: an op's attributes set at the edge of legality")
        else:
            out.append(name)
    return out or ["near-valid mutant (mutation not recorded)"]


# --- known TVM bugs ------------------------------------------------------------------------
def _subsequence(want: list, have: list) -> bool:
    it = iter(have)
    return all(any(w == h for h in it) for w in want)


def _culprit(extra: dict, steps: list) -> Optional[dict]:
    """The step a finding blames: the one that raised, else the step a binary search found
    made the result wrong (``guilty_step``), else the last one applied."""
    for key in ("failing_step", "guilty_step"):
        if isinstance(extra.get(key), dict):
            return extra[key]
    return steps[-1] if steps else None


def _crash_matches(bug: dict, kind: str, message: str) -> bool:
    """A crash entry (``expect`` "crash: <message>") and a crash with that message."""
    expect = bug["expect"]
    return expect.startswith("crash: ") and kind not in ("numeric", "signal") and \
        expect[len("crash: "):] in message


def schedule_known_bug(outcome: Outcome | dict) -> Optional[dict]:
    """The ``worker.tir_schedule.KNOWN_BUGS`` entry a finding of a scheduled case matches.

    A crash is the entry's when the primitive that raised is the entry's last one and the
    message is the entry's: the check that fails and the primitive that fails it name the
    defect, whatever steps came before (they only built the IR it needs). Where the entry
    names the check's source file (``site``), the same check thrown there is the entry's
    whoever called it (DLight's rfactor, reverse_compute_at sharing compute_at's code). A wrong result, a
    signal or memory damage is the entry's when the step it blames (``_culprit``) is the
    entry's last primitive and the entry's earlier primitives were applied before it, in
    order, to the same PrimFunc (a Relax module holds several: a step on another function
    says nothing about this one)."""
    outcome = outcome_fields(outcome)
    from .tir.schedule_bugs import KNOWN_BUGS

    extra = outcome.get("extra") or {}
    kind, message = outcome.get("kind", ""), outcome.get("message", "") or ""
    site = (outcome.get("throw_site") or "").rsplit(":", 1)[0]
    if site:
        for bug in KNOWN_BUGS:
            if bug.get("site") == site and _crash_matches(bug, kind, message):
                return bug
    steps = [s for s in (extra.get("schedule") or []) if isinstance(s, dict)]
    culprit = _culprit(extra, steps)
    if not isinstance(culprit, dict) or not culprit.get("prim"):
        return None
    if culprit in steps:
        upto = steps[:len(steps) - steps[::-1].index(culprit)]
    else:
        upto = steps + [culprit]
    same = [s.get("prim") for s in upto if s.get("func") == culprit.get("func")]
    for bug in KNOWN_BUGS:
        want = [s["prim"] for s in bug["steps"]]
        if culprit["prim"] != want[-1]:
            continue
        expect = bug["expect"]
        if expect.startswith("crash: "):
            if _crash_matches(bug, kind, message):
                return bug
            continue
        if not _subsequence(want, same):
            continue
        if expect == "mismatch" and kind == "numeric":
            return bug
        if expect == "signal" and kind == "signal":
            return bug
        if expect == "memory" and (kind in ("numeric", "signal")
                                   or outcome.get("stage") == "run"):
            return bug
    return None


def _op_reason(prog, outcome: dict) -> Optional[str]:
    """The known defect of an op (Relax) or of a TIR construct that explains a finding."""
    kind = outcome.get("kind", "")
    if getattr(prog, "ir", "relax") == "tir":
        from fuzz.tir.build import known_bug

        why = known_bug(prog, None) if kind == "numeric" else \
            known_bug(prog, outcome.get("message", "") or "") if outcome.get("message") else None
        return f"fuzz/tir/build.known_bug: {why}" if why else None
    why = _call_tir_reason(prog, outcome)
    if why:
        return why
    from fuzz.catalogue.known_bugs import explain

    try:
        bug = explain(prog, outcome)
    except Exception:  # noqa: BLE001 - a malformed case is simply not explained
        bug = None
    return f"fuzz/catalogue/known_bugs.py ({', '.join(bug.ops)}): {bug.note}" if bug else None


def _call_tir_reason(prog, outcome: dict) -> Optional[str]:
    """A known defect of TIR construct in a PrimFunc a Relax program calls (``call_tir``):
    a failure whose message it explains, or a wrong result the numeric key puts on a
    ``call_tir``."""
    from fuzz.tir.build import known_bug

    try:
        nodes = [n for f in prog.functions for n in f.nodes() if n.op == "call_tir"]
        if not nodes:
            return None
        from fuzz.calltir import prim_of

        numeric = outcome.get("kind") == "numeric"
        if numeric and "call_tir:" not in (outcome.get("signature") or ""):
            return None
        msg = outcome.get("message") or ""
        for n in nodes:
            why = known_bug(prim_of(n), None) if numeric else \
                known_bug(prim_of(n), msg) if msg else None
            if why:
                return f"fuzz/tir/build.known_bug ({n.name}'s PrimFunc): {why}"
    except Exception:  # noqa: BLE001 - a malformed case is simply not explained
        return None
    return None


def known_reason(prog, outcome: Outcome | dict) -> Optional[str]:
    """Why a finding is a known TVM bug, or None. A wrong result a schedule step made (a
    guilty step was found: the unscheduled build is right) is no op's known defect, whatever
    ops the program holds: only a schedule entry may explain it."""
    outcome = outcome_fields(outcome)
    scheduled = outcome.get("kind") == "numeric" and isinstance(
        (outcome.get("extra") or {}).get("guilty_step"), dict)
    why = None if scheduled else _op_reason(prog, outcome)
    if scheduled:
        from fuzz.tir.build import LOCAL_SCALAR_VECTORIZED, known_schedule_bug

        step = outcome["extra"]["guilty_step"]
        if getattr(prog, "ir", "relax") == "tir":
            why = known_schedule_bug(prog, step)
        elif step.get("prim") == "vectorize" and step.get("vectorized_alloc"):
            # A Relax module's scheduled PrimFuncs: the judge read the vectorized loop there
            why = LOCAL_SCALAR_VECTORIZED
        why = f"fuzz/tir/build.known_bug: {why}" if why else None
    if why:
        return why
    bug = schedule_known_bug(outcome)
    return f"worker/tir_schedule.KNOWN_BUGS[{bug['id']}]: {bug['note']}" if bug else None


# --- expected refusals of near-valid mutants -----------------------------------------------
# A target's stated limits: a compile-only GPU variant asked for what the target has not.
# (target kind, what its refusal says (a regex on the message and throw site), why)
_WGSL = ("WebGPU's shading language (WGSL) has no 64-bit integer or float types (nor 8-bit "
         "ones), and TVM's WebGPU codegen and its int32 index narrowing refuse them: the "
         "target's limit, not a bug")
_TARGET_LIMITS = (
    ("webgpu", r"CodeGenWebGPU: (?:do not|only) support", _WGSL),
    ("webgpu", r"force_narrow_index_to_i32|exceeds range of int32", _WGSL),
)
# The ONNX importer's stated refusals, each with a clear message before any wrong import (the
# message, why): what it cannot know at import time (a symbolic dim it would have to prove 1,
# or broadcast against a constant; under keep_params_in_input an initializer that decides a
# shape is a graph input), and forms its converters name as unsupported.
_AT_IMPORT = ("the ONNX importer's stated limit: it refuses, with a clear message, what it "
              "cannot resolve at import time (a symbolic dim; with keep_params_in_input, an "
              "initializer that decides a shape is a graph input); onnxruntime resolves it at "
              "run time; not a wrong import")
_IMPORT_LIMITS = (
    (re.compile(r"cannot be proven to be \d+ at import time|"
                r"Cannot broadcast symbolic dimension .* unknown at compile time|"
                r"^Dynamic Split not yet supported|"
                r"^Only constant indices supported for shape gather"), _AT_IMPORT),
    (re.compile(r"^Unsupported PRelu slope shape"),
     "the ONNX importer's stated gap: its PRelu converter names the slope shapes it does not "
     "broadcast (a converter to extend, not a wrong import)"),
)


# from_exported_program's refusals of what it has no converter for, each said before a wrong
# import can happen (the message, why):
_TORCH_UNSUPPORTED = (
    # ATen ops it has no converter for (amin.default, sort.stable, ...)
    (re.compile(r"^Unsupported function types \["),
     "the PyTorch importer's stated gap: it has no converter for these ATen ops and says so "
     "before importing anything (a converter to add, not a wrong import)"),
    # convolution.default with transposed=True converts 1-D and 2-D only (Relax has
    # conv3d_transpose; 3 and 4 dims are handled, so a refusal of those is a bug)
    (re.compile(r"^Unsupported transposed convolution dimensionality: 5$"),
     "the PyTorch importer's stated gap: its convolution converter handles 1-D and 2-D "
     "transposed convolutions only and refuses a 3-D one by name (a converter to add, not a "
     "wrong import)"),
)


def target_limit(outcome: dict) -> Optional[str]:
    """Why a failure is a target's stated limit (a program using what the target lacks), or
    an importer's stated refusal (``_IMPORT_LIMITS``, ``_TORCH_UNSUPPORTED``)."""
    text = f"{outcome.get('message') or ''} @ {outcome.get('throw_site') or ''}"
    for says, why in (_TORCH_UNSUPPORTED + _IMPORT_LIMITS
                      if outcome.get("stage") == "import" else ()):
        if says.search(outcome.get("message") or ""):
            return why
    built_for = target_kind(outcome)
    for kind, says, why in _TARGET_LIMITS:
        if built_for == kind and re.search(says, text):
            return why
    return None


def expected_reason(prog, outcome: Outcome | dict) -> Optional[str]:
    """Why a failure is TVM's intended answer (a near-valid mutant's refusal, a target's
    stated limit), or None."""
    outcome = outcome_fields(outcome)
    kind, stage = outcome.get("kind"), outcome.get("stage")
    limit = target_limit(outcome) if kind in ("crash", "verifier_build") else None
    if limit:
        return limit
    if not is_near_valid(prog) or not (kind == "verifier_build" or
                                       (kind == "crash" and stage == "materialize")):
        return None   # (a mutant's op refused while the module is being constructed: crash)
    broke = "; ".join(mutations(prog))
    message = outcome.get("message", "") or ""
    if outcome.get("stage") == "well_formed" and message.startswith(ILL_FORMED_BUILDS):
        return (f"near-valid mutant ({broke}): well_formed rejects it and the build accepts "
                "it; no TVM API promises that building re-checks what well_formed rejects "
                "(bug class 1: a bug only if the result is then wrong)")
    erased = getattr(prog, "ir", "relax") != "tir" and any(
        _erased(p) and p.actual is not None for f in prog.functions for p in f.params)
    if CODEGEN_REFUSAL in message and "Run the appropriate lowering pass" in message and erased:
        return (f"near-valid mutant ({broke}): with a dtype or shape erased on purpose no pass "
                "lowers the op, and TVM refuses it with its documented CodeGenVM message "
                "(bug class 3: one behaviour, whatever the op)")
    shape_erased = getattr(prog, "ir", "relax") != "tir" and any(
        "shape" in _erased(p) and p.actual is not None for f in prog.functions
        for p in f.params)
    for refusal, who in UNKNOWN_SHAPE_REFUSALS:
        if refusal in message and shape_erased:
            return (f"near-valid mutant ({broke}): with a shape erased on purpose, {who} "
                    f"refuses the tensor of unknown shape with a stated error (\"{refusal}\")")
    annotated = getattr(prog, "ir", "relax") != "tir" and any(
        n.annot is not None and n.annot != n.ty for f in prog.functions for n in f.nodes())
    if annotated and MATCH_CAST_REFUSAL in message and stage == "materialize":
        return (f"near-valid mutant ({broke}): a value annotated with a type that contradicts "
                "the match_cast it feeds (a cast to fresh dims of its true shape); the "
                "BlockBuilder refuses the cast with its stated error")
    return None


MATCH_CAST_REFUSAL = "It is impossible to match cast"


# Lowering code that states it cannot handle a tensor whose shape is unknown (a Python
# ValueError in TVM's own sources, not an internal check): a mutant's intended end when it
# erased that shape, a bug when a valid program gets there.
UNKNOWN_SHAPE_REFUSALS = (
    ("emit_te now only supports Tensor that has ShapeExpr shape",
     "BlockBuilder.emit_te (tvm/relax/utils.py, used by LegalizeOps and DispatchSortScan)"),
    ("non-symbolic shape is not supported for now",
     "DispatchSortScan (tvm/relax/backend/dispatch_sort_scan.py)"),
    ("The ndim is required to be known for this function",
     "the op's type inference (src/relax/op/op_common.cc, needing the rank)"),
    ("expects the input tensor to have known shape",
     "reshape's type inference (src/relax/op/tensor/manipulate.cc, needing the shape to infer "
     "a -1)"),
)


def auto_status(prog, outcome: Outcome | dict) -> tuple[str, str]:
    """(status, reason) of one finding from the case and its outcome alone. An expected
    refusal is checked first: some known-bug entries match any error of a program using their
    op, and a mutant's intended refusal is not that bug."""
    outcome = outcome_fields(outcome)
    why = expected_reason(prog, outcome)
    if why:
        return EXPECTED, why
    why = known_reason(prog, outcome)
    if why:
        return KNOWN, why
    broke = mutations(prog)
    return NEW, "matches no known TVM bug" + (
        f"; near-valid mutant ({'; '.join(broke)}), and the failure is not TVM's intended "
        "refusal" if broke else "")


def malformation(prog) -> str:
    """The kind of promise a TIR mutant broke (``meta["invalid"]`` without the buffer's name
    and the numbers: "negative elem_offset", "stride smaller than the inner extent"), or ""."""
    import re

    why = ((getattr(prog, "meta", None) or {}).get("invalid") or "") \
        if getattr(prog, "ir", "relax") == "tir" else ""
    why = re.sub(r"^\w+: ", "", why)
    why = re.sub(r"=?\[[^\]]*\]|(?<![\w-])-?\d+(?![\w-])", "", why)
    return re.sub(r"\s+", " ", why).strip()


def root_key(prog, outcome: Outcome | dict) -> str:
    """The key of the bug a finding belongs to. A finding a known-bug entry explains belongs to
    that entry's bug, whatever symptom or output op it shows (one known root cause met as a
    crash of one op and a shape mismatch or wrong result of another is one bug, not one per
    symptom). A malformed TIR buffer that TVM accepts and that then fails a later pass's check
    or damages memory at run time is one bug per kind of malformation: the missing validation
    at construction (bug class 4), whichever pass or run meets it. Every other finding belongs
    to ``bug_key(outcome)``."""
    outcome = outcome_fields(outcome)
    status, why = auto_status(prog, outcome)
    if status == KNOWN:
        return f"known | {why}"
    broke = malformation(prog)
    if broke and outcome.get("kind") in ("late_validation", "signal"):
        return f"unvalidated layout | {broke}"
    return bug_key(outcome)


def user_status(verdict: Optional[dict]) -> Optional[tuple[str, str]]:
    """(status, reason) of a verdict recorded with ``tvmfuzz triage`` ({"verdict": "known" |
    "not-a-bug", "note": URL or reason}), or None."""
    if not verdict:
        return None
    if verdict.get("verdict") == "known":
        return KNOWN, f"recorded by a user: {verdict.get('note', '')}"
    return EXPECTED, f"not a bug (recorded by a user): {verdict.get('note', '')}"


def combine(statuses: Iterable[tuple[str, str]],
            verdict: Optional[dict] = None) -> tuple[str, str]:
    """The status of a bug from its buckets' statuses: a user's verdict wins; otherwise new
    when any bucket is new, then known, then expected (the first such bucket's reason)."""
    user = user_status(verdict)
    if user:
        return user
    statuses = list(statuses)
    for status in STATUSES:
        for s, why in statuses:
            if s == status:
                return s, why
    return NEW, "no finding"


def rules_fingerprint() -> str:
    """A hash of everything that decides a finding's bug and status (the bug-key rules, the
    known-bug entries, the expected refusals): a corpus whose bugs were keyed under other rules
    is rekeyed when it is opened, so an entry added to known_bugs.py merges the buckets it
    explains at once instead of leaving them under their old bugs."""
    import hashlib
    from pathlib import Path

    here = Path(__file__).resolve().parent
    h = hashlib.sha1()
    for rel in ("signature.py", "triage.py", "catalogue/known_bugs.py", "tir/schedule_bugs.py",
                "tir/build.py"):
        try:
            h.update((here / rel).read_bytes())
        except OSError:
            h.update(rel.encode())
    return h.hexdigest()[:16]
