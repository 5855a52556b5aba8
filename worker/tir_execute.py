"""Compile and run one generated TIR PrimFunc (fuzz/tir) in this process, stage by stage.

The TIR counterpart of worker/execute.compile_and_run, with the same Outcome and verdicts.
Stages: render (model -> TVMScript text), parse, verify, schedule (random s_tir primitives,
worker/tir_schedule.py), build (``tvm.tirx.build``, optionally after a random TIR pass order,
worker/tir_passes.py), run, reference, compare, roundtrip.

Near-valid programs carry ``meta["invalid"]`` (why the program is malformed, e.g. a 1-D buffer
with ``axis_separators=[1]``). Refused at parse or by the verifier is the right answer
("rejected"); accepted there and refused by a later pass is a finding of its own kind,
``late_validation``, naming that pass (bug class 4 of the project's notes).
"""
from __future__ import annotations

import random
import re
import time
from typing import Optional

from . import breadcrumb
from .execute import Outcome, _fail, first_message_line, pass_watch
from .uninit import FIRST_PAINT, painter, painter_or_none, reads_uninitialized
from .variants import Variant, tvm_target

TIR_STAGES = ("render", "parse", "verify", "schedule", "passes", "build", "run", "reference",
              "compare", "roundtrip")


def tir_base_variant() -> Variant:
    return Variant({"kind": "llvm"}, "tir")


