"""``diagnose``: logs of any number of ranks in, ranked findings out."""

from __future__ import annotations

import io
import json
import os
import re
import stat
from dataclasses import dataclass, field, replace
from typing import Optional

from ..model import Diagnosis, Evidence, Finding, RankStatus
from ..model.categories import TABLE as CATEGORY
from ..model.redact import scrub_cut
from . import flight_recorder as fr
from .collapse import InertRests, Normalizer, skip_inert
from .kb import Signature, load_signatures
from .normalize import MAX_DIGITS, clean, num
from .priors import CANDIDATE_KIND_TITLES, LogContext, preferred_category, rank_candidates, warn_prior
from .reason import (
    BANNER,
    C10D_FRAME,
    COMM,
    PG_ID,
    PLAN,
    PROGRESS,
    VERSION,
    WATCHDOG,
    WORK,
    CommRecord,
    ProgressRecord,
    ReasonState,
    WatchdogRecord,
    duplicate_claims,
    out_of_range_findings,
    plan_findings,
    value_kind,
    version_findings,
    wait_findings,
    watchdog_findings,
    world_size_findings,
)
from .scan import MAX_NO_NEWLINE, LineScanner, ParallelScan, looks_binary, workers_for
from .sources import (
    EMPTY,
    NCCLNB_JSON,
    DoctorInputError,
    Source,
    changed_while_read,
    expand,
    nothing_readable,
    rank_from_name,
    regular_stat,
)

MAX_EVIDENCE = 5  # evidence lines kept per finding
MAX_TEXT = 500  # characters of a line kept as evidence
MAX_RANKS = 8192  # rows of the per-rank table (past it, only ranks a finding blames; the cut is said)
MAX_CUT_COUNTED = 1 << 16  # ranks left out of the table that are counted one by one; processes whose rank is known
MAX_BLAMED = 1024
MAX_DUMP = 48 << 20  # bytes of a flight-recorder dump read (torch's 2000-entry buffer is a few MB)
MAX_DUMP_ITEMS = 2_000_000  # JSON values a dump may hold (bounds the memory json.loads needs)
MAX_DUMPS_KEPT = 512 << 20  # estimated bytes kept of all dumps (what the analysis reads: ~2.6M entries of the usual size)
MATCH_CACHE = 1 << 16  # distinct messages whose signature matches are remembered (a 1024-rank log has thousands)
_NCCLNB_JSON = re.compile(rb'\A(?:\xef\xbb\xbf)?\s*\{\s*"schema"\s*:\s*"ncclnb\.[a-z]+/')
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


# categories whose errors say a rank waited for a peer, not that it failed by itself
_WAITING = {"collective_desync", "slow_rank_timeout", "p2p_pairing", "rendezvous_unreachable", "unknown"}
# a rank's own error that means it timed out in a send/recv
_P2P_WAIT_RULES = {"gloo_op_timeout"}
# the lines torch prints for one watchdog timeout (the timeout, the rank's progress, "taking the entire process
# down"): one incident, one card; a wrapper (DistBackendError, terminate called ...) printed within
# _INCIDENT_SPAN lines after them belongs to the same incident
_INCIDENT_RULES = ("watchdog_timeout", "timeout_at_nccl_work", "nccl_ops_failed_or_timed_out")
_INCIDENT_SPAN = 8
# cross-rank findings that explain a watchdog timeout (the incident's card when there is one)
_INCIDENT_CARDS = (
    "watchdog_rank_behind",
    "watchdog_desync",
    "watchdog_seq_differs",
    "watchdog_rank_missing",
    "watchdog_all_waiting",
    "traceback_rank_missing",
)
# cross-rank findings from where the ranks' tracebacks say they waited (reason.wait_findings)
_TRACEBACK_CARDS = ("p2p_wait_beside_collective", "traceback_desync", "traceback_rank_missing")
# the substrings on which line() reads a message beyond its signatures (versions, comm lines, banners, watchdog
# and progress lines, p2p plans): a message holding none of them, with no signature hit and not a WARN, is inert
# (collapse.Template.inert) and later lines with it take the short way (_inert_line). A new gate goes here too.
_LINE_GATES = (
    "NCCL version",
    "nRanks",
    "GLOBAL_RANK",
    "WorkNCCL(",
    "NCCL work:",
    "enqueued work",
    "p2p plan",
    "distributed_c10d.py",
)
# ranking tiers, most likely root cause first (a rank's own error that came first leads all)
_TIER_FIRST_FAILURE = -1
_TIER_ROOT_ERROR, _TIER_ROOT_WARNING, _TIER_ALTERNATIVE, _TIER_CONSEQUENCE, _TIER_INFO, _TIER_BENIGN = range(6)


@dataclass
class _Hits:
    sig: Signature
    count: int = 0
    evidence: list = field(default_factory=list)
    first: tuple = ()
    groups: dict = field(default_factory=dict)
    blamed: set = field(default_factory=set)
    printers: set = field(default_factory=set)  # rank or ("pid", host, pid) of the lines
    hosts: set = field(default_factory=set)
    in_incident: int = 0  # lines printed as part of a watchdog timeout (the line itself or just after it)


@dataclass
class _RankRow:
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


@dataclass
class _SourceContext:
    name: str
    index: int
    rank_hint: Optional[int]
    host: Optional[str] = None
    prev_no: int = 0  # the last candidate line's number and text (to rejoin a hard-wrapped message)
    prev_text: str = ""
    prev_ids: frozenset = frozenset()
    last_watchdog: int = -(1 << 30)  # number of the last line of a watchdog timeout in this source
    c10d_calls: dict = field(default_factory=dict)  # rank -> torch.distributed call of its traceback's last frame


# the generic wrappers that say something failed, not why: the candidate causes they get when nothing else is known
_GENERIC_KIND = {
    "nccl_system_error": "system",
    "nccl_internal_error": "internal",
    "nccl_remote_error": "remote",
    "nccl_unhandled_cuda_error": "cuda",
    "connection_reset_by_peer": "reset",
    "nccl_invalid_usage": "invalid_usage",
}
MAX_CANDIDATES = 4  # candidate causes shown for one generic error
MIN_CANDIDATE_SCORE = 0.13  # below this (its base weight, lowered by what the log shows) a candidate is not shown
MAX_WARN_KEPT = 256  # distinct unrecognised NCCL WARN messages remembered


