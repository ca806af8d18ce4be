"""Words a reader says: counts with their noun ("1 rank", "4 ranks") and runs of
numbers ("0-3,7"). Every layer that writes text a user reads uses this, never
"rank(s)"."""

from __future__ import annotations

from typing import Iterable, Optional


def how_many(n: int, noun: str, plural: Optional[str] = None) -> str:
    """``how_many(1, "rank")`` -> "1 rank", ``how_many(4, "rank")`` -> "4 ranks": a
    number and its noun as a reader says them, never "rank(s)"."""
    return f"{n} {noun if n == 1 else (plural or noun + 's')}"


def span_parts(numbers: Iterable[int], limit: Optional[int] = None) -> tuple[list[str], int, bool]:
    """[0,1,2,3,7] -> (["0-3", "7"], 5, False): the runs of the distinct
    numbers as ranges, how many distinct numbers there are, and whether
    ``limit`` (at most that many ranges) cut the list short. What every
    "0-3,7" of ncclnb is written from; each caller says the cut its own way."""
    nums = sorted(set(numbers))
    parts: list[str] = []
    i = 0
    while i < len(nums) and (limit is None or len(parts) < limit):
        j = i
        while j + 1 < len(nums) and nums[j + 1] == nums[j] + 1:
            j += 1
        parts.append(str(nums[i]) if i == j else f"{nums[i]}-{nums[j]}")
        i = j + 1
    return parts, len(nums), i < len(nums)


def span(numbers: Iterable[int], limit: Optional[int] = None) -> str:
    """[0,1,2,3,7] -> "0-3,7". With ``limit``, at most that many ranges, then
    " ... (N ranks)": a title must stay short when 25,000 ranks are odd."""
    parts, count, cut = span_parts(numbers, limit)
    return ",".join(parts) + (f" ... ({count} ranks)" if cut else "")
