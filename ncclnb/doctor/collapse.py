"""Lines that differ only in NCCL's per-rank prefix are normalised once.

An NCCL_DEBUG=INFO log of many ranks prints the same messages from every
rank: ``gpu-node-007:20061:20068 [5] NCCL INFO Using network IB`` differs
from rank to rank only in ``host:pid:tid [dev]``. :class:`Normalizer` splits
that prefix off with one regex on the raw bytes and keeps, per distinct rest
of the line, what :func:`~ncclnb.doctor.normalize.normalize` makes of it (a
:class:`Template`); each later line with the same rest gets a
:class:`~ncclnb.doctor.normalize.Line` built from the template and its own
host and pid, without running the prefix regexes again.

Why that gives what ``normalize`` gives, line for line: a line that starts
with a letter-led host and ``:pid:tid [dev]`` matches none of the prefixes
``normalize`` tries before NCCL's, and NCCL's prefix regex can cut it only
at that ``[dev]``; everything after depends on the rest alone. The only way
the rest reaches back is by setting the host or the pid again (a second
prefix inside the message); the template is made from the rest behind two
different made-up prefixes, and a rest that does not give back each one's
own host and pid is not collapsed (nor is one holding the made-up hosts'
``\\x01``, or nothing but blanks). ``Template.inert`` is filled in by the
matcher once it has read the message (see ``match.Matcher.line``).

:func:`skip_inert` goes one step further, between the scanner and the
matcher: lines with a rest known inert never reach the matcher at all,
but for the few that stand in for what they would have done.
"""

from __future__ import annotations

import re
from typing import Iterator, Optional

from .normalize import Line, normalize

# NCCL's own prefix at the very start of a line; the rest begins at the blank after "[dev]"
PREFIX = re.compile(rb"([A-Za-z][\w.-]{0,254}):([0-9]{1,9}):[0-9]{1,9} \[[0-9]{1,4}\](?= )")
MAX_TEMPLATES = 1 << 15  # distinct rests remembered (the table starts again when full)
_PROBES = (("\x01a", 1), ("\x01b", 2))  # made-up (host, pid) the rest is tried behind


class Template:
    """What ``normalize`` reads from the rest of a line after NCCL's prefix."""

    __slots__ = ("text", "rank", "local_rank", "level", "ts", "where", "inert", "rest")

    def __init__(self, ln: Line, rest: bytes = b""):
        self.rest = rest  # the bytes it was made from (what skip_inert knows a line by)
        self.text, self.rank, self.local_rank = ln.text, ln.rank, ln.local_rank
        self.level, self.ts, self.where = ln.level, ln.ts, ln.where
        self.inert: Optional[bool] = None  # set by the matcher: a message no gate, signature or WARN rule reads

    def line(self, host: str, pid: int) -> Line:
        return Line(self.text, self.rank, self.local_rank, host, pid, self.level, self.ts, self.where)


def template_of(rest: bytes) -> Optional[Template]:
    """The template of ``rest`` (the bytes after ``host:pid:tid [dev]``, from
    the blank on), or None when a line ending in it must be normalised whole."""
    if b"\x01" in rest or not rest.strip():
        return None
    text = rest.decode("utf-8", "replace")
    got = []
    for host, pid in _PROBES:
        ln = normalize(f"{host}:{pid}:{pid} [0]{text}")
        if ln is None or ln.host != host or ln.pid != pid:
            return None  # the rest sets the host or the pid itself
        got.append(ln)
    a, b = got
    if (a.text, a.rank, a.local_rank, a.level, a.ts, a.where) != (b.text, b.rank, b.local_rank, b.level, b.ts, b.where):
        return None
    return Template(a, rest)