class _Collector:
    def __init__(self, sigs: tuple[Signature, ...], redact: bool = True, collapse: bool = True):
        self.sigs = sigs
        # text kept from a line, cut to a length; credentials in it replaced before the cut
        self.cut = scrub_cut if redact else (lambda text, limit: text[:limit])
        # flat (signature, literal, regex) list: the per-line loop is the hot path for candidate lines
        self._matchers = [(sig, lit, rx) for sig in sigs for lit, rx in sig.compiled]
        self._match_cache: dict = {}  # message -> [(signature, match)], bounded
        self._normalize = Normalizer(enabled=collapse)  # raw line -> (Line, template); see collapse.py
        self._inert = InertRests()  # rests of inert messages still in the match cache (collapse.skip_inert)
        self.hits: dict[str, _Hits] = {}
        self.state = ReasonState()
        self.rows: dict = {}  # rank (int) or ("pid", host, pid) -> _RankRow
        self.pid_rank: dict = {}  # (host, pid) -> (nranks, rank, local_rank)
        self.lines_read = 0
        self.truncated: list[tuple[str, str]] = []
        self.world_size: Optional[int] = None
        self.workers = 0  # most worker processes one file was scanned with
        self.source_ranks: set = set()  # ranks named by the file names of the logs read
        self.skipped_dumps: list = []  # (source, why) of dumps too large or malformed to read
        self.dumps_kept = 0  # estimated bytes of the dumps kept so far
        self.rank_files: dict = {}  # rank -> {file stem: file name} of the logs named after it
        self.skipped: list = []  # (index, source, why) of inputs not read: binary, unlistable, ...
        self.blank: list = []  # (index, source, why) of inputs with no log text: white space, ncclnb's JSON
        self.changed: list = []  # (source, how) of files that changed while they were read
        self.rows_extra: set = set()  # row keys past MAX_RANKS (ranks that printed an error)
        self.ranks_cut: set = set()  # row keys refused once the table was full (at most MAX_CUT_COUNTED)
        self.context = LogContext()  # facts of the run that decide between causes
        self.warns: dict = {}  # category -> [count, evidence, first, also, hosts, printers] of unrecognised WARNs
        self._warn_seen: set = set()

    # ---- per-rank rows -------------------------------------------------
    def _row(self, key, keep: bool = False) -> Optional[_RankRow]:
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
            row = self.rows[key] = _RankRow()
        return row

    @staticmethod
    def _key(rank, host, pid):
        if rank is not None:
            return rank
        if pid is not None:
            return ("pid", host, pid)
        return None

    # ---- reading -------------------------------------------------------
    def read(self, src: Source, index: int, dumps: list) -> None:
        if src.problem:  # a directory walk found it unreadable: say so, read the rest
            self.skipped.append((index, src.name, src.problem))
            return
        try:
            stream = src.open()
        except DoctorInputError as exc:
            if not src.walked:
                raise
            self.skipped.append((index, src.name, exc.strerror or "cannot read"))
            return
        opened, before = stream, regular_stat(stream)  # to tell, at the end, whether the file changed
        try:
            head = stream.read(65536) or b""
        except (EOFError, OSError) as exc:
            if isinstance(exc, DoctorInputError):
                raise
            self.truncated.append((src.name, f"{type(exc).__name__}: {exc}".splitlines()[0]))
            head = b""
        else:
            if not src.text and len(head) < 65536 and not head.strip():  # a short read is the whole input
                self.blank.append((index, src.name, EMPTY))
        workers, binary = 0, False
        if _NCCLNB_JSON.match(head[:256]):
            # a snapshot, report, diagnosis or repro result ncclnb wrote: facts, not log lines
            self.blank.append((index, src.name, NCCLNB_JSON))
            return
        try:
            if head[:1] in (b"{", b" ", b"\n", b"\t", b"\xef") and fr.looks_like_dump(head):
                # read at most MAX_DUMP bytes, parse only what stays small in memory, and keep
                # only what the analysis reads (the JSON is dropped at once), MAX_DUMPS_KEPT in all
                left = MAX_DUMPS_KEPT - self.dumps_kept
                if left < 1 << 20:
                    why = f"the dumps read before it already hold the {MAX_DUMPS_KEPT >> 20} MiB kept for dumps"
                else:
                    parsed, why = _parse_dump_bytes(_read_upto(stream, MAX_DUMP + 1, head))
                    if parsed is not None:
                        kept, parsed = fr.prepare_dump(src.name, parsed, left), None
                        if kept.size > left:
                            why = (
                                f"it needs about {kept.size >> 20} MiB, more than the {left >> 20} MiB "
                                f"left of the {MAX_DUMPS_KEPT >> 20} MiB kept for dumps"
                            )
                        else:
                            self.dumps_kept += kept.size
                            dumps.append((src.name, kept))
                if why:
                    self.skipped_dumps.append((src.name, why))
                return
            else:
                binary = not src.text and looks_binary(head)
                workers = _parallel_workers(stream) if src.path is not None and not binary else 0
                if not workers:
                    stream = _Chained(head, stream)
            ctx = _SourceContext(src.name, index, rank_from_name(src.name))
            if ctx.rank_hint is not None and len(self.source_ranks) < MAX_RANKS:
                self.source_ranks.add(ctx.rank_hint)
                self.rank_files.setdefault(ctx.rank_hint, {}).setdefault(_log_stem(src.name), src.name)
            if workers:  # the workers read the file opened here, whatever the path names meanwhile
                scanner = ParallelScan(
                    src.path, workers, fd=stream.fileno(), skip=self._inert if self._normalize.enabled else None
                )
                self.workers = max(self.workers, workers)
            else:  # a pipe or a device may never end: a stretch with no line break stops it
                scanner = LineScanner(
                    stream,
                    binary=binary,
                    max_no_newline=MAX_NO_NEWLINE if before is None and not src.text else None,
                    skip=self._inert if self._normalize.enabled else None,
                )
            # the scanner leaves out the lines read before only where it can do so in bulk; here the rest
            lines = skip_inert(iter(scanner), self._inert.rests) if self._normalize.enabled else iter(scanner)
            try:
                for line_no, raw in lines:
                    self.line(ctx, line_no, raw)
            finally:
                lines.close()  # an interrupted parallel scan shuts its pool down now, not at garbage collection
            if scanner.not_a_log:
                self.skipped.append((index, src.name, scanner.not_a_log))
                return
            self.lines_read += scanner.lines_read
            if scanner.truncated:
                self.truncated.append((src.name, scanner.truncated))
            changed = changed_while_read(src, before, opened)
            if changed:
                self.changed.append((src.name, changed))
        finally:
            if src.name != "<stdin>":
                try:
                    stream.close()
                except Exception:  # closing a half-read gzip can raise again
                    pass

    def line(self, ctx: _SourceContext, line_no: int, raw: bytes) -> None:
        ln, tpl = self._normalize(raw)  # collapse.Normalizer: a rest after NCCL's prefix is read once
        if ln is None:
            return
        if tpl is not None and tpl.inert:
            self._inert_line(ctx, line_no, ln, tpl)
            return
        text = raw.decode("utf-8", "replace")
        msg = ln.text
        if ln.host:
            ctx.host = ln.host
        rank = ln.rank if ln.rank is not None else ctx.rank_hint
        host = ln.host
        ev = Evidence(ctx.name, line_no, self.cut(clean(text), MAX_TEXT))
        order = (ctx.index, line_no)

        if "NCCL version" in msg:
            m = VERSION.search(msg)
            if m and msg[m.end("ver") : m.end("ver") + 1].isdigit():
                m = None  # a version part longer than VERSION reads: not a version
            if m:
                # one entry per process: two processes on one host may load different libraries. A line
                # with no host is kept hostless (never the host of the line before it, which in a log of
                # many hosts is anyone's), by its rank or else its source and pid
                where = (
                    (host, ln.pid if ln.pid is not None else rank)
                    if host
                    else (None, rank if rank is not None else f"{ctx.name}:{ln.pid}")
                )
                self.state.add_version(where, m.group("ver"), m.group("cuda"), ev)
                row = self._row(self._key(rank, host, ln.pid))
                if row is not None:
                    row.nccl_version = row.nccl_version or m.group("ver") + (f"+cuda{m.group('cuda')}" if m.group("cuda") else "")
                    self._fill(row, host, ln.pid, ctx.name)
        if "nRanks" in msg:
            m = COMM.search(msg)
            if m:
                r, n, lr, nodes = (num(m.group(k)) for k in ("rank", "nranks", "lrank", "nnodes"))
                if None in (r, n, lr, nodes):
                    m = None
            if m:
                self.state.add_comm(CommRecord(host, r, n, nodes, ev))
                self.world_size = max(self.world_size or 0, n)
                if host is not None and ln.pid is not None:
                    self.state.add_claim(n, r, (host, ln.pid), ev)
                if ln.pid is not None:
                    old = self.pid_rank.get((host, ln.pid))
                    if old is None or n > old[0]:
                        if old is not None or len(self.pid_rank) < MAX_CUT_COUNTED:
                            self.pid_rank[(host, ln.pid)] = (n, r, lr)
                largest = ln.pid is None or old_is_smaller(self.pid_rank.get((host, ln.pid)), n)
                row = self._row(r if largest else self._key(None, host, ln.pid))
                if row is not None:
                    row.local_rank = lr if row.local_rank is None else row.local_rank
                    self._fill(row, host, ln.pid, ctx.name)
        if "GLOBAL_RANK" in msg:
            m = BANNER.search(msg)
            if m:
                r, size = num(m.group("rank")), num(m.group("size"))
                if r is None or size is None:
                    r = size = None
                elif r >= size:
                    self.state.add_out_of_range(r, size, ev)
                if r is not None:
                    # the process: its log (stdout and stderr of one process share a stem), host, pid, local rank
                    self.state.add_claim(size, r, (_log_stem(ctx.name), host, ln.pid, ln.local_rank), ev)
                row = self._row(r)
                if row is not None:
                    self._fill(row, host, ln.pid, ctx.name)
        if "WorkNCCL(" in msg or "NCCL work:" in msg or "enqueued work" in msg:
            self._watchdog(msg, rank, host, ln.pid, ev, ctx.name)
        if "distributed_c10d.py" in msg and rank is not None:
            m = C10D_FRAME.search(msg)
            if m and (rank in ctx.c10d_calls or len(ctx.c10d_calls) < MAX_RANKS):
                ctx.c10d_calls[rank] = m.group("fn")
        if "p2p plan" in msg and PLAN.search(msg):
            from .pairing import parse_plan_line

            plan = parse_plan_line(msg, ctx.name, line_no)
            if plan is not None:
                self.state.add_plan(plan)

        if host:
            self.context.observe_host(host)
        # an NCCL WARN is matched with its source location in front, so a signature can key on the file
        # that printed it ("transport/nvls.cc:244 NCCL WARN ..."), with or without NCCL's prefix
        text_ = (f"{ln.where} NCCL WARN {msg}" if ln.where else f"NCCL WARN {msg}") if ln.level == "WARN" else msg
        hits = self._matches(text_)
        if tpl is not None and tpl.inert is None:
            tpl.inert = not hits and ln.level != "WARN" and not any(g in msg for g in _LINE_GATES)
        ids = frozenset(sig.id for sig, _ in hits)
        if ctx.prev_no == line_no - 1 and ctx.prev_text and raw[:1] in (b" ", b"\t"):
            # a hard-wrapped message: what only the two halves together say
            for sig, m in self._matches(ctx.prev_text + " " + msg.lstrip()):
                if sig.id not in ids and sig.id not in ctx.prev_ids:
                    hits = hits + [(sig, m)]
        ctx.prev_no, ctx.prev_text, ctx.prev_ids = line_no, text_[:2000], ids
        if any(sig.id in _INCIDENT_RULES for sig, _ in hits):
            ctx.last_watchdog = line_no
        in_incident = line_no - ctx.last_watchdog <= _INCIDENT_SPAN
        for sig, m in hits:
            self._hit(sig, m, rank, host, ln.pid, ln.ts, ev, order, msg, ctx.name)
            if in_incident:
                self.hits[sig.id].in_incident += 1
            if sig.id in _P2P_WAIT_RULES and rank is not None:
                # the traceback that ends here says which call the rank waited in
                self.state.add_wait(rank, ctx.c10d_calls.pop(rank, None), ev)
        if ln.level == "WARN" and not hits:
            self._unrecognised_warn(ln.where, msg, rank, host, ln.pid, ev, order)

    def _inert_line(self, ctx: _SourceContext, line_no: int, ln, tpl) -> None:
        """What :meth:`line` does with a line whose message no gate, signature or
        WARN rule reads (its template says so): the host is seen, the message is
        the one a hard-wrapped next line would be joined to. Nothing else."""
        ctx.host = ln.host
        self.context.observe_host(ln.host)
        self._matches(ln.text)  # the same lookups as line(): a message the bounded cache dropped feeds the context again
        ctx.prev_no, ctx.prev_text, ctx.prev_ids = line_no, ln.text[:2000], frozenset()
        self._inert.add(tpl.rest)  # later lines with it need not reach here at all

    def _matches(self, msg: str) -> list:
        """[(signature, match)] for ``msg``; a message seen for the first time also feeds the context."""
        hits = self._match_cache.get(msg)
        if hits is None:
            # what matches depends on the message alone, and big logs repeat messages
            self.context.observe(msg)
            hits, matched = [], set()
            for sig, lit, rx in self._matchers:
                if lit is not None and lit not in msg:
                    continue
                if sig.id in matched:
                    continue  # one hit per signature per line; its first pattern that matches
                m = rx.search(msg)
                if m:
                    matched.add(sig.id)
                    hits.append((sig, m))
            if len(self._match_cache) >= MATCH_CACHE:
                self._match_cache.clear()
                self._inert.clear()  # skip_inert may skip only lines whose message is in the cache
            self._match_cache[msg] = hits
        return hits

    def _unrecognised_warn(self, where, msg, rank, host, pid, ev, order) -> None:
        """An NCCL WARN no signature knows: kept as evidence, leaning to the category of the file that printed it."""
        prior = warn_prior(where, msg)
        if prior is None:
            return
        cat, also = prior
        entry = self.warns.get(cat)
        if entry is None:
            entry = self.warns[cat] = [0, [], order, also, set(), set(), where]
        entry[0] += 1
        if len(entry[1]) < MAX_EVIDENCE and msg not in self._warn_seen:
            entry[1].append(ev)
        if len(self._warn_seen) < MAX_WARN_KEPT:
            self._warn_seen.add(msg)
        if host and len(entry[4]) < 64:
            entry[4].add(host)
        key = self._key(rank, host, pid)
        if key is not None and len(entry[5]) < MAX_BLAMED:
            entry[5].add(key)

    def _fill(self, row: _RankRow, host, pid, source) -> None:
        row.host = row.host or host
        row.pid = row.pid if row.pid is not None else pid
        row.source = row.source or source

    def _watchdog(self, msg, rank, host, pid, ev, source) -> None:
        m = WATCHDOG.search(msg)
        seq = op = None
        if m:
            seq, op = num(m.group("seq"), MAX_DIGITS), m.group("op")
            nin, nout = _signed(m.group("nin")), _signed(m.group("nout"))
            numel = (nin, nout) if nin is not None and nout is not None else None
            if seq is None:
                return
            key = self._key(rank, host, pid)
            if key is not None:
                self.state.add_watchdog(WatchdogRecord(key, seq, op, numel, ev))
        else:
            w = WORK.search(msg)
            if w:
                seq = num(w.group("enq"), MAX_DIGITS)
        p = PROGRESS.search(msg)
        if p:
            enq, done = _signed(p.group("enq")), _signed(p.group("done"))
            key = self._key(rank, host, pid)
            if enq is not None and done is not None and key is not None:
                g = PG_ID.search(msg)
                self.state.add_progress(ProgressRecord(key, enq, done, ev, g.group("pg") if g else None))
                seq = enq if seq is None else seq
        if seq is None:
            return
        row = self._row(self._key(rank, host, pid), keep=True)
        if row is not None and (row.last_seq is None or seq >= row.last_seq):
            row.last_seq = seq
            row.last_op = op or row.last_op
            self._fill(row, host, pid, source)

    def _hit(self, sig, m, rank, host, pid, ts, ev, order, msg, source) -> None:
        h = self.hits.get(sig.id)
        if h is None:
            h = self.hits[sig.id] = _Hits(sig, first=order, groups={k: v for k, v in m.groupdict().items() if v is not None})
        h.count += 1
        if len(h.evidence) < MAX_EVIDENCE:
            h.evidence.append(ev)
        groups = m.groupdict()
        if groups.get("ranks"):
            for r in _parse_rank_list(groups["ranks"]):
                if len(h.blamed) < MAX_BLAMED:
                    h.blamed.add(r)
        for name in ("rank", "rank2"):
            if groups.get(name) is not None and len(h.blamed) < MAX_BLAMED:
                r = num(groups[name])
                size = num(groups.get("size"))
                if r is None:
                    continue
                if size is None:
                    h.blamed.add(r)
                elif r >= size:
                    h.blamed.add(r)
                    self.state.add_out_of_range(r, size, ev)
        key = self._key(rank, host, pid)
        if sig.blame == "values" and key is not None:  # a count every rank should share: kept per rank
            kind, value = value_kind(groups.get("what")), num(groups.get("value"), MAX_DIGITS)
            if kind is not None and value is not None:
                self.state.add_value(kind, key, value, ev)
        if key is not None and len(h.printers) < MAX_BLAMED:
            h.printers.add(key)
        if host and len(h.hosts) < 64:
            h.hosts.add(host)
        if not sig.benign and key is not None:
            row = self._row(key, keep=sig.severity == "error")
            if row is not None:
                self._fill(row, host, pid, source)
                if sig.severity == "error" and row.first_error is None:
                    row.first_error, row.first_error_at, row.first_rule = self.cut(msg, 200), order, sig.id

    # ---- conclusions ---------------------------------------------------
    def _resolve(self, key):
        """A row key as a global rank when the NCCL comm lines told us the pid's rank."""
        if isinstance(key, tuple):
            known = self.pid_rank.get((key[1], key[2]))
            if known is not None:
                return known[1]
        return key

    def finish(self, dumps: list, names: list) -> Diagnosis:
        # the world the dumps' process-group configs name counts like NCCL's nRanks: ranks of it that
        # left no log and no dump are the ones a timeout's printers waited for
        self.world_size = max(self.world_size or 0, (fr.world_size(dumps) if dumps else None) or 0) or None
        # fold pid-keyed rows into rank rows
        for key in [k for k in self.rows if isinstance(k, tuple)]:
            r = self._resolve(key)
            if r is key:
                continue
            row = self.rows.pop(key)
            into = self.rows.setdefault(r, _RankRow())
            for attr in ("host", "local_rank", "pid", "nccl_version", "last_seq", "last_op", "source"):
                if getattr(into, attr) is None:
                    setattr(into, attr, getattr(row, attr))
            if row.first_error and (into.first_error is None or row.first_error_at < into.first_error_at):
                into.first_error, into.first_error_at, into.first_rule = row.first_error, row.first_error_at, row.first_rule
        for key, (n, r, lr) in self.pid_rank.items():
            row = self.rows.get(r)
            if row is not None and row.local_rank is None:
                row.local_rank = lr
        wd = {}
        for key, rec in self.state.watchdog.items():
            r = self._resolve(key)
            if isinstance(r, int):
                rec.rank = r
                if r not in wd or rec.seq >= wd[r].seq:
                    wd[r] = rec
        self.state.watchdog = wd
        progress = {}
        for (key, pg), rec in self.state.progress.items():
            r = self._resolve(key)
            old = progress.get((r, pg))
            if isinstance(r, int) and (old is None or (rec.enqueued, rec.completed) >= (old.enqueued, old.completed)):
                rec.rank = r
                progress[(r, pg)] = rec
        self.state.progress = progress
        for kind, per in self.state.values.items():
            resolved = {}
            for key, rec in per.items():
                r = self._resolve(key)
                if isinstance(r, int):
                    resolved.setdefault(r, rec)
            self.state.values[kind] = resolved

        findings: list[tuple[int, float, tuple, Finding]] = []
        known_ranks = {k for k in self.rows if isinstance(k, int)}
        reasoned = (
            watchdog_findings(self.state, self.world_size, self._present_ranks())
            + version_findings(self.state, {r: (row.host, row.pid) for r, row in self.rows.items() if isinstance(r, int)})
            + world_size_findings(self.state, known_ranks)
            + out_of_range_findings(self.state)
            + plan_findings(self.state, fr.ranks_ahead(dumps) if dumps else frozenset())
            + wait_findings(self.state, self._present_ranks())
        )
        reasoned_categories = {f.category for f in reasoned}
        for f in reasoned:
            findings.append((_TIER_ROOT_ERROR, f.confidence, (-1,), f))

        any_error = any(h.sig.severity == "error" and not h.sig.benign for h in self.hits.values())
        facts = self._facts()
        card, folded = self._incident(reasoned)
        for h in self.hits.values():
            sig = h.sig
            if h in folded:
                continue
            f = self._finding(h, any_error)
            tier = _tier(sig, f)
            if sig.id == "watchdog_timeout" and reasoned_categories & {"collective_desync", "slow_rank_timeout"}:
                tier = _TIER_CONSEQUENCE  # the cross-rank finding says more than one timeout line
            others = sig.also
            cat = preferred_category(sig.id, sig.category, sig.also, facts) if sig.also and not reasoned else sig.category
            if cat != sig.category:  # another line of the log settles which of its categories holds
                others = (sig.category,) + tuple(c for c in sig.also if c != cat)
                f = replace(
                    f,
                    category=cat,
                    docs=CATEGORY[cat].docs,
                    title=f.title + f" (the rest of the log points to {CATEGORY[cat].title})",
                )
            findings.append((tier, f.confidence, h.first, f))
            if tier in (_TIER_ROOT_ERROR, _TIER_ROOT_WARNING):
                for alt in others:
                    findings.append((_TIER_ALTERNATIVE, round(f.confidence * 0.6, 3), h.first, _alternative(f, alt)))
        if folded:
            for i, (tier, conf, first, g) in enumerate(findings):
                if g.rule == card and not g.alternative_of:
                    findings[i] = (tier, conf, first, self._fold(g, folded))
                    break
        self._first_failure(findings)
        for f, first in self._warn_findings():
            findings.append((_TIER_ROOT_WARNING, f.confidence, first, f))
            for alt in self.warns[f.category][3]:
                findings.append((_TIER_ALTERNATIVE, round(f.confidence * 0.6, 3), first, _alternative(f, alt)))
        known = any(
            t in (_TIER_FIRST_FAILURE, _TIER_ROOT_ERROR, _TIER_ROOT_WARNING) and g.category != "unknown"
            for t, _, _, g in findings
        )
        if not known:
            for f, first in self._candidates(facts):
                findings.append((_TIER_ALTERNATIVE, f.confidence, first, f))

        if self.skipped_dumps:
            name, why = self.skipped_dumps[0]
            more = len(self.skipped_dumps) - 1
            findings.append(
                (
                    _TIER_INFO,
                    0.1,
                    (10**9,),
                    Finding(
                        rule="fr.dump_not_read",
                        category="unknown",
                        severity="info",
                        confidence=0.1,
                        title=f"Skipped flight-recorder dump {name}: {why}" + (f" (and {more} more)" if more else ""),
                        evidence=tuple(Evidence(n, None, w) for n, w in self.skipped_dumps[:MAX_EVIDENCE]),
                        cause="This file looks like a flight-recorder dump but was not analysed; the other inputs were.",
                        fix="Give the dump as torch wrote it (one JSON object per rank, a few MB).",
                    ),
                )
            )
        for name, why in self.truncated:
            findings.append(
                (
                    _TIER_INFO,
                    0.1,
                    (10**9,),
                    Finding(
                        rule="input_truncated",
                        category="unknown",
                        severity="info",
                        confidence=0.1,
                        title=f"{name} ended early; the lines before the cut were read",
                        evidence=(Evidence(name, None, why[:MAX_TEXT]),),
                        cause="The file is cut off or corrupt (a truncated .gz, a copy that did not finish).",
                        fix="Copy the complete log again if the end matters.",
                    ),
                )
            )
        for f in self._input_notes():
            findings.append((_TIER_INFO, f.confidence, (10**9,), f))

        statuses = []
        if dumps:
            fr_findings, statuses = list(fr.analyze_dumps(dumps)), list(fr.dump_rank_status(dumps))
            for f, tier in self._reconcile(fr_findings, findings):
                findings.append((tier, f.confidence, (-1,), f))
        self._fold_into_recorder(findings)
        for f in self._claimed_twice():
            findings.append((_TIER_ROOT_ERROR, f.confidence, (-1,), f))
            # two processes on one rank: the store port taken twice, the store waiting for the rank nobody
            # runs and the connections it breaks are what it causes
            for i, (tier, conf, first, g) in enumerate(findings):
                if g.category == "rendezvous_unreachable" and tier < _TIER_CONSEQUENCE:
                    findings[i] = (
                        _TIER_CONSEQUENCE,
                        conf,
                        first,
                        replace(g, title=g.title + f" (after rank {_span(f.ranks)} was claimed twice)"),
                    )

        findings.sort(key=lambda t: (t[0], -t[1], t[2]))
        ordered, seen = [], set()
        for _, _, _, f in findings:
            key = (f.rule, f.category) if f.alternative_of else f.rule  # one finding per rule, one alternative per category
            if key in seen:
                continue
            if f.alternative_of and any(o.category == f.category and not o.alternative_of for o in ordered):
                continue  # an alternative already covered by a real finding above it
            seen.add(key)
            ordered.append(f)
        ordered = [
            f
            for f in ordered
            if not (f.alternative_of and any(o.category == f.category and not o.alternative_of for o in ordered))
        ]
        table, cut = self._rank_table(statuses, {r for f in ordered for r in f.ranks})
        if cut:
            ordered.append(
                Finding(
                    rule="rank_table_cut",
                    category="unknown",
                    severity="info",
                    confidence=0.1,
                    title=f"Rank table cut at {MAX_RANKS} ranks: {'at least ' if cut >= MAX_CUT_COUNTED else ''}"
                    f"{cut} more ranks not shown",
                    cause=f"The per-rank table keeps {MAX_RANKS} rows (the ranks seen first) and the rows of ranks "
                    "that a finding blames; the findings themselves read every line.",
                    fix="Give the logs of the ranks you need in the table on their own (a directory per node).",
                )
            )
        return Diagnosis(findings=tuple(ordered), ranks=table, sources=tuple(names), lines_read=self.lines_read)

    def _incident(self, reasoned: list) -> tuple:
        """(rule of the card, [_Hits folded into it]) for the watchdog timeout
        of this log: one incident is one card. The card is the cross-rank
        finding that explains the timeout when there is one, else the timeout
        line's own finding; folded into it are the other lines torch prints
        for the same timeout and the wrappers (DistBackendError, torchrun's
        ChildFailedError) whose every line came right after one of them."""
        card = next((f.rule for f in reasoned if f.rule in _INCIDENT_CARDS), None)
        card = card or next((r for r in _INCIDENT_RULES if r in self.hits), None)
        if card is None:
            return None, []
        folded = [
            h
            for h in self.hits.values()
            if h.sig.id != card
            and (
                h.sig.id in _INCIDENT_RULES
                or (
                    h.sig.consequence
                    and h.sig.category == "unknown"
                    and h.sig.id not in _GENERIC_KIND
                    and h.in_incident == h.count
                )
            )
        ]
        return card, folded

    def _first_failure(self, findings: list) -> None:
        """The ranks a cross-rank timeout finding blames (they never reached
        the collective) whose own log shows an error of their own (not a
        wait for a peer) failed first: that error is the cause, promoted
        and blaming them; the timeout finding becomes its consequence. In place."""
        for i, (tier, conf, first, f) in enumerate(findings):
            if f.rule not in _INCIDENT_CARDS or not f.ranks:
                continue
            crashed = {r: self.rows[r] for r in f.ranks if r in self.rows and not self._waiting(self.rows[r].first_rule)}
            if not crashed:
                continue
            rules = {row.first_rule for row in crashed.values()}
            for j, (tier_j, conf_j, first_j, g) in enumerate(findings):
                if g.rule in rules and not g.alternative_of and tier_j != _TIER_FIRST_FAILURE:
                    blamed = tuple(sorted(r for r, row in crashed.items() if row.first_rule == g.rule))
                    findings[j] = (
                        _TIER_FIRST_FAILURE,
                        max(conf_j, f.confidence),
                        first_j,
                        replace(g, ranks=blamed, title=g.title + f"; rank {_span(blamed)} failed first"),
                    )
            findings[i] = (_TIER_CONSEQUENCE, conf, first, replace(f, title=f.title + f" (after rank {_span(crashed)} failed)"))

    def _fold_into_recorder(self, findings: list) -> None:
        """gloo's send/recv timeouts are the waiting side of the incident that
        the flight recorder explains (a desync, a rank that never arrived or
        came late, a send/recv without its partner), or else by where the
        ranks' tracebacks say they waited (reason.wait_findings; dropped when
        the recorder speaks: it says the same with more): one card, with
        their lines as its evidence. In place."""

        def explains(t, rules=("fr.",)) -> bool:  # a card that explains why the others waited
            tier, _, _, g = t
            return (
                g.rule.startswith(rules)
                and tier <= _TIER_ROOT_WARNING
                and g.severity == "error"
                and g.category in ("collective_desync", "slow_rank_timeout", "p2p_pairing")
            )

        if any(explains(t) for t in findings):
            findings[:] = [t for t in findings if t[3].rule not in _TRACEBACK_CARDS]
        h = self.hits.get("gloo_op_timeout")
        card = next((i for i, t in enumerate(findings) if explains(t, ("fr.",) + _TRACEBACK_CARDS)), None)
        if h is None or card is None:
            return
        tier, conf, first, g = findings[card]
        findings[card] = (tier, conf, first, self._fold(g, [h]))
        findings[:] = [t for t in findings if t[3].rule != h.sig.id]  # its finding and its alternatives

    def _fold(self, card: Finding, folded: list) -> Finding:
        """``card`` with the evidence of the hits ``folded`` into it, its title naming the ranks that printed them."""
        evidence, seen = list(card.evidence), {(e.source, e.line) for e in card.evidence}
        room = max(len(evidence), MAX_EVIDENCE) + 3
        lines, printers = 0, set()
        for h in sorted(folded, key=lambda h: h.first):
            lines += h.count
            printers |= {r for r in (self._resolve(k) for k in h.printers) if isinstance(r, int)}
            for e in h.evidence:
                if len(evidence) < room and (e.source, e.line) not in seen:
                    seen.add((e.source, e.line))
                    evidence.append(e)
        who = f" from rank {_span(printers)}" if printers else ""
        return replace(
            card, evidence=tuple(evidence), title=card.title + f" (one incident: {lines} more timeout and wrapper lines{who})"
        )

    def _facts(self) -> set:
        """The facts of the run (priors.LogContext) and of what matched."""
        facts = self.context.facts(self.state.watchdog)
        if self.hits.keys() & {"barrier_device_unknown", "guessing_device_id"}:
            facts.add("device_unknown")
        if any(h.sig.category == "p2p_pairing" and not h.sig.consequence for h in self.hits.values()):
            facts.add("p2p_ops")
        for h in self.hits.values():
            joined, expected = num(h.groups.get("joined")), num(h.groups.get("expected"))
            if joined is not None and expected is not None and joined > expected:
                facts.add("over_joined")  # more processes reached the store than the world size counts
        return facts

    def _warn_findings(self) -> list:
        """One low-confidence finding per category of the NCCL WARN lines no signature knows."""
        out = []
        for cat, (count, evidence, first, also, hosts, printers, where) in self.warns.items():
            ranks = tuple(sorted(r for r in {self._resolve(k) for k in printers} if isinstance(r, int)))[:MAX_BLAMED]
            src = f" from {where.split(':')[0]}" if where else ""
            out.append(
                (
                    Finding(
                        rule=f"nccl_warn.{cat}",
                        category=cat,
                        severity="warning",
                        confidence=0.3,
                        title=f"An NCCL warning no signature knows{src} ({count} line{'s' if count > 1 else ''}), "
                        f"pointing to {CATEGORY[cat].title}",
                        evidence=tuple(evidence),
                        ranks=ranks,
                        hosts=tuple(sorted(hosts))[:64],
                        cause="NCCL printed a WARN line that ncclnb has no signature for; the part of NCCL that printed it "
                        f"({where or 'named in the message'}) is where {CATEGORY[cat].title} problems show up, "
                        "so that is the first place to look.",
                        fix="Read the WARN line itself and the INFO lines just before it (NCCL_DEBUG=INFO, "
                        "NCCL_DEBUG_SUBSYS=INIT,NET,GRAPH); search NCCL's issue tracker for its wording.",
                        docs=CATEGORY[cat].docs,
                    ),
                    first,
                )
            )
        return out

    def _candidates(self, facts: set) -> list:
        """Ranked candidate causes of the generic errors that matched (or of a stop after NCCL's
        set-up with no error at all), conditioned on the run's facts."""
        generic = [(h.first, _GENERIC_KIND[i], h) for i, h in self.hits.items() if i in _GENERIC_KIND]
        if generic:
            first, kind, h = min(generic, key=lambda t: t[0])
            evidence = tuple(h.evidence[:2])
        elif (
            not any(h.sig.severity == "error" and not h.sig.benign for h in self.hits.values())
            and "init_seen" in facts
            and "completed" not in facts
            and not self.state.watchdog
        ):
            kind, first, evidence = "hang", (10**8,), ()
        else:
            return []
        shown = sorted(f for f in facts if f not in ("init_seen", "completed"))
        out = []
        # a log with no error at all is the weakest evidence: two candidates at most
        ranked = [t for t in rank_candidates(kind, facts) if t[1] >= MIN_CANDIDATE_SCORE][
            : MAX_CANDIDATES if kind != "hang" else 2
        ]
        for i, (c, score, moved) in enumerate(ranked):
            why = (
                f" The log shows: {', '.join(moved)}."
                if moved
                else (f" The log shows: {', '.join(shown)}." if shown else " The log shows nothing that narrows it down.")
            )
            out.append(
                (
                    Finding(
                        rule=f"candidate.{kind}.{c.category}",
                        category=c.category,
                        severity="info",
                        confidence=round(min(0.45, score), 3),
                        title=f"Candidate cause #{i + 1} of {CANDIDATE_KIND_TITLES[kind]}: {CATEGORY[c.category].title}",
                        evidence=evidence,
                        cause=c.why[:1].upper() + c.why[1:] + "." + why,
                        fix="To tell the candidates apart: " + c.check + ".",
                        docs=CATEGORY[c.category].docs,
                    ),
                    first,
                )
            )
        return out

    def _input_notes(self) -> list:
        """One info finding for the inputs skipped (binary data, an entry of a
        directory that could not be read), one for the files that changed
        while they were read (a rule appears once in a Diagnosis)."""
        out = []
        if self.skipped:
            named = [f"{name}: {why}" for _, name, why in self.skipped[:3]]
            more = len(self.skipped) - len(named)
            out.append(
                Finding(
                    rule="input_skipped",
                    category="unknown",
                    severity="info",
                    confidence=0.1,
                    title=(
                        f"{named[0]}; skipped"
                        if len(self.skipped) == 1
                        else f"{len(self.skipped)} inputs skipped: " + "; ".join(named) + (f"; and {more} more" if more else "")
                    ),
                    evidence=tuple(Evidence(name, None, why[:MAX_TEXT]) for _, name, why in self.skipped[:MAX_EVIDENCE]),
                    cause="These inputs hold no log text ncclnb can read, or could not be opened or listed; "
                    "the other inputs were read.",
                    fix="Give the log files themselves (text, or .gz of text), readable by this user.",
                )
            )
        if self.changed:
            name, how = self.changed[0]
            more = f"; and {len(self.changed) - 1} more files changed" if len(self.changed) > 1 else ""
            out.append(
                Finding(
                    rule="input_changed",
                    category="unknown",
                    severity="info",
                    confidence=0.1,
                    title=f"{name} changed while it was read: {how}{more}",
                    evidence=tuple(Evidence(n, None, h[:MAX_TEXT]) for n, h in self.changed[:MAX_EVIDENCE]),
                    cause="The file was truncated, rotated, replaced or removed while the doctor read it, so what was "
                    "read may not be what the path holds now.",
                    fix="Run the doctor on a copy (or on the rotated file) once the job stops writing it.",
                )
            )
        return out

    def _finding(self, h: _Hits, any_error: bool) -> Finding:
        sig = h.sig
        groups = h.groups
        severity, confidence = sig.severity, sig.confidence
        if sig.suspect and any_error:
            severity, confidence = "warning", max(confidence, 0.6)
        title = sig.title + _detail(groups, h.count)
        cause = _PLACEHOLDER.sub(lambda m: str(groups.get(m.group(1), m.group(0))), sig.cause)
        printers = {self._resolve(k) for k in h.printers}
        if sig.blame == "missing_ranks":
            blamed = set(self._missing_ranks(groups.get("expected")))
            if blamed:
                title += f"; rank {_span(blamed)} never joined"
        elif sig.blame == "silent_ranks":
            # the job's ranks that did not print it (a timeout's printers waited for them)
            size = self.world_size if self.world_size and self.world_size <= MAX_RANKS else 0
            job = {r for r in self._present_ranks() if isinstance(r, int)} | set(range(size))
            blamed = job - printers if printers & job else set()
            if len(blamed) > len(printers):
                blamed = set()  # the fewer are the late ones; most ranks silent says too little
            if blamed:
                absent = blamed - self._present_ranks()  # in the world size, yet no log and no dump
                if blamed - absent:
                    title += f"; rank {_span(blamed - absent)} did not time out"
                if absent:
                    title += f"; rank {_span(absent)} of the {size} ranks left no log"
        elif sig.blame == "store_host":
            blamed = set() if 0 in printers else {0}
            if blamed and 0 not in self._present_ranks():
                title += "; rank 0, the store host, left no log"
        elif sig.blame == "values":
            blamed = set()
            for kind, per in sorted(self.state.values.items()):
                if len({v for v, _ in per.values()}) > 1:  # the counts ranks should share differ
                    title += f"; the {kind} differ across ranks: " + ", ".join(
                        f"{v} on rank {r}" for r, (v, _) in sorted(per.items())[:8]
                    )
        elif sig.consequence or sig.benign:
            blamed = set(h.blamed)
        else:
            blamed = set(h.blamed) or printers
        if h.hosts and (groups.get("xid") is not None or (h.evidence and "NVRM: Xid" in h.evidence[0].text)):
            # an Xid's kernel line read through syslog / journalctl names its host (dmesg's does not: none is named)
            title += " on " + ", ".join(sorted(h.hosts)[:4]) + (f" and {len(h.hosts) - 4} more" if len(h.hosts) > 4 else "")
        ranks = tuple(sorted(r for r in blamed if isinstance(r, int)))[:MAX_BLAMED]
        return Finding(
            rule=sig.id,
            category=sig.category,
            severity=severity,
            confidence=confidence,
            title=title,
            evidence=tuple(h.evidence),
            cause=cause,
            fix=sig.fix,
            docs=sig.docs,
            ranks=ranks,
            hosts=tuple(sorted(h.hosts))[:64],
        )

    def _waiting(self, rule: Optional[str]) -> bool:
        """Is ``rule`` an error that says a rank waited for a peer (a timeout, a
        closed connection), rather than a failure of its own?"""
        h = self.hits.get(rule) if rule else None
        return h is None or h.sig.consequence or h.sig.benign or h.sig.category in _WAITING

    def _reconcile(self, fr_findings: list, findings: list) -> list:
        """The flight recorder says which rank never reached the collective the
        others waited in; that rank's own log says why. A rank that failed
        first with an error of its own is the cause (its error is promoted and
        the recorder's finding becomes its consequence); a rank that timed out
        in a send/recv while outside every recorded collective was stuck in a
        point-to-point exchange. Returns [(finding, tier)]."""
        out = []
        for f in fr_findings:
            tier = {"error": _TIER_ROOT_ERROR, "warning": _TIER_ROOT_WARNING}.get(f.severity, _TIER_INFO)
            if f.rule not in ("fr.missing_rank", "fr.late_rank") or not f.ranks:
                out.append((f, tier))
                continue
            rows = {r: self.rows.get(r) for r in f.ranks}
            crashed = {r: row for r, row in rows.items() if row is not None and not self._waiting(row.first_rule)}
            p2p = [r for r, row in rows.items() if row is not None and row.first_rule in _P2P_WAIT_RULES]
            if crashed:
                for i, (_, conf, first, g) in enumerate(findings):
                    if g.rule in {row.first_rule for row in crashed.values()} and not g.alternative_of:
                        blamed = tuple(sorted(r for r, row in crashed.items() if row.first_rule == g.rule))
                        g = replace(g, ranks=blamed, title=g.title + f"; rank {_span(blamed)} failed first")
                        findings[i] = (_TIER_FIRST_FAILURE, max(conf, f.confidence), first, g)
                out.append((replace(f, title=f.title + f" (after rank {_span(crashed)} failed)"), _TIER_CONSEQUENCE))
            elif f.rule == "fr.missing_rank" and p2p and set(p2p) == set(f.ranks):
                out.append(
                    (
                        replace(
                            f,
                            rule="fr.missing_rank_p2p",
                            category="p2p_pairing",
                            title=_p2p_title(p2p, f.title),
                            cause=f"The flight recorder shows rank {_span(p2p)} never entered the collective the others "
                            "wait in, yet its own log shows it timed out waiting for a peer: it was blocked in a "
                            "point-to-point send/recv (isend/irecv, batch_isend_irecv) whose partner never posted "
                            "the matching operation. The others finished their part and moved on.",
                            fix="Pair every isend with exactly one irecv on the peer (same size, same order): exchange the "
                            "counts first and post only the pairs both sides know, in one batch_isend_irecv, or use "
                            "all_to_all_single; ncclnb.guard.check_p2p_plan(sends, recvs) checks the plan before "
                            "anything is posted.",
                        ),
                        tier,
                    )
                )
            else:
                out.append((f, tier))
        return out

    def _claimed_twice(self) -> list:
        """Ranks that two different log files claim (``rank2.log`` beside
        ``rank2.proc3.log``; ``rank2.out``/``rank2.err`` are one process), or
        that two processes claim in their lines (reason.duplicate_claims:
        framework banners, NCCL's communicator lines)."""
        doubled = {r: names for r, names in self.rank_files.items() if len(names) > 1}
        lines = duplicate_claims(self.state, self.world_size)
        if not doubled and not lines:
            return []
        ranks = tuple(sorted(set(doubled) | set(lines)))[:MAX_BLAMED]
        evidence = tuple(
            Evidence(name, None, f"log of a process claiming rank {r}")
            for r in ranks[:4]
            if r in doubled
            for name in sorted(doubled[r].values())[:2]
        )
        evidence += tuple(ev for r in ranks[:4] for ev in lines.get(r, ()))
        return [
            Finding(
                rule="rank_claimed_twice",
                category="rank_world_size_mismatch",
                severity="error",
                confidence=0.85,
                title=f"Rank {_span(ranks)} was claimed by more than one process",
                evidence=evidence,
                cause="Two processes were started with the same RANK, so a rank of the world size has no process "
                "(the others wait for it at the rendezvous or in the first collective) while two processes "
                "answer for another: RANK computed by a script from the wrong variable, or a process of an "
                "earlier attempt still running beside its restart.",
                fix="Let the launcher number the ranks (torchrun, srun's SLURM_PROCID) and kill leftover processes of "
                "an earlier attempt before relaunching; check that RANK runs over 0..WORLD_SIZE-1 once each.",
                docs=CATEGORY["rank_world_size_mismatch"].docs,
                ranks=ranks,
            )
        ]

    def _present_ranks(self) -> set:
        """Ranks that left a trace: a line naming them, or a log file named after them."""
        return {self._resolve(k) for k in self.rows} | self.source_ranks

    def _missing_ranks(self, expected) -> list:
        """Ranks of the world size that left no trace at all, when some did."""
        size = num(expected) or self.world_size
        present = {r for r in self._present_ranks() if isinstance(r, int)}
        if not size or not present or size > 1 << 20:
            return []
        return [r for r in range(size) if r not in present][:MAX_BLAMED]

    def _rank_table(self, statuses: list, blamed: set) -> tuple[tuple[RankStatus, ...], int]:
        """The rows, by rank, and how many ranks were left out: past MAX_RANKS
        only the rows of ranks in ``blamed`` are kept."""
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


