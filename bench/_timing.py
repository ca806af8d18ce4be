"""Timing shared by the benchmarks."""

from __future__ import annotations

import time


def best_of(fn, repeat):
    """(the fastest of ``repeat`` calls of ``fn`` in seconds, the last call's value)."""
    best, value = None, None
    for _ in range(repeat):
        t = time.perf_counter()
        value = fn()
        dt = time.perf_counter() - t
        best = dt if best is None else min(best, dt)
    return best, value
