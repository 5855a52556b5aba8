"""Does a result depend on memory nobody wrote? (For numeric findings.)

A wrong result that comes from reading uninitialized memory changes when that memory holds
something else. glibc fills every block ``malloc`` hands out with a chosen byte once
``mallopt(M_PERTURB, byte)`` is set; TVM's workspaces and the VM's storage come from it. So a
numeric finding is run again with another fill: if the outputs move, the finding reads
uninitialized memory, and the outcome records it (``extra["reads_uninitialized"]``). It stays
out of the signature: TVM's workspace pool hands a rerun the memory the first run left, so the
check can miss, and a signature must not change from one replay to the next.
"""
from __future__ import annotations

import ctypes
import functools
from typing import Callable, Optional

import numpy as np

M_PERTURB = -6
FILLS = (0xA5, 0x3C)   # two fills, neither 0 (fresh pages are already zero)


@functools.lru_cache(maxsize=1)
def _mallopt() -> Optional[Callable]:
    try:
        return ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return None


def reads_uninitialized(rerun: Callable[[], object], first) -> Optional[bool]:
    """Run ``rerun`` (the same built code on the same inputs) under each fill and compare its
    outputs with ``first``; True when they move, False when they stay, None where malloc
    cannot be perturbed (not glibc)."""
    mallopt = _mallopt()
    if mallopt is None:
        return None
    try:
        for fill in FILLS:
            mallopt(M_PERTURB, fill)
            if not _same(first, rerun()):
                return True
        return False
    finally:
        mallopt(M_PERTURB, 0)


def _same(a, b) -> bool:
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return isinstance(b, (list, tuple)) and len(a) == len(b) and \
            all(_same(x, y) for x, y in zip(a, b))
    x, y = np.asarray(a), np.asarray(b)
    return x.shape == y.shape and x.dtype == y.dtype and np.array_equal(x, y, equal_nan=True)
