"""Bounds on what ncclnb reads from users, and the one bounded reader.

A snapshot is a few KB, a cluster report of thousands of nodes tens of MB,
and text pasted from a cluster rarely more than a few MB. Input past these
bounds is refused with one line, decided early: binary data after the first
``SNIFF_BYTES``, an oversized regular file from its size before its body is
read, a pipe (``-``, ``/dev/zero``) after ``limit`` bytes at most.
"""

from __future__ import annotations

import os
import re
import stat
from typing import BinaryIO, Union

from ..errors import InputError, path_error

SNIFF_BYTES = 64 << 10  # binary or not is decided on this much
TEXT_LIMIT = 64 << 20  # pasted text (ncclnb ingest)
JSON_LIMIT = 128 << 20  # snapshots, reports, diagnoses, repro results
JSON_CONTAINERS = 1 << 22  # "[" and "{" in one JSON file: ~150 per node snapshot
TEXT_LINES = 1 << 21  # lines of pasted text
DUMP_LIMIT = 48 << 20  # a flight-recorder dump, JSON or pickle (torch's 2000-entry buffer: a few MB)
DUMP_VALUES = 2_000_000  # values a pickled dump may create (~170k for 2000 entries with their frames)

_UTF16_MARKS = (b"\xff\xfe", b"\xfe\xff")


def human(n: int) -> str:
    """64 << 20 -> "64 MiB" (whole units, for messages)."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n} {unit}" if unit == "B" else f"{n:.0f} {unit}" if n == int(n) else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"  # pragma: no cover


_PATHLIKE = re.compile(r"[^\s]*(?:[/\\][^\s]*|\.(?:log|txt|gz|json|out|err|xml|pkl|pickle))")


def looks_like_path(text: str) -> bool:
    """Whether a one-line string given where a path or pasted text may go is
    meant as a path: no white space, and a directory separator or a file
    extension ncclnb reads. Such a string that names no file is a missing
    file, said as one; anything else is text."""
    if "\n" in text or len(text) >= 4096:  # a line of a log pasted with its newline is text
        return False
    s = text.strip()
    return bool(s) and _PATHLIKE.fullmatch(s) is not None


def looks_binary(head: bytes) -> bool:
    """NUL bytes, unless a UTF-16 byte-order mark says they are text."""
    return b"\x00" in head and not head.startswith(_UTF16_MARKS)


def read_bounded(
    source: Union[str, os.PathLike[str], BinaryIO],
    *,
    limit: int,
    label: str,
    what: str = "text",
    binary: str = "",
    error: type = InputError,
) -> bytes:
    """All of ``source`` (a path or a binary file object such as
    ``sys.stdin.buffer``) as bytes, or ``error`` with one line starting with
    ``label``: binary data (NUL bytes in the first ``SNIFF_BYTES``; the
    message says ``binary``, by default "binary data, not <what>"), or more
    than ``limit`` bytes; a path that cannot be opened or read raises
    :class:`~ncclnb.errors.PathError` (an OSError). At most
    ``limit + 1`` bytes are ever held."""
    binary = binary or f"binary data, not {what}"
    if isinstance(source, (str, os.PathLike)):
        try:
            with open(source, "rb") as fh:
                return _read(fh, limit, label, what, binary, error)
        except OSError as exc:  # the user's path: missing, a directory, no permission, an I/O error
            raise path_error(exc, label) from None
    return _read(source, limit, label, what, binary, error)


def _read(fh: BinaryIO, limit: int, label: str, what: str, binary: str, error: type) -> bytes:
    head = _read_upto(fh, min(SNIFF_BYTES, limit + 1))
    if looks_binary(head):
        raise error(f"{label}: {binary} (NUL bytes in its first {human(SNIFF_BYTES)})")
    size = _regular_size(fh)
    if size is not None and size > limit:
        raise error(f"{label}: too large ({human(size)}; ncclnb reads {what} of at most {human(limit)})")
    if len(head) < min(SNIFF_BYTES, limit + 1):
        return head  # all there was
    rest = _read_upto(fh, limit + 1 - len(head))
    if len(head) + len(rest) > limit:
        raise error(f"{label}: too large (more than {human(limit)}; ncclnb reads {what} of at most {human(limit)})")
    if not rest:
        return head
    data = head + rest
    if looks_binary(data):  # NULs further in: say so now rather than after decoding
        raise error(f"{label}: {binary} (it contains NUL bytes)")
    return data


def _read_upto(fh: BinaryIO, n: int) -> bytes:
    """Up to ``n`` bytes, fewer only at end of file (a pipe may return less per read)."""
    chunks: list[bytes] = []
    got = 0
    while got < n:
        chunk = fh.read(min(n - got, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        got += len(chunk)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def _regular_size(fh: BinaryIO):
    try:
        st = os.fstat(fh.fileno())
    except (AttributeError, OSError, ValueError):  # BytesIO and friends have no descriptor
        return None
    return st.st_size if stat.S_ISREG(st.st_mode) else None