class Normalizer:
    """``normalize`` for raw lines, collapsing lines whose rest after NCCL's
    prefix was seen before. ``enabled=False`` normalises every line whole
    (the plain path, kept for tests and comparison)."""

    def __init__(self, enabled: bool = True, max_templates: int = MAX_TEMPLATES):
        self.enabled = enabled
        self.max_templates = max_templates
        self.templates: dict = {}  # rest bytes -> Template, or None (normalised whole)
        self.hosts: dict = {}  # host bytes -> str

    def __call__(self, raw: bytes) -> tuple[Optional[Line], Optional[Template]]:
        """(the normalised line or None for noise, its template or None)."""
        m = PREFIX.match(raw) if self.enabled else None
        if m is None:
            return normalize(raw.decode("utf-8", "replace")), None
        rest = raw[m.end() :]
        templates = self.templates
        try:
            tpl = templates[rest]
        except KeyError:
            if len(templates) >= self.max_templates:
                templates.clear()
            tpl = templates[rest] = template_of(rest)
        if tpl is None:
            return normalize(raw.decode("utf-8", "replace")), None
        hb = m.group(1)
        host = self.hosts.get(hb)
        if host is None:
            if len(self.hosts) >= self.max_templates:
                self.hosts.clear()
            host = self.hosts[hb] = hb.decode("ascii")
        return tpl.line(host, int(m.group(2))), tpl


class InertRests:
    """The rests (bytes after NCCL's prefix) whose message the matcher has
    read, found inert, and still holds in its match cache. ``generation``
    counts the times it was emptied (with that cache): a snapshot taken for a
    worker holds only while the generation is the same.

    ``repeats`` holds whole lines of the source being read whose next
    occurrence in it the matcher would read to no effect (an echo of a
    message its process printed before that counts for no signature, or an
    inert line without NCCL's prefix); it is emptied at each new source and
    with the caches that make it true."""

    def __init__(self, limit: int = MAX_TEMPLATES):
        self.rests: set = set()
        self.repeats: set = set()
        self.generation = 0
        self.limit = limit

    def add(self, rest: bytes) -> None:
        if len(self.rests) >= self.limit:
            self.clear()
        self.rests.add(rest)

    def add_repeat(self, line: bytes) -> None:
        if len(self.repeats) >= self.limit:
            self.repeats.clear()
        self.repeats.add(line)

    def clear(self) -> None:
        self.rests.clear()  # in place: skip_inert holds the sets themselves
        self.repeats.clear()
        self.generation += 1


def looks_back(line: bytes, before: bytes) -> bool:
    """Does the matcher's reading of ``line`` depend on ``before``, the candidate line right before
    it? Only to rejoin a hard-wrapped message (``line`` starts with a blank or a tab) or to pair a
    peer-access line with the one after it (``Matcher.line``); nothing else reads the line before."""
    return line[:1] in (b" ", b"\t") or b"can_device_access_peer" in before


def skip_inert(lines: Iterator[tuple[int, bytes]], inert, repeats=frozenset()) -> Iterator[tuple[int, bytes]]:
    """``lines`` (``(line number, raw)`` of one source) without the lines the
    matcher needs no more: NCCL-prefixed lines whose rest is in ``inert``
    (rests whose message the matcher has read and found inert, while its
    match cache still holds it) and whose host this source already showed,
    and lines in ``repeats`` (:attr:`InertRests.repeats`).
    What such a line would do is redone by the lines kept: a host is kept the
    first time it shows, and a line skipped right before a kept line that
    reads the line before it (:func:`looks_back`) is handed over before it
    (a line's source state, the message a hard-wrapped next line joins, is
    the last such line's). The iterator given is closed however this one ends."""
    hosts: set = set()
    pending = None
    match = PREFIX.match
    try:
        for item in lines:
            if item[1] in repeats:
                pending = item
                continue
            m = match(item[1])
            if m is not None and item[1][m.end() :] in inert:
                host = m.group(1)
                if host in hosts:
                    pending = item
                    continue
                hosts.add(host)
            if pending is not None:
                if pending[0] == item[0] - 1 and looks_back(item[1], pending[1]):
                    yield pending
                pending = None
            yield item
    finally:
        close = getattr(lines, "close", None)
        if close is not None:
            close()
