"""Strip what launchers and loggers put in front of a log line.

``normalize(line)`` peels, in any order and nesting, ANSI colours, CR,
timestamps (ISO 8601, syslog, dmesg), torchrun's ``[default3]:``, PyTorch's
``[rank3]:``, OpenMPI's ``[1,3]<stderr>:``, Slurm's ``3: ``, pdsh's
``host: ``, glog's ``[W304 17:41:12.735149131 ProcessGroupNCCL.cpp:4561]``
(and torch's bracketless ``W0104 13:46:27.896000 80302 run.py:792]``), Ray's
``(RayWorkerWrapper pid=11305)``, vLLM's ``ERROR 08-27 05:12:18 worker.py:38]``,
any launcher's ``[trainer3]:``, a quoted paste's ``> `` and NCCL's
``host:pid:tid [dev] file.cc:12 NCCL WARN``; it keeps what they say (rank,
local rank, host, pid, level, time, and the NCCL source file that printed a
line) in a :class:`Line`. C++ ``frame #N`` lines give None: they are noise,
never evidence.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][A-Za-z0-9]", re.ASCII)
FRAME = re.compile(r"^\s*(?:frame #\d+:|#\d+ 0x[0-9a-f]+ in )", re.ASCII)
# a frame in NCCL's net plugin is evidence (a crash inside the plugin), not noise
_PLUGIN_FRAME = re.compile(r"nccl_net_ofi_|libnccl-net|rdma[-_]sharp|aws-ofi-nccl", re.ASCII)

_NCCL = re.compile(
    r"(?P<host>[^\s:\[\]]+):(?P<pid>\w+)(?::(?P<tid>\w+))? \[(?P<dev>\d+)\] "
    # the source location NCCL prints before WARN ("transport/nvls.cc:244"); none when "NCCL WARN" follows the [dev]
    r"(?:(?!NCCL (?:INFO|WARN|TRACE|ABORT)\b)(?P<where>[^\n]{0,240}?) )?(?:NCCL )?(?P<lvl>INFO|WARN|TRACE|ABORT)\b ?",
    re.ASCII,
)
_PREFIXES = (
    # RFC 3339 syslog, as journalctl -o short-iso and rsyslog write it: "2025-11-25T10:00:01.123+00:00 node7 kernel: "
    (
        "syslog_iso",
        re.compile(
            r"(?P<ts>\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?) "
            r"(?!(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL|NOTICE|TRACE) )"
            r"(?P<host>[\w.-]+) [\w./-]+(?:\[\d+\])?: ",
            re.ASCII,
        ),
    ),
    (
        "ts",
        re.compile(
            r"\[?(?P<ts>\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?)\]?[ \t]*(?:\| *)?", re.ASCII
        ),
    ),
    # journalctl's short (and -o short-precise: fractions of a second) and classic syslog: "Nov 25 10:00:01 node7 kernel: "
    (
        "syslog",
        re.compile(
            r"(?P<ts>[A-Z][a-z]{2} +\d{1,2} \d{2}:\d{2}:\d{2}(?:\.\d+)?) (?P<host>[\w.-]+) (?:[\w./-]+(?:\[\d+\])?: )?", re.ASCII
        ),
    ),
    # dmesg (-T, and -r's "<4>" level) names no host: none is read, none invented
    (
        "dmesg",
        re.compile(r"(?:<\d>)?\[(?:\s*\d+\.\d+|[A-Z][a-z]{2} [A-Z][a-z]{2} +\d+ \d{2}:\d{2}:\d{2} \d{4})\][ \t]*", re.ASCII),
    ),
    # torch's "[rank3]:", and a launcher's or script's "[rank3] " in front of a line NCCL printed
    (
        "rank",
        re.compile(r"\[rank ?(?P<rank>\d+)\](?::[ \t]?| (?=[A-Za-z][\w.-]{0,254}:[0-9]{1,9}:[0-9]{1,9} \[))", re.ASCII),
    ),
    ("local", re.compile(r"\[default(?P<local>\d+)\]:[ \t]?", re.ASCII)),
    # any other launcher's per-process tag ([trainer3]:, [worker0]:): stripped, its number not trusted as a rank
    ("tag", re.compile(r"\[[A-Za-z][A-Za-z_-]{0,30}\d{1,5}\]:[ \t]?", re.ASCII)),
    # a paste's own host label in front of a line NCCL or torch printed ("[nodeB] a3-vm-2:2987:2987 [0] NCCL INFO",
    # "[nodeA] [rank0]: ..."): the host, when nothing after it names one
    (
        "label",
        re.compile(
            r"\[(?P<host>[A-Za-z][\w.-]{0,62})\] (?=[A-Za-z][\w.-]{0,254}:[0-9]{1,9}:[0-9]{1,9} \[|\[rank[0-9]{1,7}\]:|\[default[0-9]{1,4}\]:)",
            re.ASCII,
        ),
    ),
    ("ray", re.compile(r"\((?:[A-Za-z_][\w.]{0,60} )?pid=(?P<pid>\d+)(?:, ip=[\w.:-]+)?\)[ \t]*", re.ASCII)),
    (
        "pylog",
        re.compile(
            r"(?P<lvl>DEBUG|INFO|WARNING|ERROR|CRITICAL) \d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:\.\d+)? "
            r"\[?[\w.\-/]+:\d+\][ \t]*",
            re.ASCII,
        ),
    ),
    ("glog2", re.compile(r"(?P<lvl>[IWEF])(?P<ts>\d{4} \d{2}:\d{2}:\d{2}\.\d+) +\d+ [\w.\-/]+:\d+\][ \t]*", re.ASCII)),
    ("quote", re.compile(r"(?:>[ \t]?)+(?=\S)", re.ASCII)),
    # Open MPI's --tag-output: "[1,3]<stderr>:", and newer releases' "[1,mpirank:3,algo-2]<stdout>:" naming the host
    (
        "mpi",
        re.compile(r"\[\d+,(?:mpirank:)?(?P<rank>\d+)(?:,(?P<host>[A-Za-z][\w.-]{0,62}))?\]<(?:stdout|stderr)>:[ \t]?", re.ASCII),
    ),
    (
        "glog",
        re.compile(
            r"\[(?P<lvl>[IWEF])(?P<ts>\d{3,4} \d{2}:\d{2}:\d{2}(?:\.\d+)?)?[ \t]*(?:\d+ )?[\w.\-/]+:\d+\][ \t]*", re.ASCII
        ),
    ),
    ("nccl", _NCCL),
    # an NCCL line pasted without its host:pid:tid prefix ("[3] include/shm.h:28 NCCL WARN ...", "WARN NET/IB: ...")
    (
        "nccl_bare",
        re.compile(
            r"(?:\[\d+\] )?(?:(?P<where>[\w./-]{1,120}\.(?:cc|cu|cpp|c|hpp|h):\d+) )?(?:NCCL )?"
            r"(?P<lvl>WARN|INFO)\b:? ?(?=\S)",
            re.ASCII,
        ),
    ),
    ("slurm", re.compile(r"(?P<rank>\d{1,5}): (?=\S)", re.ASCII)),
    ("stream", re.compile(r"\S+ \[(?:stdout|stderr)\] ", re.ASCII)),
    ("pdsh", re.compile(r"(?P<host>\d{1,3}(?:\.\d{1,3}){3}|[A-Za-z][\w-]*\d[\w.-]*): (?=\S)", re.ASCII)),
    ("space", re.compile(r"[ \t]+", re.ASCII)),
)
# What each prefix's match can begin with (a superset; None: anything), so that ``normalize`` tries on a text
# only the prefixes its first character allows, in the same order. tests/doctor/test_normalize_first_chars.py
# checks every prefix against these, on every character.
_DIGITS, _UPPER, _LOWER = "0123456789", "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz"
_CAN_START = {
    "syslog_iso": _DIGITS,
    "ts": "[" + _DIGITS,
    "syslog": _UPPER,
    "dmesg": "<[",
    "rank": "[",
    "local": "[",
    "tag": "[",
    "label": "[",
    "ray": "(",
    "pylog": "DIWEC",
    "glog2": "IWEF",
    "quote": ">",
    "mpi": "[",
    "glog": "[",
    "nccl": None,
    "nccl_bare": "[./-_" + _DIGITS + _UPPER + _LOWER,
    "slurm": _DIGITS,
    "stream": None,
    "pdsh": _DIGITS + _UPPER + _LOWER,
    "space": " \t",
}


def _may_start(kind: str, ch: str) -> bool:
    allowed = _CAN_START[kind]
    return allowed is None or ch in allowed


# first ASCII character -> the prefixes worth trying, in order; any other first character tries them all
_PREFIXES_BY_FIRST = {chr(c): tuple((kind, rx) for kind, rx in _PREFIXES if _may_start(kind, chr(c))) for c in range(128)}
_MSG_RANK = re.compile(r"\[(?:PG ID \d+ PG GUID [^\]]{0,80}? )?Rank (?P<rank>\d+)\]", re.ASCII)
# a script's own print that starts with its rank ("[rank0] val shard: ...", "[rank 3] loss ..."): no launcher's tag
_OWN_RANK = re.compile(r"\[rank ?(?P<rank>\d+)\] ", re.ASCII)


@dataclass
class Line:
    """One normalised line: ``text`` is the message, the rest what its prefixes said."""

    text: str
    rank: Optional[int] = None
    local_rank: Optional[int] = None
    host: Optional[str] = None
    pid: Optional[int] = None
    level: Optional[str] = None  # "INFO"/"WARN" (NCCL), "I"/"W"/"E"/"F" (glog)
    ts: Optional[str] = None
    where: Optional[str] = None  # NCCL's source location before WARN ("transport/nvls.cc:244")


def clean(raw: str) -> str:
    """The line as evidence: no ANSI colours, no CR or trailing whitespace."""
    if "\x1b" in raw:
        raw = ANSI.sub("", raw)
    return raw.replace("\r", "").rstrip()


MAX_DIGITS = 18  # sequence numbers and element counts (int64) fit; longer is not a number here
RANK_DIGITS = 9  # ranks, local ranks, pids, world sizes: longer is not a number here


def num(text, digits: int = RANK_DIGITS) -> Optional[int]:
    """``text`` as an int when it is 1..``digits`` ASCII digits (9 by default:
    a rank, a pid, a size; pass ``MAX_DIGITS`` for sequence numbers and
    counts), else None. Unicode digits such as '³' or '١' and numbers past
    int()'s digit limit never reach int()."""
    if text is None:
        return None
    text = str(text)
    if not (0 < len(text) <= min(digits, MAX_DIGITS) and text.isascii() and text.isdigit()):
        return None
    return int(text)


