"""The jobs a sandbox child runs: ``run_job(job: dict) -> dict``, JSON in and JSON out.

``"case"`` and ``"script"`` are the real work: one case judged (``worker.cases``: a program
model or TVMScript text, built by ``worker.cases.job``). ``"print"`` and the trace kinds serve
reports and repro.py. The other kinds exist so
tests can make a child die in each way the sandbox must survive (``segv``, ``fpe``, ``sleep``,
``spin``, ``alloc``, ``exit``). ``floor_divide_by_zero()``, ``take_out_of_bounds()`` and
``huge_broadcast()`` are real Relax programs that die by SIGFPE, by SIGSEGV and by hitting the
memory limit, so the same survival is shown on TVM itself.
"""
from __future__ import annotations

import os
import signal
import time

from .cases import KINDS as CASE_KINDS

# Under the sandbox's RLIMIT_AS, TVM reports a failed allocation as an ordinary error
# (InternalError "std::bad_alloc") which the judge records as a crash; it is the cap.
_OOM_TEXT = ("bad_alloc", "out of memory", "cannot allocate memory")


def _judge(job: dict) -> dict:
    """Judge the case the job carries (a Relax or TIR model, or TVMScript text: the one judge
    of every kind, ``worker.cases.judge``). An outcome that is the memory cap (see _OOM_TEXT)
    is raised as MemoryError, so the sandbox reports it as ``oom`` whatever the case's kind."""
    from worker.cases import judge

    from .pycoverage import Tracer, enabled

    tracer = Tracer().start() if enabled() else None
    try:
        o = judge(job)
    finally:
        ran = tracer.stop() if tracer is not None else None
    if ran is not None:
        o.extra["tvm_python"] = ran   # counted by the campaign (fuzz/coverage.py), then dropped
    text = f"{o.error_type} {o.message}".lower()
    if o.verdict == "fail" and (o.error_type == "MemoryError"
                                or any(t in text for t in _OOM_TEXT)):
        raise MemoryError(f"{o.stage}: {o.error_type}: {o.message}")
    return o.to_json()   # the child's answer is JSON (outcome_from_result reads it back)


def _print(job: dict) -> dict:
    """The TVMScript of a case. Materializing can itself crash TVM (an op's type inference
    meeting a parameter of unknown shape), so even printing happens in the sandbox."""
    from fuzz.materialize import materialize, to_script
    from fuzz.model import Program

    prog = Program.from_json(job["program"])
    if prog.ir == "seeded":   # the mutant's text (mutated again, deterministically)
        from worker.seed_mutate import mutant_text

        return {"script": mutant_text(prog)[1]}
    if prog.ir == "tir":
        from fuzz.compat import has_axis_separators
        from fuzz.tir.render import SCRIPT_HEADER, to_tvmscript

        text = to_tvmscript(prog, axis_separators_ok=has_axis_separators())
        return {"script": SCRIPT_HEADER + text}
    if prog.ir == "onnx":
        # What TVM imported from the case's ONNX model (fuzz/onnx_export.py).
        from worker.onnx_judge import imported_module

        return {"script": to_script(imported_module(prog, job.get("input_seed", prog.meta.get("seed") or 0)))}
    if prog.ir == "torch":
        # What TVM imported from the case's exported program (fuzz/torch_export.py).
        from worker.torch_judge import imported_module as torch_imported

        return {"script": to_script(torch_imported(prog, job.get("input_seed",
                                                                 prog.meta.get("seed") or 0)))}
    mod = materialize(prog)
    out = {"script": to_script(mod)}
    # For repro.py: the module itself (TVM's JSON), where the printout does not parse back
    # to it ("auto"), or always.
    if job.get("module_json") in ("auto", "always"):
        import tvm

        from worker.execute import roundtrip_problem

        if job["module_json"] == "always" or roundtrip_problem(mod) is not None:
            out["module_json"] = tvm.ir.save_json(mod)
    return out


