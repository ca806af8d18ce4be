"""A machine-independent measure of work for the linear-time tests: lines
executed inside ncclnb plus Python calls anywhere, counted with a tracer,
so "linear" is checked by counting, never by timing."""

from __future__ import annotations

import sys
from pathlib import Path

import ncclnb

NCCLNB = str(Path(ncclnb.__file__).resolve().parent)


class OverBudget(BaseException):
    """Raised by the tracer; a BaseException so check()'s per-check guard lets it through."""


def work(fn, budget: float = float("inf")) -> int:
    """Lines executed in ncclnb plus Python calls anywhere while ``fn()`` runs;
    past ``budget`` the call is stopped (the count returned is then over it)."""
    count = 0

    def local(frame, event, arg):
        nonlocal count
        if event == "line":
            count += 1
            if count > budget:
                raise OverBudget(count)
        return local

    def tracer(frame, event, arg):
        nonlocal count
        count += 1
        if count > budget:
            raise OverBudget(count)
        return local if frame.f_code.co_filename.startswith(NCCLNB) else None

    sys.settrace(tracer)
    try:
        fn()
    except OverBudget:
        pass
    finally:
        sys.settrace(None)
    return count
