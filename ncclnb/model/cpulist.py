"""The kernel's CPU list format ("0-3,8,10-11"), used by /sys/.../cpulist,
``nvidia-smi topo -m`` CPU Affinity and the ``cpus`` / ``cpu_affinity`` facts.

A cpulist is kept as ranges wherever a count or a display is enough
(:func:`spans`, :func:`count`, :func:`format_spans`); only
:func:`parse_cpulist` expands it into a set of CPU ids, and that set is
bounded: CPU ids are below :data:`MAX_CPUS` (Linux builds for at most 8192),
a list has at most :data:`MAX_CPUS` parts, and overlapping parts are merged
before anything is expanded.
"""

from __future__ import annotations

import re
from typing import Iterable, Optional

from ..errors import InputError

MAX_CPUS = 1 << 16  # CPU ids are 0..MAX_CPUS-1; a larger id is garbage, not a request for memory
MAX_PARTS = MAX_CPUS  # comma-separated parts in one list
_DIGITS = 10  # more digits than this is past MAX_CPUS whatever they say
_PART = re.compile(r"([0-9]+)(?:-([0-9]+))?")  # ASCII digits only: "١-٣" is not a cpulist

Span = tuple[int, int]  # inclusive (first, last)


def spans(text: Optional[str], *, strict: bool = False) -> tuple[Span, ...]:
    """ "0-3,8,2-5" -> ((0, 5), (8, 8)): sorted, merged, inclusive ranges; no
    CPU id is expanded.

    Lenient by default: parts that are not numbers or ranges (ASCII digits),
    backwards ranges, ids of ``MAX_CPUS`` or more, and parts past the first
    ``MAX_PARTS`` are skipped, so odd facts never raise where they are only
    displayed or checked. With ``strict=True`` each of those raises
    InputError, a ValueError (for parsers, which must refuse malformed text), as does a
    list whose parts add up to more than ``MAX_CPUS`` CPUs ("cpulist too
    large")."""
    if not isinstance(text, str):
        if strict:
            raise InputError(f"cpu list must be text, not {type(text).__name__}")
        return ()
    parts = text.split(",", MAX_PARTS)
    if len(parts) > MAX_PARTS:
        if strict:
            raise InputError(f"cpulist too large: more than {MAX_PARTS} parts")
        parts = parts[:MAX_PARTS]
    found: list[Span] = []
    listed = 0
    for raw in parts:
        part = raw.replace(" ", "")
        if not part:
            continue
        m = _PART.fullmatch(part)
        if not m:
            if strict:
                raise InputError(f"bad cpu list part {part[:20]!r}")
            continue
        lo_text, hi_text = m.group(1), m.group(2) or m.group(1)
        if len(lo_text) > _DIGITS or len(hi_text) > _DIGITS or int(hi_text) >= MAX_CPUS:
            if strict:
                raise InputError(f"cpulist too large: {part[:24]!r} names a CPU past {MAX_CPUS - 1}")
            continue
        lo, hi = int(lo_text), int(hi_text)
        if hi < lo:
            if strict:
                raise InputError(f"bad cpu list part {part[:20]!r} (backwards range)")
            continue
        listed += hi - lo + 1
        if strict and listed > MAX_CPUS:
            raise InputError(f"cpulist too large: its parts list more than {MAX_CPUS} CPUs")
        found.append((lo, hi))
    return merge_spans(found)


def merge_spans(ranges: Iterable[Span]) -> tuple[Span, ...]:
    """Sort and merge inclusive ranges that overlap or touch."""
    merged: list[list[int]] = []
    for lo, hi in sorted(ranges):
        if merged and lo <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], hi)
        else:
            merged.append([lo, hi])
    return tuple((lo, hi) for lo, hi in merged)


def count(text: Optional[str], *, strict: bool = False) -> int:
    """Number of distinct CPUs in a cpulist, without expanding it."""
    return sum(hi - lo + 1 for lo, hi in spans(text, strict=strict))


def parse_cpulist(text: Optional[str], *, strict: bool = False) -> set[int]:
    """ "0-3,8" -> {0, 1, 2, 3, 8}: the CPU ids, at most ``MAX_CPUS`` of
    them. Leniency and errors as :func:`spans`; prefer :func:`spans` or
    :func:`count` where ranges or a number are enough."""
    cpus: set[int] = set()
    for lo, hi in spans(text, strict=strict):
        cpus.update(range(lo, hi + 1))
    return cpus


def format_spans(ranges: Iterable[Span]) -> str:
    """((0, 3), (8, 8)) -> "0-3,8" (merged first)."""
    return ",".join(f"{lo}-{hi}" if hi > lo else str(lo) for lo, hi in merge_spans(ranges))


def format_cpulist(cpus: Iterable[int]) -> str:
    """{0, 1, 2, 3, 8} -> "0-3,8"."""
    out: list[str] = []
    run: list[int] = []
    for cpu in sorted(set(cpus)):
        if run and cpu == run[-1] + 1:
            run.append(cpu)
            continue
        if run:
            out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
        run = [cpu]
    if run:
        out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
    return ",".join(out)


def covers(outer: Optional[str], inner: Optional[str]) -> bool:
    """Every CPU of cpulist ``inner`` is in ``outer`` (False when ``inner`` is
    empty). Linear in the ranges of both; nothing is expanded."""
    a, b = spans(outer), spans(inner)
    if not b:
        return False
    i = 0
    for lo, hi in b:  # merged ranges are disjoint and do not touch: a covered range lies inside one
        while i < len(a) and a[i][1] < lo:
            i += 1
        if i == len(a) or not (a[i][0] <= lo and hi <= a[i][1]):
            return False
    return True


def overlaps(first: Optional[str], second: Optional[str]) -> bool:
    """The two cpulists share at least one CPU. Linear in their ranges."""
    a, b = spans(first), spans(second)
    i = j = 0
    while i < len(a) and j < len(b):
        if a[i][1] < b[j][0]:
            i += 1
        elif b[j][1] < a[i][0]:
            j += 1
        else:
            return True
    return False