def _builder(job: dict) -> dict:
    """The construction of a Relax case as Python (``fuzz.materialize.builder_source``), for
    repro.py of a finding TVM meets while the module is constructed (no module to print).
    Writes source only: nothing is constructed, so it cannot die the finding's death."""
    from fuzz.materialize import builder_source
    from fuzz.model import Program

    return {"builder": builder_source(Program.from_json(job["program"]))}


def _schedule_trace(job: dict) -> dict:
    """For repro.py of a Relax finding: the schedule each "scheduled" variant applied, as
    TVM's trace per step (worker.tir_schedule.step_traces). The module is built as the finding
    built it, up to the schedule: there the recorded steps (``steps``, the outcome's; drawn from
    the variant's seed again where there are none) are traced and the build stops."""
    from worker import tir_schedule as TS
    from worker import variants as V

    if job.get("program") is not None and job["program"].get("kind") in ("onnx", "torch"):
        from fuzz.model import Program

        # An ONNX or PyTorch case's module is what TVM's importer made of it, not the model
        prog = Program.from_json(job["program"])
        if prog.ir == "onnx":
            from worker.onnx_judge import imported_module
        else:
            from worker.torch_judge import imported_module
        mod = imported_module(prog, prog.meta.get("seed") or 0)
    elif job.get("program") is not None:
        from fuzz.materialize import materialize
        from fuzz.model import Program

        mod = materialize(Program.from_json(job["program"]),
                          check_types=not job.get("near_valid"))
    else:
        import tvm

        from worker.script_guard import check_script

        check_script(job["text"])
        mod = tvm.script.from_source(job["text"], check_well_formed=not job.get("near_valid"))
    scheduled = [i for i, v in enumerate(job["variants"]) if v.get("pipeline") == "scheduled"]
    out = {}
    for i in scheduled:
        v = V.Variant.from_json(job["variants"][i])
        got: dict = {}

        def take(m, v=v, got=got):
            # The variant's pinned steps (a reduced case's), else the outcome's, else a draw.
            steps = v.schedule_steps
            if steps is None:
                steps = job.get("steps") if len(scheduled) == 1 else None
            if not steps and v.schedule_steps is None:
                try:
                    V._random_schedule(v.schedule_seed or 0)(m)
                except Exception:  # noqa: BLE001 - the step that raised is recorded too
                    pass
                steps = list(V.LAST_SCHEDULE)
            got["traces"] = TS.step_traces(m, steps, dry_last=bool(job.get("signal")))
            raise _TraceTaken()

        try:
            V.build(mod, v, schedule=take)
            got.setdefault("error", "the build did not reach the schedule")
        except Exception as e:  # noqa: BLE001 - _TraceTaken, or the build failed before
            if "traces" not in got:
                got["error"] = f"{type(e).__name__}: {(str(e).strip().splitlines() or [''])[0]}"
        bad = [t["unwritable"] for t in got.get("traces") or [] if t.get("unwritable")]
        if bad:
            got = {"error": bad[0]}
        out[str(i)] = got
    return {"traces": out}


class _TraceTaken(Exception):
    """Stops a build once the schedule's trace is taken."""


def _tir_trace(job: dict) -> dict:
    """A TIR case's schedule steps as TVM's own trace (Python), for its standalone repro.py;
    the step that crashes TVM is not in the trace, so a crash while tracing gives what
    was traced before it."""
    from fuzz.model import Program
    from worker.schedule_trace import case_trace

    try:
        return {"trace": case_trace(Program.from_json(job["program"]),
                                    dry_last=bool(job.get("signal")))}
    except Exception as e:  # noqa: BLE001
        return {"trace": "", "error": f"{type(e).__name__}: {str(e).strip()[:300]}"}


def _tir_draw(job: dict) -> dict:
    """The steps a TIR case's schedule seed draws on its function (nothing is built): for
    the reducer to pin them where the finding recorded none."""
    from fuzz.model import Program
    from fuzz.tir import build as TB
    from worker.tir_execute import draw_schedule

    prog = Program.from_json(job["program"])
    _, applied = draw_schedule(TB.materialize_tir(prog), prog.meta.get("schedule") or {})
    return {"applied": applied}


