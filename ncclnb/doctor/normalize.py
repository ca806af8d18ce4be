"""Strip what launchers and loggers put in front of a log line.

``normalize(line)`` peels, in any order and nesting, ANSI colours, CR,
timestamps (ISO 8601, syslog, dmesg), torchrun's ``[default3]:``, PyTorch's
``[rank3]:``, OpenMPI's ``[1,3]<stderr>:``, Slurm's ``3: ``, pdsh's
``host: ``, glog's ``[W304 17:41:12.735149131 ProcessGroupNCCL.cpp:4561]``
and NCCL's ``host:pid:tid [dev] file.cc:12 NCCL WARN``; it keeps what they
say (rank, local rank, host, pid, level, time) in a :class:`Line`. C++
``frame #N`` lines give None: they are noise, never evidence.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][A-Za-z0-9]")
FRAME = re.compile(r"^\s*(?:frame #\d+:|#\d+ 0x[0-9a-f]+ in )")

_NCCL = re.compile(
    r"(?P<host>[^\s:\[\]]+):(?P<pid>\w+)(?::(?P<tid>\w+))? \[(?P<dev>\d+)\] "
    r"(?:(?P<where>[^\n]{0,240}?) )?(?:NCCL )?(?P<lvl>INFO|WARN|TRACE|ABORT)\b ?")
_PREFIXES = (
    ("ts", re.compile(r"\[?(?P<ts>\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?)\]?[ \t]*(?:\| *)?")),
    ("syslog", re.compile(r"(?P<ts>[A-Z][a-z]{2} +\d{1,2} \d{2}:\d{2}:\d{2}) (?P<host>[\w.-]+) (?:[\w./-]+(?:\[\d+\])?: )?")),
    ("dmesg", re.compile(r"\[(?:\s*\d+\.\d+|[A-Z][a-z]{2} [A-Z][a-z]{2} +\d+ \d{2}:\d{2}:\d{2} \d{4})\][ \t]*")),
    ("rank", re.compile(r"\[rank(?P<rank>\d+)\]:[ \t]?")),
    ("local", re.compile(r"\[default(?P<local>\d+)\]:[ \t]?")),
    ("mpi", re.compile(r"\[\d+,(?P<rank>\d+)\]<(?:stdout|stderr)>:[ \t]?")),
    ("glog", re.compile(r"\[(?P<lvl>[IWEF])(?P<ts>\d{3,4} \d{2}:\d{2}:\d{2}(?:\.\d+)?)?[ \t]*(?:\d+ )?[\w.\-/]+:\d+\][ \t]*")),
    ("nccl", _NCCL),
    ("slurm", re.compile(r"(?P<rank>\d{1,5}): (?=\S)")),
    ("stream", re.compile(r"\S+ \[(?:stdout|stderr)\] ")),
    ("pdsh", re.compile(r"(?P<host>\d{1,3}(?:\.\d{1,3}){3}|[A-Za-z][\w-]*\d[\w.-]*): (?=\S)")),
    ("space", re.compile(r"[ \t]+")),
)
_MSG_RANK = re.compile(r"\[(?:PG ID \d+ PG GUID [^\]]{0,80}? )?Rank (?P<rank>\d+)\]")


@dataclass
class Line:
    """One normalised line: ``text`` is the message, the rest what its prefixes said."""
    text: str
    rank: Optional[int] = None
    local_rank: Optional[int] = None
    host: Optional[str] = None
    pid: Optional[int] = None
    level: Optional[str] = None   # "INFO"/"WARN" (NCCL), "I"/"W"/"E"/"F" (glog)
    ts: Optional[str] = None


def clean(raw: str) -> str:
    """The line as evidence: no ANSI colours, no CR or trailing whitespace."""
    if "\x1b" in raw:
        raw = ANSI.sub("", raw)
    return raw.replace("\r", "").rstrip()


def normalize(raw: str) -> Optional[Line]:
    """Peel the prefixes off ``raw``; None for C++ frame noise."""
    text = clean(raw)
    if FRAME.match(text):
        return None
    out = Line(text="")
    for _ in range(12):  # prefixes nest a few deep at most
        for kind, rx in _PREFIXES:
            m = rx.match(text)
            if not m or m.end() == 0:
                continue
            g = m.groupdict()
            if kind == "slurm" and out.rank is None:
                out.rank = int(g["rank"])
            elif g.get("rank") and kind != "slurm":
                out.rank = int(g["rank"])
            if g.get("local"):
                out.local_rank = int(g["local"])
            if g.get("host"):
                out.host = g["host"]
            if g.get("pid") and g["pid"].isdigit():
                out.pid = int(g["pid"])
            if g.get("lvl"):
                out.level = g["lvl"]
            if g.get("ts"):
                out.ts = g["ts"]
            text = text[m.end():]
            break
        else:
            break
    out.text = text
    if out.rank is None:
        m = _MSG_RANK.search(text)
        if m:
            out.rank = int(m.group("rank"))
    return out
