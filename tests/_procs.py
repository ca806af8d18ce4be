"""The process table, read from /proc: what a test left running."""

from __future__ import annotations

import os
import time
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


def stat_fields(pid) -> list[str] | None:
    """Fields of /proc/PID/stat after the command name: [state, ppid, pgrp, session, ...]."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            data = fh.read().decode("ascii", "replace")
    except OSError:
        return None
    return data[data.rindex(")") + 2 :].split()


def processes_where(where) -> list[int]:
    """Live (not zombie) pids whose stat fields satisfy ``where``."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            fields = stat_fields(name)
            if fields and fields[0] != "Z" and where(fields):
                found.append(int(name))
    return found


def wait_for(what, deadline_s: float = 60):
    """``what()`` once it is true, polled until ``deadline_s`` (a bound that keeps a failure from hanging the
    suite, never a timing assertion); its last value otherwise."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        got = what()
        if got:
            return got
        time.sleep(0.005)
    return what()
