"""A schedule as TVM's own trace, per step: what a reproducer replays.

``step_traces`` applies recorded schedule steps (worker/schedule_steps.py) once more and keeps
the Python lines of TVM's ``Schedule.trace`` for each, writing the primitive's call itself
where TVM's trace leaves it out (a step that raises, or one that kills the process and is
therefore written down, not made). ``replay_traces`` applies such traces the way
``random_schedule`` applied the steps; it and the helpers it calls are ``REPRO_CODE``, whose
source a Relax repro.py embeds as it is (reducer/repro.py ``shared_code``), so they use only
TVM and each other. ``case_trace``: a TIR case's schedule as one trace (job ``tir_trace``, for
reducer/tir_repro.py).
"""
from __future__ import annotations

from typing import Optional

from .schedule_steps import PRIMITIVES, _Ctx, _do, _join, _new_schedule, _tvm, _verify


def step_traces(mod, steps: list[dict], own_calls: bool = False,
                dry_last: bool = False) -> list[dict]:
    """``steps`` (as ``random_schedule`` applied them to ``mod``) as TVM's own trace, one
    ``{"func", "trace": [python lines]}`` per step, for ``replay_traces``. A step TVM crashes
    on is never in TVM's trace: its lookups are, and the primitive's call is written as Python
    from the arguments it was given (``own_calls``: so for every step, which tests use);
    ``"crashes"`` names the exception and the steps stop there. ``"unwritable"``: that call has
    an argument with no Python spelling. ``dry_last``: the last step kills the process (a
    death by signal), so its primitive is written down and never called."""
    out: list[dict] = []
    for k, step in enumerate(steps):
        func = step["func"]
        sch = _new_schedule(mod, func)
        rec = _CallRecorder(sch, dry=dry_last and k == len(steps) - 1)
        entry: dict = {"func": func, "prim": step.get("prim")}
        try:
            _do(_Ctx(rec, step), step)
        except _DryRun:
            entry["crashes"] = "a signal (not called while tracing)"
        except BaseException as e:
            entry["crashes"] = type(e).__name__
        lines = [ln for ln in sch.trace.as_python()]
        if "crashes" in entry or own_calls:
            if rec.call is None:
                entry["unwritable"] = "the step fails before its primitive is called"
            elif rec.call.startswith("#"):
                entry["unwritable"] = rec.call[1:].strip()
            else:
                lines = lines[:rec.before] + [rec.call]
        out.append(dict(entry, trace=[ln for ln in lines if ln.strip()]))
        if "crashes" in entry:
            break
        mod = _join(mod, {func: sch.mod})
    return out


class _CallRecorder:
    """Stands in for a Schedule while ``_do`` applies one step: every call goes to the
    schedule (so lookups land in its trace), and the primitive's call is also written down as
    Python over the trace's names, the one thing TVM's trace lacks when the primitive raises."""

    def __init__(self, sch, dry: bool = False):
        self._sch = sch
        self.call: Optional[str] = None
        self.before = 0
        self.dry = dry   # write the primitive's call down, do not make it (it kills)

    def __getattr__(self, name):
        attr = getattr(self._sch, name)
        if name not in PRIMITIVES:
            return attr

        def call(*args, **kwargs):
            self.before = len(self._sch.trace.insts)   # the lookups' lines come first
            self.call = _python_call(self._sch, name, args, kwargs)
            if self.dry:
                raise _DryRun()
            return attr(*args, **kwargs)

        return call


class _DryRun(Exception):
    """The primitive's call was written down and not made."""

def _rv_names(trace) -> list:
    """(random variable, its name in ``trace.as_python()``): TVM names the outputs of the
    trace's instructions b<i> (blocks), l<i> (loops), v<i> (expressions), i counting them all."""
    names, n = [], 0
    for inst in trace.insts:
        for o in inst.outputs:
            names.append((o, {"SBlockRV": "b", "LoopRV": "l"}.get(type(o).__name__, "v") + str(n)))
            n += 1
    return names


def _python_call(sch, prim: str, args, kwargs) -> str:
    """``sch.<prim>(...)`` as Python over the trace's names, or "# why not"."""
    names = _rv_names(sch.trace)

    def py(x):
        if x is None or isinstance(x, (bool, int, float, str)):
            return repr(x)
        if isinstance(x, (list, tuple)):
            inner = ", ".join(py(y) for y in x)
            return f"[{inner}]" if isinstance(x, list) else f"({inner}{',' if len(x) == 1 else ''})"
        for rv, name in names:
            if type(rv) is type(x) and rv.same_as(x):
                return name
        if type(x).__name__ == "IndexMap":
            # TVM's printer writes T.index_map(lambda ...) without the index dtype, which then
            # defaults to int64: an int32 block's map would replay as another map (and meet
            # another check). The dtype is written out.
            text, var = str(x), x.initial_indices[0] if len(x.initial_indices) else None
            ty = getattr(var, "ty", None)
            dtype = str(getattr(ty, "dtype", None) or getattr(var, "dtype", "int64"))
            if dtype != "int64" and text.startswith("T.index_map(") and text.endswith(")"):
                text = f'{text[:-1]}, index_dtype="{dtype}")'
            return text
        raise TypeError(f"no Python spelling of a {type(x).__name__} argument")

    try:
        parts = [py(a) for a in args] + [f"{k}={py(v)}" for k, v in kwargs.items()]
    except TypeError as e:
        return f"# {prim}: {e}"
    return f"sch.{prim}({', '.join(parts)})"


def replay_traces(mod, traces):
    """Apply a schedule given as TVM's trace per step (``step_traces``) the way
    ``random_schedule`` applied it: each step on a fresh schedule of its function's own
    module, the result checked to be well-formed TIR, then put back into ``mod``."""
    import tvm
    from tvm.script import tirx as T

    for step in traces:
        if step.get("unwritable"):
            raise NotImplementedError("a schedule step cannot be replayed from Python: "
                                      + step["unwritable"])
        sch = _new_schedule(mod, step["func"])
        exec("\n".join(step["trace"]), {"sch": sch, "T": T, "tvm": tvm})   # TVM's trace
        new = sch.mod
        _verify(new)
        mod = _join(mod, {step["func"]: new})
    return mod


# The code a Relax repro.py replays a schedule with: written into it as it is (see
# worker/variants.py REPRO_CODE), so the replay is the worker's own (the helpers come from
# worker/schedule_steps.py; pasted together they need nothing else).
REPRO_CODE = (_tvm, _new_schedule, _verify, _join, replay_traces)


def case_trace(prog, dry_last: bool = False) -> str:
    """The recorded schedule steps as the Python TVM's trace prints (run in the sandbox or
    wherever TVM is importable), the call of a step that raises included (TVM's trace leaves
    it out); ``dry_last``: the last step kills the process, so it is written, not run. Empty
    when the case has no schedule."""
    steps = (prog.meta.get("schedule") or {}).get("applied") or []
    if not steps:
        return ""
    from fuzz.tir.build import materialize_tir

    traces = step_traces(materialize_tir(prog), steps, dry_last=dry_last)
    return "\n".join(ln for t in traces for ln in t["trace"])