def run_tir_case(prog, variants: Optional[list] = None, input_seed: int = 0,
                 roundtrip: bool = True) -> Outcome:
    from fuzz.tir import build as TB
    from fuzz.tir import reference as TR
    from fuzz.tir.render import TirRenderError

    variants = [Variant.from_json(v) if isinstance(v, dict) else v
                for v in (variants or [tir_base_variant()])]
    t0 = time.perf_counter()
    invalid_reason = prog.meta.get("invalid")
    extra: dict = {}

    def done(o: Outcome, v: Variant = variants[0]) -> Outcome:
        o.seconds = time.perf_counter() - t0
        o.target = v.label()
        o.extra.setdefault("variant", v.to_json())
        for k, val in extra.items():
            o.extra.setdefault(k, val)
        return o

    breadcrumb.mark(stage="parse")
    try:
        mod = TB.materialize_tir(prog)
    except TirRenderError as e:
        return done(_fail("render", e, "generator", "invalid"))
    except Exception as e:  # noqa: BLE001
        if invalid_reason:
            # Refused at construction: the malformed buffer was caught where it should be.
            return done(_fail("parse", e, kind="rejected", verdict="rejected"))
        if TB.known_bug(prog, TB.first_line(e)):
            # TVM's parser refusing what it prints itself (fuzz/tir/build.known_bug): a bug,
            # named by the parser's "Traceback:" line (its first line is generic).
            o = _fail("parse", e)
            o.message = TB.first_line(e)
            return done(o)
        return done(_fail("parse", e, "generator", "invalid"))
    breadcrumb.mark(stage="verify")
    try:
        ok, why = TB.verify(mod)
    except Exception as e:  # noqa: BLE001
        return done(_fail("verify", e))
    if not ok and invalid_reason:
        return done(Outcome("rejected", "rejected", "verify", "", why or "verifier refuses"))
    if not ok:
        # A valid-by-construction function refused by the verifier; it is a finding only if
        # the build then accepts and runs it (checked below, as for Relax).
        extra["verifier"] = why

    unscheduled = mod
    sched = prog.meta.get("schedule")
    if sched:
        breadcrumb.mark(stage="schedule")
        try:
            mod = _schedule(mod, sched, extra)
        except _Refused as e:
            return done(Outcome("invalid", "generator", "schedule", "StepRefused", str(e)))
        except Exception as e:  # noqa: BLE001
            from .schedule_steps import failed_step

            step, before = failed_step(e)
            if step is not None:   # the crashing step is kept, so a replay crashes the same way
                extra["schedule"] = before + [step]
            return done(_fail("schedule", e, extra={"failing_step": step}))

    try:
        inputs = TR.make_inputs(prog, input_seed)
    except Exception as e:  # noqa: BLE001
        return done(_fail("reference", e, "generator", "invalid"))
    expected = None
    first: Optional[tuple] = None
    for v in variants:
        if v.pipeline == "call_tir":
            outs = call_tir_outputs(prog, inputs, expected)
            if outs is None:
                continue   # not in destination-passing style: call_tir cannot express it
        watch = pass_watch(False)
        breadcrumb.mark(stage="build", variant=v.to_json(), step=None)
        try:
            built = (_build_call_tir(mod, prog, outs, v, watch) if v.pipeline == "call_tir"
                     else _build(mod, v, watch, extra))
        except _Noise as e:
            return done(Outcome("rejected", "phase_ordering", "passes", "", str(e)), v)
        except Exception as e:  # noqa: BLE001
            from .schedule_noise import is_schedule_noise

            if sched and is_schedule_noise(str(e)):
                # A lowering precondition no primitive checks (nested parallel loops).
                return done(_fail("build", e, kind="schedule_noise", verdict="rejected"), v)
            if invalid_reason and ok:
                if not _fails_anyway(prog, v, e, sched, extra):
                    return done(_fail("build", e, kind="late_validation",
                                      extra={"failing_pass": watch.current or "codegen",
                                             "invalid": invalid_reason}), v)
                # The program fails the same way with the buffer's layout put back: its own
                # crash (below), not the malformation's (a vectorized if_then_else's codegen
                # check was filed under a stride mutation that did not touch it).
                extra["malformation_not_needed"] = invalid_reason
            elif not ok:
                return done(_fail("build", e, kind="rejected", verdict="rejected"), v)
            return done(_fail("build", e, extra={"failing_pass": watch.current or ""}), v)
        if not v.runnable_here:
            continue
        breadcrumb.mark(stage="run", **{"pass": None})
        try:
            got = (_run_call_tir(built, prog, inputs, outs) if v.pipeline == "call_tir"
                   else _run(built, prog, inputs))
        except Exception as e:  # noqa: BLE001
            if invalid_reason:
                # The generated argument checks refused the malformed layout: caught in time.
                return done(_fail("run", e, kind="rejected", verdict="rejected"), v)
            return done(_fail("run", e), v)
        if not ok:
            return done(Outcome("fail", "verifier_build", "verify", "",
                                "verifier-rejected PrimFunc builds and runs", "", extra["verifier"]),
                        v)
        if invalid_reason:
            continue   # malformed on purpose: there is no reference to compare with
        if expected is None:
            try:
                expected = TR.run(prog, {k: a.copy() for k, a in inputs.items()})
            except Exception as e:  # noqa: BLE001
                return done(_fail("reference", e, "generator", "invalid"))
        exact = _exact(prog, extra)
        diff = TB.compare(prog, got, expected) if exact else None
        if diff:
            if extra.get("schedule") and v.pipeline != "call_tir":
                extra["guilty_step"] = _guilty_step(unscheduled, prog, v, inputs, expected,
                                                    extra["schedule"])
            key = _numeric_key(prog, diff, v, extra)
            # Recorded beside the finding, never in its signature: the check can miss (TVM's
            # workspace pool reuses memory between runs). call_tir reruns through the VM.
            uninit = reads_uninitialized(
                (lambda: _run_call_tir(built, prog, inputs, outs)) if v.pipeline == "call_tir"
                else (lambda: _run(built, prog, inputs)), got,
                None if v.pipeline == "call_tir" else
                (lambda value: _run(built, prog, inputs, paint=value)))
            return done(Outcome("fail", "numeric", "compare", "", diff.split(";")[0], "", diff,
                                extra={"numeric_key": key, "reads_uninitialized": uninit}), v)
        if first is not None and exact:
            diff = TB.compare(prog, got, first[1])
            if diff:
                return done(Outcome("fail", "numeric", "compare", "",
                                    f"differs from {first[0].label()}: " + diff.split(";")[0],
                                    "", diff, extra={"versus": first[0].to_json(),
                                                     "numeric_key": _numeric_key(
                                                         prog, diff, v, extra, "vs variant")}),
                            v)
        else:
            first = (v, got)
    if roundtrip and ok and not invalid_reason:
        breadcrumb.mark(stage="roundtrip", variant=None)
        rt = _roundtrip(mod)
        if rt:
            return done(Outcome("fail", "roundtrip", "roundtrip", rt[0], rt[1], "", rt[2]))
    return done(Outcome("pass"))


