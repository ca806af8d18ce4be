"""The recorded filesystem trees under tests/data/sysfs, copied for a test."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

SYSFS_DATA = Path(__file__).resolve().parent / "data" / "sysfs"


def materialize(name: str, dest: Path) -> Path:
    """Copy recorded tree ``name`` to ``dest`` and create the symlinks its
    SYMLINKS.txt lists (git keeps those badly). Returns the tree's root."""
    src = SYSFS_DATA / name
    if not src.is_dir():
        raise FileNotFoundError(f"no recorded tree {src}")
    root = dest / name
    shutil.copytree(src, root)
    for line in (root / "SYMLINKS.txt").read_text().splitlines():
        if not line.strip():
            continue
        path, target = (part.strip() for part in line.split(" -> ", 1))
        link = root / path
        link.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, link)
    return root
