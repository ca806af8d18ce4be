"""NCCL's RAS report in JSON (``ncclras -f json``, NCCL 2.24+), read as lines.

ncclras asks every process of a running job for the state of its
communicators. In text mode it prints a report the signatures read line by
line (``... considered dead (unreachable via the RAS network)``, ``The
missing ranks: ...``, ``Rank N has launched up to operation M -- ...``). In
JSON mode the same facts are fields: per communicator its ``ranks`` (each
with its ``status`` and its ``collective_counts`` per operation) and its
``missing_ranks`` (each with ``status.considered_dead``). The layout read
here is the one the format strings of ``libnccl.so.2`` print (the reply is
formatted by the library inside the job's processes, not by the client);
keys are looked up by name, so fields added or reordered by other versions
do not matter.

:func:`ras_lines` turns a report into the lines its text form says the
same thing with, each prefixed ``ncclras JSON:`` and numbered by the line of
the JSON it comes from, so the signatures that read the text report read
the JSON one too, and the evidence points into the file. Only facts that
name a failure become lines: ranks missing from a communicator, processes
considered dead, and ranks whose operation count differs from most ranks
of their communicator. The file is parsed with ``json.loads`` (never
evaluated), its size, value count and nesting bounded
(:func:`~ncclnb.doctor.sources.parse_bounded_json`).
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any, Optional

from .sources import parse_bounded_json

MAX_RAS = 16 << 20  # bytes of a report read (one of 10,000 ranks is about 5 MB)
MAX_RAS_ITEMS = 1_000_000  # JSON values a report may hold (about 30 a rank)
MAX_RANKS_LISTED = 64  # ranks named on one line
PREFIX = "ncclras JSON: "
_HEAD = re.compile(rb'\A(?:\xef\xbb\xbf)?\s*\{\s*"nccl_version"\s*:\s*"')
_HASH = re.compile(rb'^\s*"hash"\s*:')
_SECTION = re.compile(rb'^\s*"(ranks|missing_ranks)"\s*:\s*\[')
_RANK = re.compile(rb'^\s*"rank"\s*:\s*(-?[0-9]{1,9})')
_DEAD = re.compile(rb'^\s*"considered_dead"\s*:\s*true')


def looks_like_ras_json(head: bytes) -> bool:
    """Is ``head`` (a file's first bytes) the start of a RAS JSON report: an object that opens with
    ``"nccl_version"`` and names ``"communicators"`` (or the count of them) in its first 64 KiB?"""
    return bool(_HEAD.match(head[:256])) and (b'"communicators"' in head[:65536] or b'"communicators_count"' in head[:65536])


def parse(data: bytes) -> tuple[Optional[dict], str]:
    """(the parsed report, "") or (None, why not) for a report's bytes, bounded like a dump's."""
    report, why = parse_bounded_json(data, MAX_RAS, MAX_RAS_ITEMS, "an ncclras report")
    if report is not None and not isinstance(report.get("communicators", []), list):
        return None, '"communicators" is not a list'
    return report, why


class _LineIndex:
    """Where a communicator, a section of it and a rank of that section start in the file: NCCL prints
    one key a line, communicators in order. A report reformatted onto fewer lines points at line 1."""

    def __init__(self, data: bytes):
        self.comm: list[int] = []  # communicator index -> its "hash" line
        self.section: dict = {}  # (comm, "ranks" | "missing_ranks") -> its opening line
        self.rank: dict = {}  # (comm, section, rank) -> its "rank" line
        self.dead: list[int] = []  # lines that say "considered_dead": true
        section = ""
        for no, line in enumerate(data.splitlines(), 1):
            if _HASH.match(line):
                self.comm.append(no)
                section = ""
                continue
            m = _SECTION.match(line)
            if m:
                section = m.group(1).decode()
                self.section.setdefault((len(self.comm) - 1, section), no)
                continue
            m = _RANK.match(line)
            if m and section:
                self.rank.setdefault((len(self.comm) - 1, section, int(m.group(1))), no)
            elif _DEAD.match(line):
                self.dead.append(no)

    def of_comm(self, i: int) -> int:
        return self.comm[i] if i < len(self.comm) else 1

    def of_section(self, i: int, section: str) -> int:
        return self.section.get((i, section), self.of_comm(i))

    def of_rank(self, i: int, section: str, rank: int) -> int:
        return self.rank.get((i, section, rank), self.of_section(i, section))


def _int(value: Any) -> Optional[int]:
    return value if isinstance(value, int) and not isinstance(value, bool) and -1 <= value < 1 << 62 else None


def _text(value: Any, limit: int = 256) -> str:
    return str(value)[:limit] if isinstance(value, (str, int)) and not isinstance(value, bool) else "?"


def _entries(comm: dict, key: str) -> list:
    """The dict entries of a communicator's ``ranks`` or ``missing_ranks`` that carry an integer rank."""
    got = comm.get(key)
    return [e for e in got if isinstance(e, dict) and _int(e.get("rank")) is not None] if isinstance(got, list) else []


def _status(entry: dict) -> dict:
    status = entry.get("status")
    return status if isinstance(status, dict) else entry


def _where(entry: dict) -> str:
    """``GPU d managed by process p on node h``, as the text report names a rank's process."""
    return f"GPU {_text(entry.get('cuda_dev'))} managed by process {_text(entry.get('pid'))} on node {_text(entry.get('host'))}"


def _ranks_text(ranks: list) -> str:
    shown = ", ".join(map(str, ranks[:MAX_RANKS_LISTED]))
    return shown + (f" (and {len(ranks) - MAX_RANKS_LISTED} more)" if len(ranks) > MAX_RANKS_LISTED else "")


def ras_lines(data: bytes) -> tuple[list, str]:
    """(``[(line number, line bytes), ...]`` in file order, "") for a RAS JSON report's bytes, or
    ([], why it cannot be read). Each line says one failure the report shows, in its text form's words."""
    report, why = parse(data)
    if report is None:
        return [], why
    index = _LineIndex(data)
    out: list = []
    dead: list = []  # (line, rank, entry) of processes considered dead
    comms = report.get("communicators", [])
    for i, comm in enumerate(comms if isinstance(comms, list) else []):
        if not isinstance(comm, dict):
            continue
        name = f"communicator {_text(comm.get('hash'), 40)} ({_text(comm.get('size'), 12)} ranks)"
        missing = _entries(comm, "missing_ranks")
        if missing:
            ranks = sorted({e["rank"] for e in missing})
            s = "s" if len(ranks) > 1 else ""
            out.append(
                (
                    index.of_section(i, "missing_ranks"),
                    f"{name}: Missing communicator data from {len(ranks)} rank{s}. The missing rank{s}: {_ranks_text(ranks)}",
                )
            )
            for e in missing:
                if _status(e).get("considered_dead") is True:
                    dead.append((index.of_rank(i, "missing_ranks", e["rank"]), e["rank"], e))
        out.extend(_outliers(comm, name, i, index))
    if dead:
        dead.sort(key=lambda t: t[0])
        ranks = sorted({r for _, r, _ in dead})
        n = len({(_text(e.get("host")), _text(e.get("pid"))) for _, _, e in dead})
        verb = "processes are" if n > 1 else "process is"
        first = dead[0][2]
        out.append(
            (
                dead[0][0],
                f"{n} job {verb} considered dead (unreachable via the RAS network): "
                f"rank{'s' if len(ranks) > 1 else ''} {_ranks_text(ranks)}; the first: {_where(first)}",
            )
        )
    out.sort(key=lambda t: t[0])
    return [(no, (PREFIX + text).encode()) for no, text in out], ""


def _outliers(comm: dict, name: str, i: int, index: _LineIndex) -> list:
    """Lines for the ranks of ``comm`` whose count of some operation differs from most ranks' (from
    the furthest rank's when no count is the most common): one behind never launched what the others
    launched and wait in; one ahead launched an operation the others never called."""
    counts: dict = {}  # operation -> {rank: count}
    entries = {}
    for e in _entries(comm, "ranks"):
        got = e.get("collective_counts")
        if not isinstance(got, dict):
            continue
        entries[e["rank"]] = e
        for op, n in got.items():
            n = _int(n)
            if isinstance(op, str) and n is not None:
                counts.setdefault(op[:64], {})[e["rank"]] = n
    odd: dict = {}  # rank -> (operation, its count, the count it differs from, how many ranks hold that)
    for op, per_rank in sorted(counts.items()):
        if len(set(per_rank.values())) < 2:
            continue
        (common, k), *rest = Counter(per_rank.values()).most_common()
        if rest and rest[0][1] == k:  # no count most ranks share: the furthest is the reference
            common = max(per_rank.values())
            k = sum(1 for n in per_rank.values() if n == common)
        for r, n in per_rank.items():
            if n != common and r not in odd:
                odd[r] = (op, n, common, k)
    lines = []
    for r in sorted(odd)[:MAX_RANKS_LISTED]:
        op, n, common, k = odd[r]
        done = f"has launched up to operation {n}" if n > 0 else "has not launched any operations"
        side = "behind" if n < common else "ahead of"
        lines.append(
            (
                index.of_rank(i, "ranks", r),
                f"{name}: Rank {r} {done} -- {_where(entries[r])} "
                f"({op}: {side} the {k} rank{'s' if k > 1 else ''} that launched up to operation {common})",
            )
        )
    return lines