def _guilty_step(mod, prog, v: Variant, inputs: dict, expected: dict, steps: list):
    """The schedule step that makes the result wrong: the shortest prefix of ``steps`` whose
    build already disagrees with the reference (binary search, a few builds; a wrong result
    is named by the primitive that causes it, not the last one applied). None when no prefix
    shorter than the whole disagrees on its own (then the whole schedule is needed)."""
    from fuzz.tir import build as TB

    from . import tir_schedule as TS

    def wrong(k: int) -> bool:
        try:
            built = _build(TS.apply_schedule(mod, steps[:k]), v, pass_watch(False), {})
            return bool(TB.compare(prog, _run(built, prog, inputs), expected))
        except Exception:  # noqa: BLE001 - a prefix that does not build or apply says nothing
            return False

    # all the steps are wrong: that is the finding (the build applied exactly these)
    return TS.guilty_step(steps, wrong, check_end=False)


def _exact(prog, extra: dict) -> bool:
    """Are results after the schedule compared? Not when a step changes numerics by design,
    nor when the function writes memory that a view (``T.decl_buffer`` over a parameter's
    data) shares with its base: s_tir's dependence analysis treats each buffer as its own
    memory, so a schedule that moves a read of the base past a write through the view (or the
    reverse) is outside what the primitives promise. Views only read are no such case."""
    from fuzz.tir.model import Store, walk

    from .schedule_steps import is_exact

    steps = extra.get("schedule") or []
    if steps:
        written = {s.buf for s in walk(prog.body) if isinstance(s, Store)}
        for b in prog.allocs():
            if b.how == "view" and ({b.name, b.base} & written):
                return False
    return is_exact(steps)


def _numeric_key(prog, diff: str, v: Variant, extra: dict, versus: str = "") -> str:
    """What names a TIR wrong result in its signature (the values do not): the dtype of the
    buffer that differs, the last schedule primitive applied, a random TIR pass order."""
    name = diff.split("[", 1)[0].split(":", 1)[0].strip()
    dtype = next((b.dtype for b in list(prog.params) + prog.allocs() if b.name == name), "")
    parts = ["tir", dtype]
    steps = extra.get("schedule") or []
    # The step that made it wrong (None: the unscheduled build is already wrong); cases judged
    # before that search existed name their last step.
    guilty = extra["guilty_step"] if "guilty_step" in extra else (steps[-1] if steps else None)
    if guilty:
        parts.append(f"after {guilty.get('prim')}")
    if v.passes:
        parts.append("after a TIR pass order")
    if versus:
        parts.append(versus)
    return " ".join(p for p in parts if p)


class _Refused(Exception):
    pass


class _Noise(Exception):
    """A random TIR pass order broke a pass's precondition: phase-ordering noise, not a bug."""


def _schedule(mod, sched: dict, extra: dict):
    """``{"seed": S, "steps": N}`` draws a random schedule (the steps applied are recorded in
    ``extra["schedule"]`` so a finding can be replayed exactly); ``{"applied": [...]}``
    replays recorded steps."""
    from . import tir_schedule as TS

    if "applied" in sched:
        extra["schedule"] = list(sched["applied"])
        try:
            return TS.apply_schedule(mod, sched["applied"])
        except TS.StepRefused as e:
            raise _Refused(f"recorded schedule step no longer applies: {e}")
    new, applied = draw_schedule(mod, sched)
    extra["schedule"] = applied
    return new


def draw_schedule(mod, sched: dict):
    """(scheduled module, steps applied) for a case's ``{"seed": S, "steps": N}``: the one
    draw of a seed, for the judge and for the reducer's pin (worker/jobs.py ``tir_draw``)."""
    from . import tir_schedule as TS

    return TS.random_schedule(mod, random.Random(int(sched.get("seed", 0))),
                              steps=int(sched.get("steps", 6)))


