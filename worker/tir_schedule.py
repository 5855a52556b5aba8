"""Random s_tir schedules: the facade of the modules that hold them.

* ``worker/schedule_steps.py``: a schedule as replayable JSON steps, the random step
  generators and the application of steps (``random_schedule``, ``apply_schedule``,
  ``StepRefused``, ``ScheduleStats``, ``failed_step``, ``PRIMITIVES``, ``STABLE_PRIMITIVES``).
* ``worker/schedule_trace.py``: a schedule as TVM's own trace, per step, for reproducers
  (``step_traces``, ``replay_traces``, ``case_trace``, ``REPRO_CODE``).
* ``worker/schedule_noise.py``: build failures that are the schedule's fault, not TVM's
  (``SCHEDULE_NOISE``, ``is_schedule_noise``).
* ``worker/schedule_standard.py``: the standard modules tests, benches and the self-check
  schedule (``STANDARD``, ``matmul_module``, ``legalized_module``, ``run_standard``) and TVM
  0.27's known schedule defects on them (``KNOWN_BUGS``, data in fuzz/tir/schedule_bugs.py).

This module re-exports the names callers use (``from worker import tir_schedule as TS``).
"""
from __future__ import annotations

from .schedule_noise import SCHEDULE_NOISE, is_schedule_noise  # noqa: F401
from .schedule_standard import (  # noqa: F401
    KNOWN_BUGS, MATMUL_SCRIPT, STANDARD, legalized_module, matmul_module, run_standard)
from .schedule_steps import (  # noqa: F401
    ANNOTATIONS, BUGGY_PRIMITIVES, CPU_SCOPES, GPU_ONLY, GPU_SCOPES, INEXACT, PRIMITIVES,
    STABLE_PRIMITIVES, THREAD_AXES, _GENERATORS, _LAST_FAILURE, ScheduleStats, StepRefused,
    _apply_step, _attach, _Ctx, _do, _first_line, _join, _new_schedule, _split, _tvm, _verify,
    apply_schedule, block_names, dumps, failed_step, guilty_step, is_exact, primitives_for,
    random_schedule,
    schedulable_funcs)
from .schedule_trace import (  # noqa: F401
    REPRO_CODE, _CallRecorder, _DryRun, _python_call, _rv_names, case_trace, replay_traces,
    step_traces)