def _parse_rank_list(text: str) -> list:
    """ "1-3,5" -> [1, 2, 3, 5]; bounded, ASCII digits only."""
    out: list = []
    for part in text.split(",")[:MAX_BLAMED]:
        lo, _, hi = part.strip().partition("-")
        if not (lo.isascii() and lo.isdigit() and len(lo) < 8) or (hi and not (hi.isascii() and hi.isdigit() and len(hi) < 8)):
            continue
        a, b = int(lo), int(hi) if hi else int(lo)
        out.extend(range(a, min(b, a + MAX_BLAMED) + 1))
        if len(out) >= MAX_BLAMED:
            break
    return out[:MAX_BLAMED]


def _p2p_title(p2p, missing_title: str) -> str:
    m = re.search(r"never reached (?P<where>.+) that (?P<present>.+) waited in$", missing_title)
    head = f"Rank {_span(p2p)} timed out in a send/recv outside any collective"
    return head + (f"; {m.group('present')} waited for it in {m.group('where')}" if m else "")


_LOG_EXTENSIONS = (".gz", ".log", ".txt", ".out", ".err", ".stdout", ".stderr")


def _log_stem(name: str) -> str:
    """``rank2.err.gz`` -> ``rank2``: the stdout and stderr files of one process share it."""
    base = os.path.basename(name)
    changed = True
    while changed:
        changed = False
        for ext in _LOG_EXTENSIONS:
            if base.endswith(ext) and len(base) > len(ext):
                base, changed = base[: -len(ext)], True
    return base


