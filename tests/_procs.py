"""The process table, read from /proc: what a test left running."""

from __future__ import annotations

import os
from pathlib import Path


def processes_mentioning(text: str) -> list:
    """Live, non-zombie processes (other than this one) whose environment or
    command line names ``text`` (a run directory, a run id)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            blob = (entry / "environ").read_bytes() + (entry / "cmdline").read_bytes()
            if text.encode() in blob and b") Z" not in (entry / "stat").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found
