"""Build failures that are the schedule's fault, not TVM's.

A random schedule can break preconditions of lowering that no schedule primitive checks; a
build failure whose first line is one of ``SCHEDULE_NOISE`` is noise, not a finding
(``is_schedule_noise``, used by worker/execute.py and worker/tir_execute.py).
"""
from __future__ import annotations


# Preconditions of lowering that no schedule primitive checks; a random schedule can break
# them, so a build failure with one of these first lines is noise, not a finding.
SCHEDULE_NOISE = (
    # CodeGenCPU (codegen_cpu.cc): parallel loops do not nest; the generator avoids nesting
    # them, but a later fuse/split/compute_at can still put one parallel loop in another.
    "Nested parallel loop is not supported by threadpool",
    # VectorizeLoop refuses, by design, a loop of symbolic extent on a target without
    # scalable vectors (x86): "Failed to vectorize loop with extent m for target ...".
    "Failed to vectorize loop with extent",
    # UnrollLoop refuses, the same way, an explicit unroll (the unroll primitive) of a loop
    # whose extent is symbolic: "Cannot unroll non-constant loop".
    "Cannot unroll non-constant loop",
)


def is_schedule_noise(message: str) -> bool:
    first = (message or "").strip().splitlines()[0] if (message or "").strip() else ""
    return any(p in first for p in SCHEDULE_NOISE)
