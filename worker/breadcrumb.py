"""Where a sandbox child is, for the parent to read when the child dies.

A segfault, SIGFPE or abort inside TVM kills the child before it can report anything, so the
child leaves breadcrumbs as it goes: the stage, the variant being built, the pass running, the
schedule step being applied (with the steps before it). They live in a small anonymous shared
mapping that the server creates before each fork (``new_buffer``), so writing one costs a
``json.dumps`` and a memory copy, no system call, and the parent reads the last one after the
child is gone (``read``). Outside a sandbox child ``mark`` does nothing.
"""
from __future__ import annotations

import json
import mmap
from typing import Optional

SIZE = 1 << 16
_buf: Optional[mmap.mmap] = None
_state: dict = {}


def new_buffer() -> mmap.mmap:
    return mmap.mmap(-1, SIZE)   # anonymous and shared: the forked child writes, we read


def attach(buf: mmap.mmap) -> None:
    """In the child: write breadcrumbs into ``buf`` from now on."""
    global _buf
    _buf = buf


def active() -> bool:
    """In a sandbox child (marks are read by someone)."""
    return _buf is not None


def reset() -> None:
    """A new job starts: forget where the last one was."""
    _state.clear()
    _write()


def mark(**where) -> None:
    """Update where the child is (``None`` values clear a field) and publish it."""
    if _buf is None:
        return
    for k, v in where.items():
        if v is None:
            _state.pop(k, None)
        else:
            _state[k] = v
    _write()


def _write() -> None:
    if _buf is None:
        return
    data = json.dumps(_state, default=str).encode()
    if len(data) >= SIZE:   # never lose the small fields to a long step list
        data = json.dumps({k: v for k, v in _state.items() if k != "steps"}).encode()[:SIZE - 1]
    _buf.seek(0)
    _buf.write(data + b"\0")


def read(buf: mmap.mmap) -> dict:
    raw = buf[:SIZE].split(b"\0", 1)[0]
    try:
        return json.loads(raw) if raw else {}
    except ValueError:
        return {}
