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
collector once it has read the message (see ``_Collector.line``).
"""
from __future__ import annotations

import re
from typing import Optional

from .normalize import Line, normalize

# NCCL's own prefix at the very start of a line; the rest begins at the blank after "[dev]"
PREFIX = re.compile(rb"([A-Za-z][\w.-]{0,254}):([0-9]{1,9}):[0-9]{1,9} \[[0-9]{1,4}\](?= )")
MAX_TEMPLATES = 1 << 15   # distinct rests remembered (the table starts again when full)
_PROBES = (("\x01a", 1), ("\x01b", 2))   # made-up (host, pid) the rest is tried behind


class Template:
    """What ``normalize`` reads from the rest of a line after NCCL's prefix."""

    __slots__ = ("text", "rank", "local_rank", "level", "ts", "where", "inert")

    def __init__(self, ln: Line):
        self.text, self.rank, self.local_rank = ln.text, ln.rank, ln.local_rank
        self.level, self.ts, self.where = ln.level, ln.ts, ln.where
        self.inert: Optional[bool] = None   # set by the collector: a message no gate, signature or WARN rule reads

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
            return None   # the rest sets the host or the pid itself
        got.append(ln)
    a, b = got
    if (a.text, a.rank, a.local_rank, a.level, a.ts, a.where) != (b.text, b.rank, b.local_rank, b.level, b.ts, b.where):
        return None
    return Template(a)


class Normalizer:
    """``normalize`` for raw lines, collapsing lines whose rest after NCCL's
    prefix was seen before. ``enabled=False`` normalises every line whole
    (the plain path, kept for tests and comparison)."""

    def __init__(self, enabled: bool = True, max_templates: int = MAX_TEMPLATES):
        self.enabled = enabled
        self.max_templates = max_templates
        self.templates: dict = {}   # rest bytes -> Template, or None (normalised whole)
        self.hosts: dict = {}       # host bytes -> str

    def __call__(self, raw: bytes) -> tuple[Optional[Line], Optional[Template]]:
        """(the normalised line or None for noise, its template or None)."""
        m = PREFIX.match(raw) if self.enabled else None
        if m is None:
            return normalize(raw.decode("utf-8", "replace")), None
        rest = raw[m.end():]
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