def _fails_anyway(prog, v: Variant, e: BaseException, sched, extra: dict) -> bool:
    """Does the near-valid mutant's build failure ``e`` also happen with the malformed
    buffer's layout put back (``fuzz.tir.generate.repaired``), or with that buffer gone (a
    reduction removed it)? One more build, only for such a failure. False where it cannot
    be told (no record, the repaired program does not build to the same end)."""
    from fuzz.tir import build as TB
    from fuzz.tir.generate import repaired

    fixed = repaired(prog)
    if fixed is None or v.pipeline == "call_tir":
        return False
    if fixed == "absent":
        return True
    try:
        mod = TB.materialize_tir(fixed)
        if sched:
            mod = _schedule(mod, sched, dict(extra))
        _build(mod, v, pass_watch(False), dict(extra))
    except Exception as again:  # noqa: BLE001
        return type(again) is type(e) and first_message_line(str(again)) == \
            first_message_line(str(e))
    return False


def _build(mod, v: Variant, watch, extra: dict):
    import tvm

    from . import tir_passes as TP

    target = tvm_target(v)
    with tvm.transform.PassContext(opt_level=int(v.target.get("opt-level", 3)),
                                   instruments=[watch]):
        if not v.passes:
            return tvm.tirx.build(mod, target=target)
        names, missing = TP.available(TP.full_order(v.passes))
        if missing:   # orders come from 0.27's pipeline; an older release lacks some
            extra["passes_missing"] = missing
        try:
            mod = TP.apply_passes(mod, names, target)
            return TP.finish_build(mod, target)
        except Exception as e:  # noqa: BLE001
            if TP.is_phase_ordering_noise(str(e), order=names):
                raise _Noise(str(e).strip().splitlines()[0][:300])
            raise


def call_tir_outputs(prog, inputs: dict, expected: Optional[dict] = None) -> Optional[list]:
    """The output parameters when ``prog`` can be called through ``R.call_tir``: its outputs
    are its last parameters, it never writes an input, and it writes every element of its
    outputs before reading it (call_tir hands it fresh, uninitialized tensors). Checked on the
    numpy interpreter with the outputs' contents undefined (``reference.run``'s ``unset``),
    the check ``fuzz.calltir.dps_ok`` makes of a Relax program's called PrimFuncs; comparing
    runs from other initial contents missed a function that divides by its output's old
    value and then overwrites it. ``expected``: the reference's result on ``inputs`` when
    already computed. None when it cannot."""
    from fuzz.tir import reference as TR

    outs = list(prog.meta.get("outputs") or [])
    names = [p.name for p in prog.params]
    if not outs or names[len(names) - len(outs):] != outs or prog.meta.get("invalid"):
        return None
    if any(p.how == "match_buffer" and p.elem_offset not in (None, "sym") or
           p.strides not in (None, "sym") for p in prog.params):
        return None   # call_tir allocates compact, unoffset tensors
    try:
        first = expected if expected is not None else TR.run(
            prog, {k: a.copy() for k, a in inputs.items()})
        for k, a in inputs.items():
            if k not in outs and not _same(first[k], a):
                return None   # writes an input
        TR.run(prog, {k: a.copy() for k, a in inputs.items()}, frozenset(outs))
    except Exception:  # noqa: BLE001 - ReferenceError: reads an output before writing it
        return None
    return outs


def _same(a, b) -> bool:
    import numpy as np

    return a.shape == b.shape and bool(np.array_equal(a, b, equal_nan=True))


def call_tir_module(func, name, ins, outs):
    """A Relax module whose ``main`` calls the PrimFunc ``func`` through ``R.call_tir``:
    ``ins`` and ``outs`` are ``[name, shape, dtype]`` of its input and output parameters.
    Uses nothing but TVM (reducer/tir_repro.py writes this source into repro.py as it is) and
    spells both releases' Relax types (0.25's struct info, 0.26+'s types)."""
    import inspect

    from tvm import relax

    ty = relax.TensorStructInfo if hasattr(relax, "TensorStructInfo") else relax.TensorType
    out_kw = "out_ty" if "out_ty" in inspect.signature(relax.op.call_tir).parameters \
        else "out_sinfo"
    bb = relax.BlockBuilder()
    gv = bb.add_func(func.without_attr("global_symbol"), name)
    params = [relax.Var(n, ty([int(d) for d in shape], dtype)) for n, shape, dtype in ins]
    out_tys = [ty([int(d) for d in shape], dtype) for _, shape, dtype in outs]
    with bb.function("main", params):
        with bb.dataflow():
            res = bb.emit(relax.op.call_tir(
                gv, params, **{out_kw: out_tys if len(outs) > 1 else out_tys[0]}))
            res = bb.emit_output(res)
        bb.emit_func_output(res)
    return bb.get()