def _span(ranks) -> str:
    """[4, 5, 6, 7, 9] -> "4-7, 9"."""
    out, run = [], []
    for r in sorted(ranks):
        if run and r == run[-1] + 1:
            run.append(r)
            continue
        if run:
            out.append(f"{run[0]}-{run[-1]}" if len(run) > 2 else ", ".join(map(str, run)))
        run = [r]
    if run:
        out.append(f"{run[0]}-{run[-1]}" if len(run) > 2 else ", ".join(map(str, run)))
    return ", ".join(out)


def old_is_smaller(known, n) -> bool:
    """True when the pid's largest communicator is this one (so its rank is the global rank)."""
    return known is not None and known[0] == n


def _tier(sig: Signature, f: Finding) -> int:
    if sig.benign:
        return _TIER_BENIGN
    if sig.consequence:
        return _TIER_CONSEQUENCE if f.severity != "info" else _TIER_INFO
    return {"error": _TIER_ROOT_ERROR, "warning": _TIER_ROOT_WARNING}.get(f.severity, _TIER_INFO)


def _detail(groups: dict, count: int) -> str:
    bits = []
    if "joined" in groups and "expected" in groups:
        joined, expected = num(groups["joined"]), num(groups["expected"])
        if joined is None or expected is None:
            return ""
        bits.append(f"{joined}/{expected} joined, {expected - joined} missing")
    elif "rank" in groups and "size" in groups:
        if num(groups["rank"]) is not None and num(groups["size"]) is not None:
            bits.append(f"rank {num(groups['rank'])} with world size {num(groups['size'])}")
    elif "seq" in groups and "op" in groups:
        if num(groups["seq"], MAX_DIGITS) is not None:
            bits.append(f"{groups['op']} at SeqNum {num(groups['seq'], MAX_DIGITS)}")
    elif "xid" in groups:  # a kernel log's Xid line: what the number means
        from .xid import describe

        meaning = describe(groups["xid"])
        if meaning:
            bits.append(meaning)
    if count > 1:
        bits.append(f"{count} lines")
    return f" ({'; '.join(bits)})" if bits else ""


