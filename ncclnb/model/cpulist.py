"""The kernel's CPU list format ("0-3,8,10-11"), used by /sys/.../cpulist,
``nvidia-smi topo -m`` CPU Affinity and the ``cpus`` / ``cpu_affinity`` facts."""
from __future__ import annotations

import re
from typing import Iterable, Optional

_PART = re.compile(r"(\d+)(?:-(\d+))?")
MAX_RANGE = 1 << 20  # no machine has a million CPUs: a larger range is garbage, not a request for memory


def parse_cpulist(text: Optional[str], *, strict: bool = False) -> set[int]:
    """"0-3,8" -> {0, 1, 2, 3, 8}.

    Lenient by default: parts that are not numbers or ranges are skipped, so
    odd facts never raise where they are only displayed or checked. With
    ``strict=True`` any such part, a backwards range or a huge one raises
    ValueError (for parsers, which must refuse malformed text)."""
    cpus: set[int] = set()
    if not isinstance(text, str):
        if strict:
            raise ValueError(f"cpu list must be text, not {type(text).__name__}")
        return cpus
    for part in text.replace(" ", "").split(","):
        if not part:
            continue
        m = _PART.fullmatch(part)
        lo = int(m.group(1)) if m else 0
        hi = int(m.group(2)) if m and m.group(2) else lo
        if not m or hi < lo or hi - lo > MAX_RANGE:
            if strict:
                raise ValueError(f"bad cpu list part {part[:20]!r}")
            continue
        cpus.update(range(lo, hi + 1))
    return cpus


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
