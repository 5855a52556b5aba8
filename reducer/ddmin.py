"""The one generic driver: applies delta passes with ddmin-style chunking (as llvm-reduce does).

A pass enumerates the elements it could change in a state (nodes to remove, dims to shrink,
attributes to reset...) and builds the candidate that changes a given subset of them. The
driver first tries changing all elements at once, then halves the chunks that were refused,
down to single elements; an accepted chunk stays changed for the rest of the pass. Passes run
coarse to fine, and the whole list repeats until a round changes nothing.

A candidate a pass cannot build (``None``: ill-formed, checked without TVM) or that is not
strictly smaller than the current state (``smaller``) is skipped without an oracle call.
The second kind is counted per pass (``no_progress``), and a pass run that built candidates
but none smaller is logged: an edit the size key does not count is never accepted, and that
must show rather than pass silently.

A chunk the oracle refused is not asked about again in a later round while the state's
``structure`` (its bindings, functions, outputs...) is unchanged: only shapes, dtypes or
options changed since, which rarely make a refused removal possible, and re-asking is most
of the cost of repeating the pass list.
With ``width`` > 1 the chunks of one level are judged ``width`` at a time in parallel; the
first accepted one in a batch wins and the chunks after it are judged again on the new state.
"""
from __future__ import annotations

import time
from typing import Any, Callable, Optional, Protocol, Sequence

State = Any


class DeltaPass(Protocol):
    name: str

    def count(self, state: State) -> int:
        """How many elements this pass could change in ``state``."""

    def apply_many(self, state: State, chosen: Sequence[frozenset]) -> list[Optional[State]]:
        """The candidate that changes exactly the elements in each set (``None``: ill-formed)."""


class Cancelled(Exception):
    pass


class Driver:
    def __init__(self, test: Callable[[list], list[bool]], smaller: Callable[[State, State], bool],
                 width: int = 1, log: Callable[[str], None] = lambda s: None,
                 on_accept: Callable[[State], None] = lambda s: None,
                 deadline: Optional[float] = None,
                 structure: Callable[[State], Any] = lambda s: None):
        self.test, self.smaller, self.width = test, smaller, max(1, width)
        self.structure = structure
        self.refused: dict = {}   # (pass, chunk description) -> structure when refused
        self.log, self.on_accept, self.deadline = log, on_accept, deadline
        self.skipped = 0      # candidates dropped before the oracle (ill-formed or not smaller)
        self.accepted = 0
        self.no_progress = 0  # candidates built but not smaller than the state
        # name -> [oracle candidates, accepted, no_progress]
        self.per_pass: dict[str, list[int]] = {}
        self.size: Callable[[State], Any] = lambda s: None   # for the log: the state's size
        self._t0 = time.monotonic()

    def _rate(self, state: State) -> str:
        """Where the reduction is, for the log: size, candidates judged, judged per second."""
        calls = sum(v[0] for v in self.per_pass.values())
        secs = time.monotonic() - self._t0
        size = self.size(state)
        return ((f"{size}, " if size is not None else "")
                + f"{calls} candidates judged, {rate(calls, secs)}")

    def _check_time(self):
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise Cancelled("time budget spent")

    def run_pass(self, state: State, p: DeltaPass) -> State:
        n = p.count(state)
        if n == 0:
            return state
        stat = self.per_pass.setdefault(p.name, [0, 0, 0])
        n_built = n_smaller = 0
        changed: frozenset = frozenset()
        best = state
        chunks = [range(0, n)]
        while chunks:
            refused: list[range] = []
            k = 0
            while k < len(chunks):
                self._check_time()
                shape = self.structure(best)
                batch = []   # (position in chunks, chunk, memo key)
                while k < len(chunks) and len(batch) < self.width:
                    c, key = chunks[k], (p.name, _describe(p, state, chunks[k], n))
                    if shape is not None and self.refused.get(key) == shape:
                        self.skipped += 1   # refused before, on this same structure
                        refused.append(c)
                    else:
                        batch.append((k, c, key))
                    k += 1
                if not batch:
                    continue
                cands = p.apply_many(state, [changed | frozenset(c) for _, c, _ in batch])
                made = [i for i, x in enumerate(cands) if x is not None]
                live = [i for i in made if self.smaller(cands[i], best)]
                self.skipped += len(batch) - len(live)
                n_built, n_smaller = n_built + len(made), n_smaller + len(live)
                stat[2] += len(made) - len(live)
                self.no_progress += len(made) - len(live)
                verdicts = dict(zip(live, self.test([cands[i] for i in live]))) if live else {}
                stat[0] += len(live)
                won = next((i for i in live if verdicts[i]), None)
                for i in range(won if won is not None else len(batch)):
                    refused.append(batch[i][1])
                    if i in verdicts:
                        self.refused[batch[i][2]] = shape
                if won is None:
                    continue
                best = cands[won]
                changed |= frozenset(batch[won][1])
                stat[1] += 1
                self.accepted += 1
                self.on_accept(best)
                # Chunks after the winner were judged against the old state: judge them again.
                k = batch[won][0] + 1
            chunks = [h for c in sorted(refused, key=lambda r: r.start) if len(c) > 1
                      for h in _halves(c)]
        if changed:
            self.log(f"  {p.name}: changed {len(changed)} of {n} ({self._rate(best)})")
        elif n_built and not n_smaller:
            self.log(f"  {p.name}: no progress: {n_built} candidates, none smaller")
        return best

    def reduce(self, state: State, passes: Sequence[DeltaPass], max_rounds: int = 12) -> State:
        for rnd in range(max_rounds):
            before = self.accepted
            for p in passes:
                state = self.run_pass(state, p)
            self.log(f"round {rnd + 1}: {self.accepted - before} changes accepted "
                     f"({self._rate(state)})")
            if self.accepted == before:
                break
        return state


def rate(calls: int, secs: float) -> str:
    """Judging speed for the log: calls a second, or seconds a call when they are slow."""
    if calls and secs / calls >= 10:
        return f"{secs / calls:.0f} s a call"
    return f"{calls / secs if secs else 0:.2f} calls/s"


def _describe(p, state, chunk: range, n: int):
    """What a chunk changes, as stably as the pass can say (its elements' names)."""
    describe = getattr(p, "describe", None)
    if describe is not None:
        return describe(state, chunk)
    return (n, chunk.start, chunk.stop)


def _halves(r: range) -> list[range]:
    mid = r.start + (len(r) + 1) // 2
    return [range(r.start, mid), range(mid, r.stop)]
