"""The source of the fuzzer's random decisions: a :class:`Chooser` draws small integers, seeded
(:class:`RandomChooser`, the long run), replayed from a list (:class:`ReplayChooser`, shrinking and
reproducers) or drawn by hypothesis (tests). Smaller draws mean simpler programs."""

from __future__ import annotations

import random
from typing import Sequence

class Chooser:
    """The source of every random decision of :func:`generate`: ``draw(n)`` is an int in ``[0, n)``.

    Decisions are made so that smaller draws give simpler programs (0 = the simplest option), which is
    what makes shrinking a list of choices towards zeros shrink the program.
    """

    def __init__(self):
        self.record: list[int] = []

    def _draw(self, n: int) -> int:
        raise NotImplementedError

    def draw(self, n: int) -> int:
        if n <= 1:
            return 0
        v = self._draw(n)
        self.record.append(v)
        return v

    def choice(self, seq: Sequence):
        return seq[self.draw(len(seq))]

    def coin(self, p: float) -> bool:
        """True with probability ``p`` (a zero draw is False)."""
        return self.draw(100) >= 100 - round(100 * p)

    def between(self, lo: int, hi: int) -> int:
        return lo + self.draw(hi - lo + 1)


class RandomChooser(Chooser):
    """Draws from ``random.Random(seed)``."""

    def __init__(self, seed):
        super().__init__()
        self.rng = random.Random(seed)

    def _draw(self, n: int) -> int:
        return self.rng.randrange(n)


class ReplayChooser(Chooser):
    """Replays a list of choices (clamped to each draw's range); zeros once the list is exhausted."""

    def __init__(self, choices: Sequence[int]):
        super().__init__()
        self.choices = list(choices)
        self.pos = 0

    def _draw(self, n: int) -> int:
        v = self.choices[self.pos] if self.pos < len(self.choices) else 0
        self.pos += 1
        return min(max(int(v), 0), n - 1)


class _HypothesisChooser(Chooser):
    def __init__(self, draw):
        super().__init__()
        self._hdraw = draw

    def _draw(self, n: int) -> int:
        from hypothesis import strategies as st
        return self._hdraw(st.integers(0, n - 1))