def _call_tir_params(prog, outs: list) -> tuple[list, list]:
    ins = [[p.name, list(p.shape), p.dtype] for p in prog.params if p.name not in outs]
    return ins, [[o, list(prog.param(o).shape), prog.param(o).dtype] for o in outs]


def _build_call_tir(mod, prog, outs: list, v: Variant, watch):
    """A Relax ``main`` that calls the PrimFunc with ``R.call_tir``, built by relax.build."""
    import tvm
    from tvm import relax

    target = tvm_target(v)
    with tvm.transform.PassContext(opt_level=int(v.target.get("opt-level", 3)),
                                   instruments=[watch]):
        return relax.build(call_tir_module(mod[prog.name], prog.name,
                                           *_call_tir_params(prog, outs)), target)


def _run_call_tir(built, prog, inputs: dict, outs: list) -> dict:
    import tvm
    from tvm import relax

    from fuzz import compat

    vm = relax.VirtualMachine(built, tvm.cpu())
    args = [compat.tensor(inputs[p.name]) for p in prog.params if p.name not in outs]
    res = vm["main"](*args)
    res = [res] if len(outs) == 1 else list(res)
    got = {k: a for k, a in inputs.items() if k not in outs}
    got.update({k: r.numpy() for k, r in zip(outs, res)})
    return got


def _run(built, prog, inputs: dict, paint: Optional[float] = None) -> dict:
    """Run the built PrimFunc on copies of ``inputs``; ``paint``: a value the stack painter
    (worker/uninit.py) leaves where the kernel's locals go, just before the kernel runs
    (default ``FIRST_PAINT``, so a local read before it is written reads the same in every
    run; where no painter can be built, a plain run)."""
    import tvm

    arrays = {p.name: tvm.runtime.tensor(inputs[p.name]) for p in prog.params
              if p.name in inputs}
    args = [arrays[p.name] for p in prog.params if p.name in arrays]
    kernel = built[prog.name]
    paint_with = painter() if paint is not None else painter_or_none()
    if paint_with is None:
        kernel(*args)
    else:
        paint_with(FIRST_PAINT if paint is None else paint, kernel, args)
    return {k: a.numpy() for k, a in arrays.items()}


def _roundtrip(mod) -> Optional[tuple]:
    import tvm

    from fuzz.tir.build import first_line

    try:
        again = tvm.script.from_source(mod.script())
    except Exception as e:  # noqa: BLE001
        # The parser's first line is generic ("Program is not well-formed"); the line that
        # names the problem is its "Traceback:" one, which first_line picks.
        why = first_line(e).split(": ", 1)[-1]
        return (type(e).__name__, "printed PrimFunc does not parse: " + why,
                str(e).strip()[-2000:])
    try:
        if not isinstance(again, tvm.IRModule):
            again = tvm.IRModule.from_expr(again)
        tvm.ir.assert_structural_equal(mod, again, map_free_vars=True)
    except ValueError as e:
        # Where the modules differ tells one printer bug from another (the values do not).
        m = re.search(r"caused by lhs at <root>(?:\.functions\[[^\]]*\])?\.(\S+?):?\s", str(e))
        where = f" at {m.group(1)}" if m else ""
        return ("ValueError", "print/parse round trip changes the PrimFunc" + where,
                str(e)[-2000:])
    return None


def random_tir_variant(rng: random.Random, passes_p: float = 0.3,
                       call_tir_p: float = 0.25) -> Variant:
    """Another opt level or CPU for llvm, sometimes after a random TIR pass order, sometimes
    through Relax's call_tir."""
    from . import tir_passes as TP
    from .variants import LLVM_CPUS

    target = {"kind": "llvm", "opt-level": rng.randint(0, 3)}
    cpu = rng.choice(LLVM_CPUS)
    if cpu:
        target["mcpu"] = cpu
    if rng.random() < call_tir_p:
        # The same PrimFunc called from a Relax function (R.call_tir), built by relax.build.
        return Variant(target, "call_tir")
    passes = TP.random_pass_order(rng) if rng.random() < passes_p else []
    return Variant(target, "tir", passes)