def _alternative(f: Finding, category: str) -> Finding:
    """``f`` read as a sign of ``category``: the same rule, lower confidence."""
    return Finding(
        rule=f.rule,
        alternative_of=f.rule,
        category=category,
        severity="info",
        confidence=round(f.confidence * 0.6, 3),
        title=f"Also consistent with {CATEGORY[category].title}: {f.title}",
        evidence=f.evidence[:2],
        cause=f.cause,
        fix=f.fix,
        docs=CATEGORY[category].docs,
        ranks=f.ranks,
        hosts=f.hosts,
    )


def _parallel_workers(stream) -> int:
    """Worker processes for ``stream`` when it is a large regular file opened
    plainly (not stdin, not gzip, not text); 0 otherwise."""
    if not isinstance(stream, io.BufferedReader) or not isinstance(getattr(stream, "name", None), str):
        return 0
    try:
        st = os.fstat(stream.fileno())
    except (OSError, ValueError):
        return 0
    return workers_for(st.st_size) if stat.S_ISREG(st.st_mode) else 0


def _parse_dump_bytes(data: bytes):
    """(parsed dict, "") or (None, why) for the bytes of a dump. Size, the
    number of JSON values (counted from the separators before parsing) and
    nesting are bounded, so a hostile file cannot exhaust memory or the stack."""
    if len(data) > MAX_DUMP:
        return None, f"larger than {MAX_DUMP >> 20} MiB"
    items = data.count(b",") + data.count(b"[") + data.count(b"{")
    if items > MAX_DUMP_ITEMS:
        return None, f"holds about {items:,} JSON values, more than the {MAX_DUMP_ITEMS:,} read"
    try:
        parsed = json.loads(data.decode("utf-8", "replace"))
    except RecursionError:
        return None, "nested too deeply to be a flight-recorder dump"
    except ValueError as exc:  # also an integer past int()'s 4300 digits
        return None, f"not valid JSON ({getattr(exc, 'msg', exc)})".splitlines()[0][:200]
    except MemoryError:
        return None, "too large to parse in memory"
    if not isinstance(parsed, dict):
        return None, "not a JSON object"
    return parsed, ""


