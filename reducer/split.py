"""The first cuts of a large TVMScript module: dependency-aware slices of main, from one
parse per round in the sandbox (job ``reducer.ir_split``, ``reducer/passes/ir/windows.py``).

Parsing is superlinear in TVM (about 0.4 s for 1,000 bindings, 4 s for 5,000, 50 s for
20,000), so the delta passes, which parse their state again for every count and every batch
of candidates, cannot start on a module of thousands of bindings. Here one job parses the
current module and prints, from that one parse: each binding the failure names (its op or
its variable in the message) alone with its operands as parameters, then its cone of
influence, then the windows of a binary tree over main's bindings, ``LEVELS`` deep (values
from before a window become parameters, what it makes for later or for nothing is returned).
The parent judges named slices first, then walks the tree down: the first half that keeps
the bug, then the first of its halves... (one or two oracle calls a level, each on a module
half the size of the last). The next round parses only the window reached; the rounds stop
below ``SPLIT_FROM`` bindings, or when no slice keeps the bug (a bug that needs bindings from
both halves), and the delta passes take over from there.
"""
from __future__ import annotations

import re
import time
from typing import Callable, Optional

from .ddmin import rate
from .oracle import Oracle
from .pool import SandboxPool
from .size import script_bindings

SPLIT_FROM = 2    # main with at least this many bindings is cut by slices first
LEVELS = 3        # tree levels printed per parse (2 + 4 + 8 windows)
_WORD = re.compile(r"\b[A-Za-z_]\w*\b")


def message_names(outcome) -> list[str]:
    """Words of the failure's message that may name a binding's variable."""
    if outcome is None:
        return []
    words = _WORD.findall(" ".join((outcome.message, outcome.detail or ""))[:4000])
    return sorted(set(w for w in words if any(c.isdigit() for c in w) or "_" in w))[:200]