def normalize(raw: str) -> Optional[Line]:
    """Peel the prefixes off ``raw``; None for C++ frame noise."""
    text = clean(raw)
    if FRAME.match(text) and not _PLUGIN_FRAME.search(text):
        return None
    out = Line(text="")
    for _ in range(12):  # prefixes nest a few deep at most
        for kind, rx in _PREFIXES_BY_FIRST.get(text[:1], _PREFIXES):
            m = rx.match(text)
            if not m or m.end() == 0:
                continue
            g = m.groupdict()
            if kind == "slurm" and out.rank is None:
                out.rank = num(g["rank"])
            elif g.get("rank") and kind != "slurm":
                out.rank = num(g["rank"])
            if g.get("local"):
                out.local_rank = num(g["local"])
            if g.get("host"):
                out.host = g["host"]
            if g.get("pid"):
                out.pid = num(g["pid"])
            if g.get("lvl"):
                out.level = g["lvl"]
            if g.get("ts"):
                out.ts = g["ts"]
            if g.get("where"):
                out.where = g["where"]
            text = text[m.end() :]
            break
        else:
            break
    out.text = text
    if out.rank is None:
        m = _MSG_RANK.search(text) or _OWN_RANK.match(text)
        if m:
            out.rank = num(m.group("rank"))
    return out
