"""Plain line-level ddmin over text (Zeller's algorithm: subsets, then complements, doubling
the granularity). It is the baseline ``bench/reduce_vs_ddmin.py`` measures the IR-aware
reducer against, and the reducer's fallback for a TVMScript file whose bug does not survive
TVM's own print/parse (then only text edits keep it)."""
from __future__ import annotations

from typing import Callable


def line_ddmin(text: str, test: Callable[[list[str]], list[bool]],
               max_calls: int | None = None, width: int = 1) -> tuple[str, int]:
    """The 1-minimal set of lines (joined) for which ``test`` holds, and the number of
    candidates judged. ``test`` takes a batch of candidate texts (``width`` at a time); the
    caller's cache decides what a repeat costs."""
    lines = text.splitlines(keepends=True)
    calls = 0
    n = 2
    while len(lines) >= 2:
        chunk = len(lines) / n
        parts = [lines[int(i * chunk):int((i + 1) * chunk)] for i in range(n)]
        parts = [p for p in parts if p]
        reduced = False
        # Subsets first, then complements (Zeller & Hildebrandt, ddmin).
        for kind in ("subset", "complement"):
            if kind == "complement" and len(parts) == 2:
                break   # complements of two halves are the halves themselves
            cands = []
            for i, p in enumerate(parts):
                if kind == "subset":
                    cands.append(p)
                else:
                    cands.append([ln for j, q in enumerate(parts) if j != i for ln in q])
            k = 0
            while k < len(cands):
                if max_calls is not None and calls >= max_calls:
                    return "".join(lines), calls
                batch = cands[k:k + width]
                verdicts = test(["".join(c) for c in batch])
                calls += len(batch)
                hit = next((i for i, v in enumerate(verdicts) if v), None)
                if hit is not None:
                    lines = batch[hit]
                    n = 2 if kind == "subset" else max(n - 1, 2)
                    reduced = True
                    break
                k += len(batch)
            if reduced:
                break
        if not reduced:
            if n >= len(lines):
                break
            n = min(len(lines), 2 * n)
    return "".join(lines), calls
