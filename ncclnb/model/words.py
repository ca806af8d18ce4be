"""Words a reader says: counts with their noun ("1 rank", "4 ranks") and runs of
numbers ("0-3,7"). Every layer that writes text a user reads uses this, never
"rank(s)"."""

from __future__ import annotations

from typing import Iterable, Optional


def how_many(n: int, noun: str, plural: Optional[str] = None) -> str:
    """``how_many(1, "rank")`` -> "1 rank", ``how_many(4, "rank")`` -> "4 ranks": a
    number and its noun as a reader says them, never "rank(s)"."""
    return f"{n} {noun if n == 1 else (plural or noun + 's')}"


def span(numbers: Iterable[int], limit: Optional[int] = None) -> str:
    """[0,1,2,3,7] -> "0-3,7". With ``limit``, at most that many ranges, then
    " ... (N ranks)": a title must stay short when 25,000 ranks are odd."""
    nums = sorted(set(numbers))
    parts: list[str] = []
    i = 0
    while i < len(nums) and (limit is None or len(parts) < limit):
        j = i
        while j + 1 < len(nums) and nums[j + 1] == nums[j] + 1:
            j += 1
        parts.append(str(nums[i]) if i == j else f"{nums[i]}-{nums[j]}")
        i = j + 1
    if i < len(nums):
        return ",".join(parts) + f" ... ({len(nums)} ranks)"
    return ",".join(parts)
