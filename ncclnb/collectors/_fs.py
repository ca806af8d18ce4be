"""Small helpers for reading a (possibly recorded) filesystem tree."""
from __future__ import annotations

import os
from typing import Iterable, Optional


def under(root: str, path: str) -> str:
    """``path`` (absolute, as on a live machine) inside the tree at ``root``."""
    return os.path.join(root, path.lstrip("/"))


def read_text(path: str, limit: int = 1 << 20) -> Optional[str]:
    """The file's text, stripped; None if it cannot be read. sysfs attributes
    that the driver refuses (``speed`` of a down link) raise EINVAL: None too."""
    try:
        with open(path, "rb") as fh:
            return fh.read(limit).decode("utf-8", "replace").strip()
    except OSError:
        return None


def read_int(path: str) -> Optional[int]:
    text = read_text(path)
    if text is None:
        return None
    try:
        return int(text.split()[0], 0) if text else None
    except ValueError:
        return None


def listdir(path: str) -> list[str]:
    """Sorted entries of a directory; empty if it is absent or unreadable."""
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []


def parse_cpulist(text: str) -> list[int]:
    """``"0-3,8,10-11"`` -> ``[0, 1, 2, 3, 8, 10, 11]``. Raises ValueError on junk."""
    cpus: list[int] = []
    for part in text.replace(" ", "").split(","):
        if not part:
            continue
        lo, sep, hi = part.partition("-")
        if sep:
            cpus.extend(range(int(lo), int(hi) + 1))
        else:
            cpus.append(int(lo))
    return cpus


def format_cpulist(cpus: Iterable[int]) -> str:
    """``[0, 1, 2, 3, 8]`` -> ``"0-3,8"``: the form of ``nvidia-smi topo -m``
    and ``/sys/.../cpulist``."""
    ordered = sorted(set(cpus))
    parts: list[str] = []
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        if j > i:
            parts.append(f"{ordered[i]}-{ordered[j]}")
        else:
            parts.extend(str(c) for c in ordered[i:j + 1])
        i = j + 1
    return ",".join(parts)
