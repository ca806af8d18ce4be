"""Words a reader says: counts with their noun ("1 rank", "4 ranks"). Every
layer that writes text a user reads uses this, never "rank(s)"."""

from __future__ import annotations

from typing import Optional


def how_many(n: int, noun: str, plural: Optional[str] = None) -> str:
    """``how_many(1, "rank")`` -> "1 rank", ``how_many(4, "rank")`` -> "4 ranks": a
    number and its noun as a reader says them, never "rank(s)"."""
    return f"{n} {noun if n == 1 else (plural or noun + 's')}"
