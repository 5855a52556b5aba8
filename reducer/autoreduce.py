"""Reduce each new bucket while the campaign runs (on by default; `tvmfuzz run --no-reduce`).

One background thread with its own sandbox reduces the first case of every new bucket, each
within a time budget, into OUT/reduced/<bucket>/ (case.json, case.py, repro.py, report.md).
Buckets still waiting when the campaign ends are listed, to be reduced with `tvmfuzz reduce`.
"""
from __future__ import annotations

import queue
import threading
from pathlib import Path
from typing import Callable, Optional

PER_BUCKET_S = 60.0


class AutoReducer:
    def __init__(self, out_dir: Path, echo: Callable[[str], None],
                 python: Optional[str] = None, per_bucket_s: float = PER_BUCKET_S):
        self.out_dir, self.echo, self.python, self.budget = out_dir, echo, python, per_bucket_s
        self.todo: queue.Queue = queue.Queue()
        self.done: list[str] = []
        self.failed: dict[str, str] = {}
        self.stopping = threading.Event()
        self.current: Optional[str] = None   # the bucket being reduced now
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def submit(self, bucket: str, prog, signature: str) -> None:
        self.todo.put((bucket, prog.copy(), signature))

    def _loop(self) -> None:
        import sys

        from .api import ReduceError, reduce_case

        while not self.stopping.is_set():
            try:
                bucket, prog, sig = self.todo.get(timeout=0.5)
            except queue.Empty:
                continue
            self.current = bucket
            try:
                red = reduce_case(prog, signature=sig, out_dir=self.out_dir / "reduced" / bucket,
                                  python=self.python or sys.executable,
                                  time_budget=self.budget)
                self.done.append(bucket)
                # A seeded finding reduces as TVMScript text (red.reduced is a str then).
                unit = "statements" if getattr(red.reduced, "ir", "") == "tir" else "bindings"
                self.echo(f"reduced bucket {bucket}: {red.stats.get('bindings_before', '?')} -> "
                          f"{red.stats.get('bindings_after', '?')} {unit} "
                          f"({self.out_dir / 'reduced' / bucket})")
            except ReduceError as e:   # flaky, or fails differently alone: say so, go on
                self.failed[bucket] = str(e).splitlines()[0][:200]
            except Exception as e:  # noqa: BLE001 - a reducer bug must not end the campaign
                self.failed[bucket] = f"{type(e).__name__}: {e}"[:200]
            finally:
                self.current = None
                self._drop_if_empty(bucket)

    def _drop_if_empty(self, bucket: str) -> None:
        """A reduction that wrote nothing (it failed, or was still replaying the case when
        the campaign ended) leaves no empty directory behind to look like a result."""
        try:
            (self.out_dir / "reduced" / bucket).rmdir()   # only ever removes an empty one
        except OSError:
            pass

    def close(self, wait_s: float = 10.0) -> list[str]:
        """Stop taking buckets; give the reduction in progress ``wait_s`` to finish (its best
        candidate so far is already on disk), and return the buckets left waiting."""
        self.stopping.set()
        self.thread.join(wait_s)
        waiting = []
        busy = self.current
        if busy is not None and self.thread.is_alive():
            # Cut short: its directory holds at most partial.case.json (no repro.py or
            # report.md yet), so it is listed with the waiting ones, to reduce later.
            self._drop_if_empty(busy)
            waiting.append(busy)
        while not self.todo.empty():
            waiting.append(self.todo.get_nowait()[0])
        return waiting
