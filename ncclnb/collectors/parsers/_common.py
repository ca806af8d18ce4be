"""What every parser shares: the error type, the partial-facts value, and
small helpers for cpulists and one-line messages."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Optional

from ...errors import InputError
from ...model.cpulist import Span, spans as _spans


class ParseError(InputError):
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


# ASCII digits only, everywhere a parser reads a number: `\d` and str.isdigit()
# also take "١" and "³", which int() then reads or refuses with a bare ValueError
CPULIST_RE = re.compile(r"[0-9]+(?:-[0-9]+)?(?:,[0-9]+(?:-[0-9]+)?)*")
INDEX_DIGITS = 6  # GPU, NUMA node and NIC indices
NUMBER_DIGITS = 18  # counts and sizes (CPUs, MiB, driver versions): below 2**63


def to_int(digits: str, what: str, max_digits: int = NUMBER_DIGITS) -> int:
    """ASCII digits -> int; ParseError (one line, naming ``what``) for
    anything else or for more than ``max_digits`` significant digits."""
    if not (isinstance(digits, str) and digits.isascii() and digits.isdigit()):
        raise ParseError(f"{what} {snippet(str(digits))} is not a number")
    if len(digits.lstrip("0")) > max_digits:
        raise ParseError(f"{what} {snippet(digits, 24)} is too long to be a number ({len(digits)} digits)")
    return int(digits)


def is_number(text: str) -> bool:
    """True for a run of ASCII digits (what :func:`to_int` reads)."""
    return text.isascii() and text.isdigit()


def cpulist_spans(text: str, what: str = "cpu list") -> tuple[Span, ...]:
    """ "0-3,8" -> ((0, 3), (8, 8)), never expanded; a malformed or too large
    list ("cpulist too large") is a ParseError."""
    try:
        return _spans(text, strict=True)
    except ValueError as exc:
        raise ParseError(f"{what} {snippet(text)}: {exc}") from None


def content_lines(text: str) -> list[str]:
    """Lines of a block, without `#` comment lines (fixture headers, notes)."""
    return [ln for ln in text.splitlines() if not ln.lstrip().startswith("#")]
