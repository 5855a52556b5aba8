"""The source of every random decision the generator makes.

The generator is written once against ``Chooser``. Campaigns drive it with ``RandomChooser``
(a seeded PRNG: deterministic from (seed, generator version), and fast enough for 5 ms per
20-op program); property tests drive it with ``HypothesisChooser`` so Hypothesis can shrink
the choice sequence of a failing program (see ``fuzz.strategies``).
"""
from __future__ import annotations

import bisect
import itertools
import random
from typing import Sequence, TypeVar

T = TypeVar("T")


class Chooser:
    def integer(self, lo: int, hi: int) -> int:  # inclusive
        raise NotImplementedError

    def boolean(self, p: float = 0.5) -> bool:
        raise NotImplementedError

    def uniform(self, lo: float, hi: float) -> float:
        raise NotImplementedError

    def choice(self, seq: Sequence[T]) -> T:
        return seq[self.integer(0, len(seq) - 1)]

    def weighted(self, items: Sequence[T], weights: Sequence[float]) -> T:
        return self.weighted_cum(items, list(itertools.accumulate(weights)))

    def weighted_cum(self, items: Sequence[T], cum: Sequence[float]) -> T:
        """``weighted`` with precomputed cumulative weights (the op table is drawn from often)."""
        x = self.uniform(0.0, cum[-1])
        return items[min(bisect.bisect_right(cum, x), len(items) - 1)]

    def sample(self, seq: Sequence[T], k: int) -> list[T]:
        pool = list(seq)
        out = []
        for _ in range(min(k, len(pool))):
            out.append(pool.pop(self.integer(0, len(pool) - 1)))
        return out


class RandomChooser(Chooser):
    def __init__(self, seed: int):
        self.rng = random.Random(seed)

    def integer(self, lo, hi):
        return self.rng.randint(lo, hi)

    def boolean(self, p=0.5):
        return self.rng.random() < p

    def uniform(self, lo, hi):
        return self.rng.uniform(lo, hi)


class HypothesisChooser(Chooser):
    """Draws through a Hypothesis ``data`` object; smaller draws shrink toward simpler programs."""

    def __init__(self, data):
        from hypothesis import strategies as st

        self._st = st
        self.data = data

    def integer(self, lo, hi):
        return self.data.draw(self._st.integers(lo, hi))

    def boolean(self, p=0.5):
        # Shrinks toward False; p is honoured approximately through an integer draw.
        return self.data.draw(self._st.integers(0, 999)) >= 1000 * (1 - p)

    def uniform(self, lo, hi):
        return self.data.draw(self._st.floats(lo, hi, allow_nan=False, allow_infinity=False))
