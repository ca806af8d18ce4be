"""What every parser shares: the error type, the partial-facts value, and
small helpers for cpulists and one-line messages."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Optional

from ...model.cpulist import parse_cpulist as _parse_cpulist


class ParseError(ValueError):
    """Text that looks like a known format but cannot be read. The message is
    one line and says what is wrong ("topo -m: row GPU3 has 6 cells, header
    has 8 columns")."""

    def __init__(self, message: str):
        super().__init__(one_line(message))


def one_line(text: str, limit: int = 300) -> str:
    """Collapse whitespace runs (newlines included) so a message stays one line."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def snippet(text: str, limit: int = 40) -> str:
    """A short, printable quote of user text for an error message."""
    flat = one_line(text, limit)
    return repr(flat)


@dataclass(frozen=True)
class Partial:
    """Facts one block of pasted text gave, keyed like the model's fields.

    ``gpus`` maps the GPU index the text shows to ``Gpu`` field values;
    ``host``, ``links`` and ``versions`` map field names of ``Host``,
    ``Links`` and ``Versions`` to values. ``nics``/``env`` are ``None`` when
    the block says nothing about them (an empty tuple/dict is a fact).
    ``derived_numa_nodes`` are NUMA nodes inferred from GPU CPU affinity,
    used only when no block lists the real ones. ``missing`` gives reasons
    for facts the block shows as absent (``N/A``), GPU facts keyed by the GPU
index the text shows (``gpus[3].numa_node``); ``notes`` are remarks on
    where a fact came from, added to the snapshot's ``sources``."""

    kind: str
    host: dict[str, Any] = field(default_factory=dict)
    gpus: dict[int, dict[str, Any]] = field(default_factory=dict)
    links: dict[str, Any] = field(default_factory=dict)
    nics: Optional[tuple] = None
    versions: dict[str, Any] = field(default_factory=dict)
    env: Optional[dict[str, str]] = None
    derived_numa_nodes: tuple = ()
    missing: dict[str, str] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)


CPULIST_RE = re.compile(r"\d+(?:-\d+)?(?:,\d+(?:-\d+)?)*")


def parse_cpulist(text: str) -> set[int]:
    """"0-3,8" -> {0, 1, 2, 3, 8}; malformed lists are a ParseError."""
    try:
        return _parse_cpulist(text, strict=True)
    except ValueError as exc:
        raise ParseError(f"cpu list {snippet(text)}: {exc}") from None





def content_lines(text: str) -> list[str]:
    """Lines of a block, without `#` comment lines (fixture headers, notes)."""
    return [ln for ln in text.splitlines() if not ln.lstrip().startswith("#")]
