"""The parent's side of the IR passes: each pass is a proxy that asks a sandbox child to count
elements and to build candidates (``reducer.jobs``), so no user text is ever parsed here."""
from __future__ import annotations

import collections
import hashlib
from typing import Optional

from worker.script_guard import UnsafeScript, check_script

from .passes import registry
from .pool import SandboxPool


class IRSession:
    """Counts per text (one job answers for all passes) and job statistics."""

    def __init__(self, pool: SandboxPool, timeout: float = 60.0, near_valid: bool = False,
                 hints: Optional[list] = None):
        self.pool, self.timeout, self.near_valid = pool, timeout, near_valid
        self.hints = hints or []
        self._counts: dict[str, dict] = {}
        self.stats = collections.Counter()

    def counts(self, text: str) -> dict:
        key = hashlib.sha256(text.encode()).hexdigest()
        if key not in self._counts:
            self.stats["count_jobs"] += 1
            r = self.pool.run({"kind": "reducer.ir_count", "text": text,
                               "near_valid": self.near_valid, "hints": self.hints},
                              self.timeout)
            self._counts[key] = r["result"]["counts"] if r.get("status") == "ok" else {}
        return self._counts[key]

    def apply(self, text: str, name: str, chosen: list) -> list[Optional[str]]:
        self.stats["apply_jobs"] += 1
        r = self.pool.run({"kind": "reducer.ir_apply", "text": text, "pass": name,
                           "chosen": [sorted(c) for c in chosen],
                           "near_valid": self.near_valid, "hints": self.hints}, self.timeout)
        if r.get("status") != "ok":
            self.stats["apply_jobs_died"] += 1
            return [None] * len(chosen)
        out = []
        for t in r["result"]["texts"]:
            if t is not None:
                try:
                    check_script(t)
                except (SyntaxError, UnsafeScript, ValueError):
                    t = None
            out.append(t)
        return out


class RemotePass:
    def __init__(self, name: str, session: IRSession):
        self.name, self.session = name, session

    def count(self, text: str) -> int:
        return int(self.session.counts(text).get(self.name, 0))

    def apply_many(self, text: str, chosen: list) -> list[Optional[str]]:
        return self.session.apply(text, self.name, chosen)


def ir_passes_for(session: IRSession) -> list[RemotePass]:
    return [RemotePass(n, session) for n in registry.names("ir")]