def _signed(text: Optional[str]) -> Optional[int]:
    """ "-1" -> -1, "4096" -> 4096: an element count (NCCL writes -1 when unknown)."""
    if text and text[0] == "-":
        n = num(text[1:], MAX_DIGITS)
        return -n if n is not None else None
    return num(text, MAX_DIGITS)


def _read_upto(stream, limit: int, head: bytes = b"") -> bytearray:
    """``head`` and then the stream up to ``limit`` bytes in all (a short read
    is not the end: only an empty one is)."""
    data = bytearray(head)
    while len(data) < limit:
        chunk = stream.read(min(limit - len(data), 8 << 20))
        if not chunk:
            break
        data += chunk
    return data


class _Chained:
    """A read-only stream that first returns ``head`` and then the rest of ``stream``."""

    def __init__(self, head: bytes, stream):
        self.head, self.stream = head, stream

    def read(self, n: int = -1) -> bytes:
        if self.head:  # a short read: the caller asks again for the rest
            out, self.head = self.head, b""
            return out
        return self.stream.read(n)

    def close(self) -> None:
        self.stream.close()


def diagnose(
    *sources,
    top: Optional[int] = None,
    signatures: Optional[tuple[Signature, ...]] = None,
    redact: bool = True,
    collapse: bool = True,
) -> Diagnosis:
    """Read logs (paths, directories of per-rank logs, ``.gz`` files, ``-``
    for stdin, or the text itself as str/bytes) and return a
    :class:`~ncclnb.model.Diagnosis`: findings ranked most likely root cause
    first, and a per-rank table.

    A str is a path when it has no newline and exists; a str that looks like
    a path but does not exist raises :class:`DoctorInputError` (an OSError
    with one-line message), as does an unreadable file. Text passed in (str or
    bytes) always yields a Diagnosis, whatever it holds. A file or stream
    with no log text (binary data; no line break in MAX_NO_NEWLINE bytes of a
    pipe or device; a pickle that is not a plain-data flight-recorder dump)
    and an entry of a directory that cannot be read are skipped and named in
    an ``input_skipped`` finding; when no input had log text (all of them
    skipped, empty or white space only), DoctorInputError. A file truncated or replaced while it is read is
    named in ``input_changed``. Memory stays flat as input grows. ``top`` keeps only the first N findings.

    ``redact`` (default True) replaces credentials in evidence lines and first
    errors with ``<redacted>`` (:mod:`ncclnb.model.redact`); False keeps the
    lines as they were, for local use.

    ``collapse`` (default True) reads a message that many lines repeat behind
    NCCL's per-rank prefix once (:mod:`ncclnb.doctor.collapse`); False
    normalises every line whole. Both give the same Diagnosis.
    """
    if not sources:
        raise DoctorInputError(22, "no input given (a path, a directory, '-' or log text)", "<input>")
    col = _Collector(signatures if signatures is not None else load_signatures(), redact=redact, collapse=collapse)
    dumps: list = []
    names: list[str] = []
    for index, src in enumerate(expand(sources)):
        names.append(src.name)
        col.read(src, index, dumps)
    if (
        col.blank
        and not dumps
        and not col.skipped_dumps
        and len({i for i, _, _ in col.blank} | {i for i, _, _ in col.skipped}) == len(names)
    ):
        # every input was empty or unreadable: "no known failure" would claim a log was read
        unread = sorted(col.blank + col.skipped)
        raise nothing_readable(sources, [(n, why) for _, n, why in unread])
    if col.skipped:  # inputs not read are not sources of the diagnosis; with none read, nothing to say
        unread = {i for i, _, _ in col.skipped}
        names = [n for i, n in enumerate(names) if i not in unread]
        if not names:
            raise nothing_readable(sources, [(n, why) for _, n, why in col.skipped])
    diag = col.finish(dumps, names)
    if top is not None and top >= 0:
        diag = Diagnosis(findings=diag.findings[:top], ranks=diag.ranks, sources=diag.sources, lines_read=diag.lines_read)
    return diag
