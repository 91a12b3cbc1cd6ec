"""Shrinking: reduces the choice list of a failing program (deleting spans, lowering values) to a minimal
program that still fails the same way."""

from __future__ import annotations

import time
from typing import Callable, Sequence

from .generate import case_from_choices
from .oracle import Outcome, _same_failure


def shrink(choices: Sequence[int], failure: Outcome, evaluate: Callable[[list[int]], Outcome], *,
           max_size: int = 10, budget_s: float = 300.0, max_tries: int = 1000,
           log: Callable[[str], None] = lambda s: None) -> tuple[list[int], Outcome]:
    """The smallest choice list found (by deleting spans and lowering values) whose program still fails
    the same way as ``failure`` under ``evaluate``; with its outcome."""
    best = list(choices)
    best_out = failure
    best_src = case_from_choices(best, max_size=max_size).source
    deadline = time.monotonic() + budget_s
    tries = 0
    seen = {best_src}

    def attempt(cand: list[int]) -> bool:
        nonlocal best, best_out, best_src, tries
        if tries >= max_tries or time.monotonic() > deadline:
            return False
        src = case_from_choices(cand, max_size=max_size)
        key = src.source + src.header()
        if key in seen:
            return False
        seen.add(key)
        tries += 1
        out = evaluate(cand)
        if _same_failure(failure, out):
            best, best_out, best_src = cand, out, src.source
            log(f"  shrunk to {len(best)} choices, {len(best_src)} characters")
            return True
        return False

    improved = True
    while improved and tries < max_tries and time.monotonic() < deadline:
        improved = False
        for size in (32, 16, 8, 4, 2, 1):
            i = 0
            while i < len(best):
                if attempt(best[:i] + best[i + size:]):
                    improved = True
                elif i and best[i - 1] and attempt(best[:i - 1] + [best[i - 1] - 1] + best[i + size:]):
                    improved = True         # the span and one fewer of what the draw before it counted
                else:
                    i += size
        for i in range(len(best)):
            for v in (0, best[i] // 2, best[i] - 1):
                if 0 <= v < best[i] and attempt(best[:i] + [v] + best[i + 1:]):
                    improved = True
                    break
    return best, best_out