class Split:
    def __init__(self, oracle: Oracle, pool: SandboxPool, *, timeout_for: Callable[[int], float],
                 hints: Optional[list] = None, names: Optional[list] = None,
                 near_valid: bool = False, width: int = 1,
                 log: Callable[[str], None] = lambda s: None,
                 on_accept: Callable[[str], None] = lambda s: None,
                 smaller: Callable[[str, str], bool] = lambda a, b: True,
                 deadline: Optional[float] = None):
        self.oracle, self.pool, self.timeout_for = oracle, pool, timeout_for
        self.hints, self.names, self.near_valid = hints or [], names or [], near_valid
        self.width, self.log, self.on_accept, self.smaller = max(1, width), log, on_accept, \
            smaller
        self.deadline = deadline
        self.interrupted = False   # Ctrl-C: the reduction ends with the module reached
        self.stats = {"split_jobs": 0, "split_calls": 0, "split_accepted": 0,
                      "split_seconds": 0.0}
        self._t0 = time.monotonic()
        self._calls0 = oracle.stats["calls"]

    def _progress(self, before: int, after: int, how: str) -> None:
        calls = self.oracle.stats["calls"] - self._calls0
        secs = time.monotonic() - self._t0
        self.log(f"  split: {before} -> {after} bindings ({how}); {calls} oracle calls, "
                 f"{rate(calls, secs)}, {secs:.0f} s")

    def _test(self, texts: list[str], size: int) -> list[bool]:
        """The oracle's verdicts, under a time limit for modules of ``size`` bindings."""
        old = self.oracle.timeout
        self.oracle.timeout = max(old or 0, self.timeout_for(size))
        before = self.oracle.stats["calls"]
        try:
            return self.oracle.test(texts)
        finally:
            self.oracle.timeout = old
            self.stats["split_calls"] += self.oracle.stats["calls"] - before

    def _first(self, slices: list[dict], cur: str) -> Optional[dict]:
        """The first slice (in order) that keeps the bug, ``width`` judged at a time."""
        live = [s for s in slices if s.get("text") and self.smaller(s["text"], cur)]
        for k in range(0, len(live), self.width):
            batch = live[k:k + self.width]
            verdicts = self._test([s["text"] for s in batch], max(s["size"] for s in batch))
            for s, ok in zip(batch, verdicts):
                if ok:
                    return s
        return None

    def run(self, text: str) -> str:
        cur = text
        t0 = time.monotonic()
        try:
            while True:
                n = script_bindings(cur)
                if n < SPLIT_FROM:
                    break
                if self.deadline is not None and time.monotonic() > self.deadline:
                    self.log("  split: time budget spent")
                    break
                nxt = self._round(cur, n)
                if nxt is None:
                    break
                cur = nxt
        except KeyboardInterrupt:
            self.interrupted = True
            self.log("  split: interrupted; keeping the smallest module so far")
        finally:
            self.stats["split_seconds"] = round(time.monotonic() - t0, 2)
        return cur

    def _round(self, cur: str, n: int) -> Optional[str]:
        job = {"kind": "reducer.ir_split", "text": cur, "near_valid": self.near_valid,
               "hints": self.hints, "names": self.names, "levels": LEVELS}
        self.stats["split_jobs"] += 1
        t0 = time.monotonic()
        r = self.pool.run(job, self.timeout_for(n))
        if r.get("status") == "ok" and time.monotonic() - t0 >= 10:
            self.log(f"  split: {n} bindings parsed and {len(r['result']['slices'])} slices "
                     f"printed in {time.monotonic() - t0:.0f} s")
        if r.get("status") != "ok":
            self.log(f"  split: slicing a module of {n} bindings failed in the sandbox "
                     f"({r.get('status')}: {str(r.get('error', ''))[:120]}); the passes go on "
                     "from it")
            return None
        slices = r["result"]["slices"]
        named = self._first([s for s in slices if s["how"] in ("binding", "cone")], cur)
        if named is not None:
            self._progress(n, named["size"], f"the {named['how']} the failure names")
            return self._accept(named)
        windows = {(s["lo"], s["hi"]): s for s in slices if s["how"] == "window"}
        return self._descend(cur, n, windows, r["result"]["bindings"])

    def _descend(self, cur: str, n: int, windows: dict, m: int) -> Optional[str]:
        """Down the tree of windows: into the first half that keeps the bug. One call a
        level: when the first half does not keep it, the second is entered untested (one
        failing binding is in one half or the other) and only the window reached at the end
        is judged; if it does not keep the bug either (the bug needs both halves), the walk
        falls back to the last window judged to keep it. With ``width`` > 1 both halves are
        judged side by side."""
        lo, hi, size, shown = 0, m, n, n
        good, untested = None, None    # the last window judged to keep the bug; one not judged
        while hi - lo > 1:
            mid = (lo + hi + 1) // 2
            kids = [windows.get(k) for k in ((lo, mid), (mid, hi))]
            if None in kids or not all(k.get("text") for k in kids):
                break   # below the levels printed: the next round parses the window reached
            if self.width > 1:
                won = self._first(kids, cur)
                untested = None
            elif self._first(kids[:1], cur) is not None:
                won, untested = kids[0], None
            else:
                won, untested = kids[1], kids[1]
            if won is None:
                break
            if untested is None:
                good = won
                self._progress(shown, won["size"], f"window {won['lo']}..{won['hi']}")
                shown = won["size"]
            size, lo, hi = won["size"], won["lo"], won["hi"]
        if untested is not None:
            if self._first([untested], cur) is not None:
                good = untested
                self._progress(shown, good["size"], f"window {good['lo']}..{good['hi']}")
            else:
                self.log(f"  split: window {untested['lo']}..{untested['hi']} does not keep "
                         "the bug (it needs bindings from both halves); back to the last "
                         "window that did")
        if good is None:
            self.log(f"  split: no slice of {n} bindings keeps the bug; the passes go on "
                     "from it")
            return None
        return self._accept(good)

    def _accept(self, s: dict) -> str:
        self.stats["split_accepted"] += 1
        self.on_accept(s["text"])
        return s["text"]
