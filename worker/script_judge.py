"""Judge TVMScript text the way ``worker.execute.compile_and_run`` judges a case: verifier,
each compile variant (target, pipeline, pass list, exec mode) with the failing pass named,
load, run, outputs compared across variants, print/parse round trip last.

The one judge of text: a user's file replayed (``worker.execute.run_script``: one variant for
the target asked), reduced, reported or bisected, and the reducer's text candidates. No numpy
reference: the text has no program model, so only cross-variant differences count as
numeric. Sandbox child only.
"""
from __future__ import annotations

import tempfile
import time

import numpy as np

from . import breadcrumb
from .execute import (Outcome, _fail, _record_schedule, _tensor, _to_numpy, finish,
                      pass_watch, roundtrip_problem, well_formed_verdict)
from .script_inputs import NoInputs, input_values, vm_arguments
from .variants import Variant, build, gpu_available, load_vm


def _flat(x) -> list:
    return [y for i in x for y in _flat(i)] if isinstance(x, (list, tuple)) else [x]


def _differs(a: list, b: list) -> str:
    if len(a) != len(b):
        return f"{len(b)} outputs, expected {len(a)}"
    for i, (x, y) in enumerate(zip(a, b)):
        x, y = np.asarray(x), np.asarray(y)
        if x.shape != y.shape:
            return f"output {i}: shape {y.shape}, expected {x.shape}"
        if x.dtype.kind == "f" or "bfloat16" in str(x.dtype):
            tol = 1e-2 if x.dtype.itemsize <= 2 else 1e-4
            if not np.allclose(x.astype(np.float64), y.astype(np.float64), rtol=tol, atol=tol,
                               equal_nan=True):
                return f"output {i} ({x.dtype}) differs"
        elif not np.array_equal(x, y):
            return f"output {i} ({x.dtype}) differs"
    return ""


def judge_script(text: str, variants: list, input_seed: int = 0,
                 near_valid: bool = False, by_name: dict | None = None) -> Outcome:
    import tvm

    variants = [Variant.from_json(v) if isinstance(v, dict) else v for v in variants or [{}]]
    t0 = time.perf_counter()

    steps: list = []   # s_tir schedule steps a "scheduled" variant applied

    def done(o: Outcome, v: Variant = variants[0]) -> Outcome:
        return finish(o, t0, v, steps)

    breadcrumb.mark(stage="parse")
    try:
        # A near-valid module is ill-formed on purpose: the parser must not refuse it.
        mod = tvm.script.from_source(text, check_well_formed=not near_valid)
    except Exception as e:  # noqa: BLE001
        return done(_fail("parse", e, kind="not_tvmscript", verdict="invalid"))
    if not isinstance(mod, tvm.IRModule) or not any(
            isinstance(f, tvm.relax.Function) for f in mod.functions.values()):
        # tvmfuzz's own limit, never TVM's failure: user modules are judged through a Relax
        # entry function (a PrimFunc alone can be called from one with R.call_tir).
        return done(Outcome("invalid", "unsupported_input", "parse", "", "tvmfuzz judges "
                            "modules with a Relax function; this one has only PrimFuncs"))
    breadcrumb.mark(stage="well_formed")
    wf, finding = well_formed_verdict(mod, near_valid)
    if finding is not None:
        return done(finding)
    values = None   # made once a variant built: a build failure needs no inputs
    first = None
    with tempfile.TemporaryDirectory(prefix="tvmfuzz-") as workdir:
        for v in variants:
            watch = pass_watch(wf)
            breadcrumb.mark(stage="build", variant=v.to_json())
            try:
                try:
                    with tvm.transform.PassContext(instruments=[watch]):
                        ex = build(mod, v)
                finally:
                    if v.pipeline == "scheduled":
                        _record_schedule(steps)
            except Exception as e:  # noqa: BLE001
                if not wf:
                    return done(_fail("build", e, kind="rejected", verdict="rejected"), v)
                return done(_fail("build", e, kind="verifier_build" if near_valid else "crash",
                                  extra={"failing_pass": watch.current, "phase": watch.phase}),
                            v)
            if watch.ill_formed_after:
                return done(Outcome("fail", "pass_ill_formed", "build", "",
                                    watch.ill_formed_message(),
                                    extra={"failing_pass": watch.ill_formed_after}), v)
            if v.kind == "cuda" and not gpu_available():
                continue
            if values is None:
                try:
                    values = input_values(mod["main"], input_seed, by_name)
                except NoInputs as e:
                    return done(Outcome("invalid", "no_inputs", "inputs", "NoInputs", str(e)), v)
            breadcrumb.mark(stage="vm_load", **{"pass": None})
            try:
                vm = load_vm(ex, v, workdir)
                args = vm_arguments(values, lambda a: _tensor(a, v))
            except Exception as e:  # noqa: BLE001
                return done(_fail("vm_load", e), v)
            breadcrumb.mark(stage="run")
            try:
                out = _flat(_to_numpy(vm["main"](*args)))
            except Exception as e:  # noqa: BLE001
                return done(_fail("run", e), v)
            if not wf:
                return done(Outcome("fail", "verifier_build", "well_formed", "",
                                    "ill-formed module builds and runs"), v)
            if first is not None and v.exact and first[0].exact:
                diff = _differs(first[1], out)
                if diff:
                    return done(Outcome("fail", "numeric", "compare", "",
                                        f"differs from {first[0].label()}: {diff}"), v)
            if first is None:
                first = (v, out)
    if wf:
        breadcrumb.mark(stage="roundtrip", variant=None)
        rt = roundtrip_problem(mod, second_generation=near_valid)
        if rt:
            return done(Outcome("fail", "roundtrip", "roundtrip", rt[0], rt[1], "", rt[2]))
    return done(Outcome("pass"))
