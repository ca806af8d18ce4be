"""Stream a byte source and yield only the lines worth reading.

The bulk of an NCCL_DEBUG=INFO log is channel and ring set-up that no
signature cares about, so per-line Python work would dominate. Instead each
chunk (a few MiB) is searched in C for the knowledge base's trigger
substrings (:data:`ncclnb.doctor.kb.TRIGGERS`); only the lines around a hit
are cut out, numbered and decoded. Memory stays at one chunk plus one
(bounded) line, however large the input.
"""
from __future__ import annotations

import re
from typing import BinaryIO, Iterator

from .kb import TRIGGERS

CHUNK = 8 << 20          # bytes read at a time
MAX_LINE = 64 << 10      # longer lines are cut here; the rest of the line is skipped
PIECE = 1 << 20          # bytes per read call

_TRIGGERS = tuple(re.compile(t.encode()) for t in TRIGGERS)


class LineScanner:
    """Iterate ``(line_number, raw_bytes)`` for candidate lines of ``stream``.

    ``lines_read`` holds the number of lines seen once iteration ends (a last
    line without newline counts). ``truncated`` is set when the stream ended
    early with an error (a cut .gz); iteration then stops quietly.
    """

    def __init__(self, stream: BinaryIO, chunk: int = CHUNK, max_line: int = MAX_LINE):
        self.stream = stream
        self.chunk = chunk
        self.max_line = max_line
        self.lines_read = 0
        self.bytes_read = 0
        self.truncated = ""

    def _read(self) -> bytes:
        # in pieces, so a stream that breaks (a cut .gz) loses at most one piece
        pieces, size = [], 0
        while size < self.chunk and not self.truncated:
            try:
                piece = self.stream.read(min(PIECE, self.chunk - size))
            except (EOFError, OSError, ValueError) as exc:  # truncated or corrupt compressed stream
                self.truncated = f"{type(exc).__name__}: {exc}".splitlines()[0] or type(exc).__name__
                break
            if not piece:
                break
            pieces.append(piece)
            size += len(piece)
        data = b"".join(pieces) if len(pieces) != 1 else pieces[0]
        self.bytes_read += len(data)
        return data

    def __iter__(self) -> Iterator[tuple[int, bytes]]:
        carry = b""
        skipping = False         # inside the cut-off tail of an over-long line
        base = 0                 # lines before the start of the buffer
        while True:
            data = self._read()
            if not data:
                break
            if skipping:
                nl = data.find(b"\n")
                if nl < 0:
                    continue
                data = data[nl + 1:]
                skipping = False
                base += 1
            buf = carry + data if carry else data
            end = buf.rfind(b"\n") + 1     # complete lines are buf[:end]
            if end:
                yield from self._candidates(buf, end, base)
                base += buf.count(b"\n", 0, end)
            carry = buf[end:]
            if len(carry) > self.max_line:
                # a line with no newline in sight: read its head, skip the rest
                yield from self._candidates(carry[: self.max_line] + b"\n", self.max_line + 1, base)
                carry = b""
                skipping = True
        if carry:
            yield from self._candidates(carry + b"\n", len(carry) + 1, base)
        if carry or skipping:
            base += 1
        self.lines_read = base

    def _candidates(self, buf: bytes, end: int, base: int) -> Iterator[tuple[int, bytes]]:
        starts = set()
        rfind = buf.rfind
        for rx in _TRIGGERS:
            for m in rx.finditer(buf, 0, end):
                starts.add(rfind(b"\n", 0, m.start()) + 1)
        if not starts:
            return
        count = buf.count
        line_no, pos = base + 1, 0
        for start in sorted(starts):
            line_no += count(b"\n", pos, start)
            pos = start
            stop = buf.find(b"\n", start, end)
            if stop < 0:
                stop = end
            if stop - start > self.max_line:
                stop = start + self.max_line
            yield line_no, buf[start:stop]