def _standard_schedule(job: dict) -> dict:
    """Schedule steps on one of tir_schedule's standard modules (its KNOWN_BUGS are written
    against them), for tests that need TVM itself to die inside a schedule primitive."""
    from worker import breadcrumb
    from worker import tir_schedule as TS

    breadcrumb.mark(stage="schedule")
    TS.apply_schedule(TS.STANDARD[job["module"]](), job["steps"])
    return {"applied": len(job["steps"])}


def _segv(job):
    os.kill(os.getpid(), signal.SIGSEGV)


def _fpe(job):
    os.kill(os.getpid(), signal.SIGFPE)


def _sleep(job):
    time.sleep(float(job.get("seconds", 3600)))
    return {"slept": job.get("seconds", 3600)}


def _spin(job):
    end = time.process_time() + float(job.get("seconds", 3600))
    while time.process_time() < end:
        pass
    return {"spun": job.get("seconds", 3600)}


def _alloc(job):
    import numpy as np

    a = np.ones(int(job["mb"]) << 20, dtype=np.uint8)   # ones() writes every page
    return {"mb": job["mb"], "sum": int(a[:: 1 << 12].sum())}


def _exit(job):
    os._exit(int(job.get("code", 3)))


def _echo(job):
    return {"echo": job.get("value")}


# Every kind of case (worker/cases.py) is judged by the one job; the rest serve reports,
# repro.py, the reducer's pins and the tests.
KINDS = {**{k.job_kind: _judge for k in CASE_KINDS},
         "print": _print, "builder": _builder, "tir_trace": _tir_trace,
         "standard_schedule": _standard_schedule, "tir_draw": _tir_draw,
         "schedule_trace": _schedule_trace,
         "segv": _segv, "fpe": _fpe, "sleep": _sleep, "spin": _spin, "alloc": _alloc,
         "exit": _exit, "echo": _echo}


# Job kinds "<plugin>.<name>" live in another package's module, imported in the child on use.
PLUGINS = {"reducer": "reducer.jobs"}


def run_job(job: dict) -> dict:
    plugin = job["kind"].split(".", 1)[0]
    if plugin in PLUGINS:
        import importlib

        return importlib.import_module(PLUGINS[plugin]).KINDS[job["kind"]](job)
    return KINDS[job["kind"]](job)


# --- real TVM programs that take the process down ----------------------------------------
def floor_divide_by_zero():
    """int32 floor_divide by an all-zero divisor: the compiled kernel divides by zero and the
    process dies by SIGFPE (x86 ``idiv``; checked on TVM 0.27, llvm target)."""
    from fuzz.model import Block, Function, Node, Param, Program, TensorTy

    t = TensorTy([4], "int32")
    return Program([Function("main", [Param("a", t, -8, 8), Param("b", t, 0, 0)],
                             [Block(True, [Node("v1", "relax.floor_divide", ["a", "b"], {}, t)])],
                             "v1")], "main", {"mode": "valid"})


def take_out_of_bounds(index: int = 1 << 30):
    """take(x, idx) in mode "fast" (no bounds check) with idx far past x's end: the kernel
    reads unmapped memory and the process dies by SIGSEGV."""
    from fuzz.model import Block, Function, Node, Param, Program, TensorTy

    x, i = TensorTy([4], "float32"), TensorTy([4], "int64")
    node = Node("v1", "relax.take", ["x", "i"], {"axis": 0, "mode": "fast"}, x)
    return Program([Function("main", [Param("x", x), Param("i", i, index, index)],
                             [Block(True, [node])], "v1")], "main", {"mode": "valid"})


def huge_broadcast(n: int = 1 << 15):
    """add((n,1), (1,n)) float32: tiny inputs, an n*n output (4 GiB for 2**15), so the runtime's
    allocation fails under a smaller RLIMIT_AS."""
    from fuzz.model import Block, Function, Node, Param, Program, TensorTy

    a, b, c = TensorTy([n, 1], "float32"), TensorTy([1, n], "float32"), TensorTy([n, n], "float32")
    return Program([Function("main", [Param("a", a), Param("b", b)],
                             [Block(True, [Node("v1", "relax.add", ["a", "b"], {}, c)])], "v1")],
                   "main", {"mode": "valid"})
