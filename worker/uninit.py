"""Does a result depend on memory nobody wrote? (For numeric findings.)

A wrong result that comes from reading uninitialized memory changes when that memory holds
something else. glibc fills every block ``malloc`` hands out with a chosen byte once
``mallopt(M_PERTURB, byte)`` is set; TVM's workspaces and the VM's storage come from it. So a
numeric finding is run again with another fill: if the outputs move, the finding reads
uninitialized memory, and the outcome records it (``extra["reads_uninitialized"]``). It stays
out of the signature: TVM's workspace pool hands a rerun the memory the first run left, so the
check can miss, and a signature must not change from one replay to the next.

A small local buffer lives on the stack, where malloc's fill does not reach. ``stack_painter``
builds a kernel whose own frame holds a large local buffer filled with a chosen value: called
just before a kernel (from the same place, so at the same stack depth), it leaves that value
where the kernel's locals will be. A TIR function that reads a local before writing it (a
cache block cache_write left unwritten) then gives a result that depends on the value,
deterministically, instead of on whatever the previous call left there. ``stack_painter`` is
written into TIR repro.py files as it is (reducer/tir_repro.py): only TVM and numpy.
"""
from __future__ import annotations

import ctypes
import functools
from typing import Callable, Optional

import numpy as np

M_PERTURB = -6
FILLS = (0xA5, 0x3C)   # two fills, neither 0 (fresh pages are already zero)
# Values left on the stack before a kernel: zero and a fraction (a truth test or an int cast
# of the garbage reads False / 0), and large values of both signs (True, saturating).
STACK_FILLS = (0.0, 0.5, 1e4, -1e4)


@functools.lru_cache(maxsize=1)
def _mallopt() -> Optional[Callable]:
    try:
        return ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return None


def reads_uninitialized(rerun: Callable[[], object], first,
                        painted: Optional[Callable[[float], object]] = None) -> Optional[bool]:
    """Run ``rerun`` (the same built code on the same inputs) under each fill and compare its
    outputs with ``first``; True when they move, False when they stay, None where malloc
    cannot be perturbed (not glibc) and no ``painted`` run was given. ``painted(value)``: the
    same run with the stack painted with ``value`` just before the kernel (STACK_FILLS)."""
    if painted is not None:
        try:
            if any(not _same(first, painted(v)) for v in STACK_FILLS):
                return True
        except Exception:  # noqa: BLE001 - no painter on this release: malloc's fills only
            pass
    if _mallopt() is None:
        return None if painted is None else False
    return differs_under_fills(rerun, lambda out: not _same(first, out))


def differs_under_fills(run: Callable[[], object], differs: Callable[[object], object]) -> bool:
    """Whether ``differs(run())`` holds with malloc's blocks filled with any of FILLS: a
    result that reads memory nobody wrote may be right by chance on one run (the pool handing
    back what an earlier run left) and wrong on another; the fills make it wrong every time.
    False where malloc cannot be perturbed."""
    mallopt = _mallopt()
    if mallopt is None:
        return False
    try:
        for fill in FILLS:
            mallopt(M_PERTURB, fill)
            if differs(run()):
                return True
        return False
    finally:
        mallopt(M_PERTURB, 0)


def painter():
    """This process's stack painter (built once); raises where it cannot be built."""
    paint = painter_or_none()
    if paint is None:
        raise RuntimeError("no stack painter on this TVM")
    return paint


# What the judge's plain runs of a TIR kernel leave on the stack first: a kernel that reads a
# local before writing it then reads this, in every run and every process, instead of what
# the last call left (whether such a finding was met used to depend on the stack's history,
# so one replay in three found it).
FIRST_PAINT = 0.5


@functools.lru_cache(maxsize=1)
def painter_or_none():
    """The stack painter, or None where it cannot be built (another release's API)."""
    try:
        return stack_painter()
    except Exception:  # noqa: BLE001 - plain runs then, as before the painter
        return None


def _same(a, b) -> bool:
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return isinstance(b, (list, tuple)) and len(a) == len(b) and \
            all(_same(x, y) for x, y in zip(a, b))
    x, y = np.asarray(a), np.asarray(b)
    return x.shape == y.shape and x.dtype == y.dtype and np.array_equal(x, y, equal_nan=True)


def stack_painter():
    """``paint(value, kernel, args)``: run a kernel that fills 4 KiB of its own stack frame
    with ``value`` (float32), then ``kernel(*args)`` (the kernel under test, its arguments
    already made), from the same place, so at the same stack depth."""
    import numpy as np
    import tvm
    from tvm.script import tirx as T

    @T.prim_func
    def paint(idx: T.Buffer((1,), "int32"), fill: T.Buffer((1,), "float32"),
              out: T.Buffer((1,), "float32")):
        T.func_attr({"global_symbol": "paint", "tir.noalias": True})
        buf = T.alloc_buffer((1024,), "float32", scope="local")
        for i in range(1024):
            buf[i] = fill[0]
        out[0] = buf[idx[0]]   # a read at an index the compiler cannot know keeps every store

    lib = tvm.tirx.build(tvm.IRModule({"paint": paint}), target="llvm")
    idx = tvm.runtime.tensor(np.array([1023], "int32"))
    out = tvm.runtime.tensor(np.zeros(1, "float32"))

    fill_of = {}

    def run(value, kernel=None, args=()):
        """Paint with ``value``; then, if given, call ``kernel(*args)`` at once. Python's
        cyclic GC is off from the paint to the kernel's return: a collection in between runs
        C code at this depth and overwrites the paint (seen in a large test process)."""
        import gc

        fill = fill_of.get(value)
        if fill is None:
            fill = fill_of[value] = tvm.runtime.tensor(np.array([value], "float32"))
        enabled = gc.isenabled()
        gc.disable()
        try:
            lib["paint"](idx, fill, out)
            if kernel is not None:
                kernel(*args)
        finally:
            if enabled:
                gc.enable()

    return run
