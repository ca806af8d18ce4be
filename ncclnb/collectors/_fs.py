"""Small helpers for reading a (possibly recorded) filesystem tree."""

from __future__ import annotations

import os
from typing import Optional


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
