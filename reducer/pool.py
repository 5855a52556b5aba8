"""N crash-isolated sandboxes side by side: candidates of one ddmin level run in parallel.

Each ``worker.sandbox.Sandbox`` is a fork server and is not thread-safe, so each thread takes
one whole sandbox from a queue for one job. One job per fork (not ``run_many`` batches): a
reduction's candidates often crash their process, and a batch would fork again anyway.
"""
from __future__ import annotations

import os
import queue
import sys
from concurrent.futures import ThreadPoolExecutor

from worker.sandbox import Sandbox


class SandboxPool:
    def __init__(self, size: int = 1, timeout: float = 60.0, mem_mb: int = 4096,
                 python: str = sys.executable, jail=None):
        self.size = max(1, int(size))
        self.timeout, self.mem_mb, self.python = timeout, mem_mb, python
        self.jail = jail   # worker.jail.Jail for input from outside (None: not jailed)
        self._free: queue.Queue = queue.Queue()
        self._all: list[Sandbox] = []
        self._exec = ThreadPoolExecutor(self.size) if self.size > 1 else None
        starters = [self._exec.submit(self._new) for _ in range(self.size)] if self._exec \
            else None
        if starters:
            for f in starters:
                f.result()
        else:
            self._new()

    def _new(self) -> None:
        sb = Sandbox(python=self.python, timeout=self.timeout, mem_mb=self.mem_mb, jail=self.jail)
        self._all.append(sb)
        self._free.put(sb)

    def run(self, job: dict, timeout: float | None = None) -> dict:
        sb = self._free.get()
        try:
            if timeout is not None and timeout != sb.timeout:
                # The CPU backstop follows the wall-clock limit (as Sandbox sets it).
                old = sb.timeout, sb.cpu_s
                sb.timeout = float(timeout)
                sb.cpu_s = max(old[1], sb.timeout * (os.cpu_count() or 1) + 5)
                try:
                    return sb.run(job)
                finally:
                    sb.timeout, sb.cpu_s = old
            return sb.run(job)
        finally:
            self._free.put(sb)

    def run_all(self, jobs: list[dict], timeout: float | None = None) -> list[dict]:
        """Results in the order of ``jobs``, up to ``size`` at a time."""
        if self._exec is None or len(jobs) <= 1:
            return [self.run(j, timeout) for j in jobs]
        return list(self._exec.map(lambda j: self.run(j, timeout), jobs))

    def close(self) -> None:
        for sb in self._all:
            sb.close()
        self._all.clear()
        if self._exec is not None:
            self._exec.shutdown(wait=False)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
