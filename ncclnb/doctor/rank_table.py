"""Stage 3 of :func:`~ncclnb.doctor.diagnose`: the per-rank table.

The matcher (:mod:`ncclnb.doctor.match`) fills a row per process as lines
name it: by its global rank, or, until an NCCL comm line says which rank a
pid is, by ``("pid", host, pid)``. :meth:`RankRows.fold` turns those into
rank rows (and the reasoning state's per-process records into per-rank
ones); :meth:`RankRows.table` gives the rows the Diagnosis shows, bounded.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Optional

from ..model import Finding, RankStatus
from .cards import prose
from .normalize import num
from .reason import ReasonState

MAX_RANKS = 8192  # rows of the per-rank table (past it, only ranks a finding blames; the cut is said)
MAX_CUT_COUNTED = 1 << 16  # ranks left out of the table that are counted one by one; processes whose rank is known
MAX_BLAMED = 1024  # ranks one finding blames (and rows kept past MAX_RANKS for them)


@dataclass
class RankRow:
    host: Optional[str] = None
    local_rank: Optional[int] = None
    pid: Optional[int] = None
    nccl_version: Optional[str] = None
    last_seq: Optional[int] = None
    last_op: Optional[str] = None
    first_error: Optional[str] = None
    first_error_at: tuple = ()
    first_rule: Optional[str] = None  # the signature of the first error
    source: Optional[str] = None


class RankRows:
    """The rows by key (a rank, or ``("pid", host, pid)``), and what says
    which ranks there are: the pids' ranks from NCCL's comm lines and the
    ranks the log files are named after."""

    def __init__(self) -> None:
        self.rows: dict = {}  # rank (int) or ("pid", host, pid) -> RankRow
        self.pid_rank: dict = {}  # (host, pid) -> (nranks, rank, local_rank)
        self.rows_extra: set = set()  # row keys past MAX_RANKS (ranks that printed an error)
        self.ranks_cut: set = set()  # row keys refused once the table was full (at most MAX_CUT_COUNTED)
        self.source_ranks: set = set()  # ranks named by the file names of the logs read
        self.rank_files: dict = {}  # rank -> {file stem: file name} of the logs named after it
        # (host, pid) -> rank of the processes a rank's own row names (a line with both): set by fold()
        self.process_rank: dict = {}

    def row(self, key, keep: bool = False) -> Optional[RankRow]:
        """The row of ``key``, made on first sight while the table has room.
        Past MAX_RANKS rows only ``keep`` (a rank that printed an error, which a
        finding may blame) gets one, MAX_BLAMED more at most; the keys refused
        are counted, so that the cut is reported."""
        if key is None:
            return None
        row = self.rows.get(key)
        if row is None:
            if len(self.rows) >= MAX_RANKS:
                if not keep or len(self.rows_extra) >= MAX_BLAMED:
                    if len(self.ranks_cut) < MAX_CUT_COUNTED:
                        self.ranks_cut.add(key)
                    return None
                self.rows_extra.add(key)
            row = self.rows[key] = RankRow()
        return row

    @staticmethod
    def key(rank, host, pid):
        """The row key of a line: its rank, else its process, else None."""
        if rank is not None:
            return rank
        if pid is not None:
            return ("pid", host, pid)
        return None

    @staticmethod
    def fill(row: RankRow, host, pid, source) -> None:
        """What a line tells of its process, where the row does not know it yet."""
        row.host = row.host or host
        row.pid = row.pid if row.pid is not None else pid
        row.source = row.source or source

    def add_source(self, name: str, rank: Optional[int]) -> None:
        """A log file named after ``rank`` (``rank3.log``): the rank left a trace."""
        if rank is not None and len(self.source_ranks) < MAX_RANKS:
            self.source_ranks.add(rank)
            self.rank_files.setdefault(rank, {}).setdefault(log_stem(name), name)

    def resolve(self, key):
        """A row key as a global rank when the NCCL comm lines told us the pid's rank."""
        if isinstance(key, tuple):
            known = self.pid_rank.get((key[1], key[2]))
            if known is not None:
                return known[1]
            return self.process_rank.get((key[1], key[2]), key)
        return key

    def fold(self, state: ReasonState) -> None:
        """Rows and reasoning records kept by pid moved to the rank the comm lines gave the pid, or else to
        the one rank row that names the same host and pid: one process, one row. In place."""
        claimed: dict = {}
        for key, row in self.rows.items():
            if isinstance(key, int) and row.pid is not None:
                claimed.setdefault((row.host, row.pid), set()).add(key)
        # a process that two rank rows name stays apart: which rank its pid-only lines are is not known
        self.process_rank = {hp: next(iter(ranks)) for hp, ranks in claimed.items() if len(ranks) == 1}
        for key in [k for k in self.rows if isinstance(k, tuple)]:
            r = self.resolve(key)
            if r is key:
                continue
            row = self.rows.pop(key)
            into = self.rows.setdefault(r, RankRow())
            for attr in ("host", "local_rank", "pid", "nccl_version", "last_seq", "last_op", "source"):
                if getattr(into, attr) is None:
                    setattr(into, attr, getattr(row, attr))
            if row.first_error and (into.first_error is None or row.first_error_at < into.first_error_at):
                into.first_error, into.first_error_at, into.first_rule = row.first_error, row.first_error_at, row.first_rule
        for _, r, lr in self.pid_rank.values():
            row = self.rows.get(r)
            if row is not None and row.local_rank is None:
                row.local_rank = lr
        wd: dict = {}
        for key, rec in state.watchdog.items():
            r = self.resolve(key)
            if isinstance(r, int):
                rec.rank = r
                if r not in wd or rec.seq >= wd[r].seq:
                    wd[r] = rec
        state.watchdog = wd
        progress: dict = {}
        for (key, pg), rec in state.progress.items():
            r = self.resolve(key)
            old = progress.get((r, pg))
            if isinstance(r, int) and (old is None or (rec.enqueued, rec.completed) >= (old.enqueued, old.completed)):
                rec.rank = r
                progress[(r, pg)] = rec
        state.progress = progress
        for kind, per in state.values.items():
            resolved: dict = {}
            for key, rec in per.items():
                r = self.resolve(key)
                if isinstance(r, int):
                    resolved.setdefault(r, rec)
            state.values[kind] = resolved

    def present(self) -> set:
        """Ranks that left a trace: a line naming them, or a log file named after them."""
        return {self.resolve(k) for k in self.rows} | self.source_ranks

    def missing(self, expected, world_size: Optional[int]) -> list:
        """Ranks of the world size (``expected``, else ``world_size``) that left no trace at all, when some did."""
        size = num(expected) or world_size
        present = {r for r in self.present() if isinstance(r, int)}
        if not size or not present or size > 1 << 20:
            return []
        return [r for r in range(size) if r not in present][:MAX_BLAMED]

    def table(self, statuses: list, blamed: set) -> tuple[tuple[RankStatus, ...], int]:
        """The rows, by rank, with the flight recorder's ``statuses`` merged in,
        and how many ranks were left out: past MAX_RANKS only the rows of ranks
        in ``blamed`` are kept."""
        rows = []
        left_out = {k for k in self.ranks_cut if k not in self.rows}
        for key, row in self.rows.items():
            rank = key if isinstance(key, int) else None
            if key in self.rows_extra and rank not in blamed:
                left_out.add(key)
                continue
            rows.append(
                RankStatus(
                    rank=rank,
                    host=row.host,
                    local_rank=row.local_rank,
                    pid=row.pid,
                    nccl_version=row.nccl_version,
                    last_seq=row.last_seq,
                    last_op=row.last_op,
                    first_error=row.first_error,
                    source=row.source,
                )
            )
        by_rank = {r.rank: i for i, r in enumerate(rows) if r.rank is not None}
        for st in statuses:
            if st.rank in by_rank:
                old = rows[by_rank[st.rank]]
                rows[by_rank[st.rank]] = RankStatus(
                    rank=old.rank,
                    host=old.host or st.host,
                    local_rank=old.local_rank if old.local_rank is not None else st.local_rank,
                    pid=old.pid if old.pid is not None else st.pid,
                    nccl_version=old.nccl_version or st.nccl_version,
                    last_seq=st.last_seq if st.last_seq is not None else old.last_seq,
                    last_op=st.last_op or old.last_op,
                    first_error=old.first_error or st.first_error,
                    source=old.source or st.source,
                )
            elif len(rows) < MAX_RANKS or st.rank in blamed:
                rows.append(st)
            else:
                left_out.add(st.rank)
        rows.sort(key=lambda r: (r.rank is None, r.rank if r.rank is not None else 0, r.host or "", r.pid or 0))
        return tuple(rows), len(left_out)


def cut_note(cut: int) -> Finding:
    """The info finding that says ``cut`` ranks were left out of the table."""
    return Finding(
        rule="rank_table_cut",
        category="unknown",
        severity="info",
        confidence=0.1,
        **prose("rank_table_cut", max_ranks=MAX_RANKS, at_least="at least " if cut >= MAX_CUT_COUNTED else "", cut=cut),
    )


_LOG_EXTENSIONS = (".gz", ".log", ".txt", ".out", ".err", ".stdout", ".stderr")


def log_stem(name: str) -> str:
    """``rank2.err.gz`` -> ``rank2``: the stdout and stderr files of one process share it."""
    base = os.path.basename(name)
    changed = True
    while changed:
        changed = False
        for ext in _LOG_EXTENSIONS:
            if base.endswith(ext) and len(base) > len(ext):
                base, changed = base[: -len(ext)], True
    return base
