"""Stage 2 of :func:`~ncclnb.doctor.diagnose`: each line read, matched.

:class:`Matcher` takes the lines the reader hands it (stage 1, in
:mod:`ncclnb.doctor.core`), one by one, and keeps what the later stages
need: the signature hits (:class:`Hits`), the reasoning state (versions,
comm lines, watchdog and progress lines, p2p plans:
:class:`~ncclnb.doctor.reason.ReasonState`), the rank rows
(:class:`~ncclnb.doctor.rank_table.RankRows`), the facts of the run that
decide between causes (:class:`~ncclnb.doctor.priors.LogContext`) and the
NCCL WARN lines no signature knows. Memory stays bounded whatever the input.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from typing import Optional

from ..model import Evidence
from ..model.redact import scrub_cut
from .collapse import InertRests, Normalizer
from .kb import PROGRESS_TRIGGERS, TRIGGERS, Signature, pattern_covered, required_any
from .normalize import MAX_DIGITS, clean, num
from .priors import NAMED_VAR, PAIR_ANSWERS, TUNING_VARS, LogContext, warn_prior
from .rank_table import MAX_BLAMED, MAX_CUT_COUNTED, MAX_RANKS, RankRows, log_stem
from .reason import (
    BANNER,
    C10D_FRAME,
    COMM,
    LAUNCH,
    PG_ID,
    PLAN,
    PROGRESS,
    REASONING_PATTERNS,
    COLL_TRACE,
    VERSION,
    version_read,
    VERSION_TUPLE,
    FR_P2P_TEXT,
    FR_STATE_TEXT,
    NET_IB_USING,
    WATCHDOG,
    WORK,
    CommRecord,
    ProgressRecord,
    ReasonState,
    P2P_CALLS,
    WatchdogRecord,
    launch_count,
    value_kind,
)

MAX_EVIDENCE = 5  # evidence lines kept per finding
MAX_TEXT = 500  # characters of a line kept as evidence
MATCH_CACHE = 1 << 16  # distinct messages whose signature matches are remembered (a 1024-rank log has thousands)
MAX_WARN_KEPT = 256  # distinct unrecognised NCCL WARN messages remembered

# a rank's own error that means it timed out in a send/recv
P2P_WAIT_RULES = {"gloo_op_timeout"}
# the lines torch prints for one watchdog timeout (the timeout, the rank's progress, "taking the entire process
# down"): one incident, one card; a wrapper (DistBackendError, terminate called ...) printed within
# _INCIDENT_SPAN lines after them belongs to the same incident
INCIDENT_RULES = ("watchdog_timeout", "timeout_at_nccl_work", "nccl_ops_failed_or_timed_out")
_INCIDENT_SPAN = 8
# NCCL's line when a communicator is set up or torn down ("comm 0x.. rank 2 nranks 4 cudaDev 2 ... Init COMPLETE"):
# it says which global rank the printing process is, so that process is one row of the rank table
COMM_DONE = re.compile(r"comm 0x[0-9a-f]+ rank (?P<rank>[0-9]+) nranks (?P<nranks>[0-9]+) cudaDev ", re.ASCII)
# the substrings on which line() reads a message beyond its signatures (versions, comm lines, banners, watchdog
# and progress lines, p2p plans): a message holding none of them, with no signature hit and not a WARN, is inert
# (collapse.Template.inert) and later lines with it take the short way (_inert_line). A new gate goes here too.
# (a version line: NCCL's own, or the tuple torch reports; Matcher.line tests the same substrings)
_VERSION_GATES = ("NCCL version", "ccl version", "CCL (", "ccl (", "ccl.version()")
_LINE_GATES: tuple[str, ...] = (
    "--n",
    "SLURM_N",
    "SLURM_JOB_NUM",
    "PET_N",
    *_VERSION_GATES,
    "profiling_name",
    "NET/IB",
    "nRanks",
    " nranks ",
    "GLOBAL_RANK",
    "WorkNCCL(",
    "NCCL work:",
    "enqueued work",
    "p2p plan",
    "distributed_c10d.py",
    "can_device_access_peer",
    "opCount",
)

# ---- stack dumps of living processes: where each rank waits ----------------
# py-spy dump ("Process 31207: python train.py", 'Thread 31207 (idle): "MainThread"', frames "fn (file.py:410)") and
# faulthandler ("Thread 0x00007f... (most recent call first):", frames 'File "file.py", line 410 in fn') list the
# innermost frame first: the first call of torch.distributed or of a pipeline's send/recv wrapper is where the rank waits
# (or the py-spy command the paste shows in its place, with what the reporter wrote after it: "py-spy dump --pid 40112
# (stage 1, rank 1)")
STACK_PROCESS = re.compile(
    r"^(?:Process (?P<pid>[0-9]{1,9}): |(?:\$ )?(?:sudo )?py-spy dump (?:--pid|-p) (?P<pid2>[0-9]{1,9})\b)(?P<cmd>.*)$", re.ASCII
)
STACK_THREAD = re.compile(
    r"^(?:Thread (?:0x[0-9a-fA-F]+|[0-9]+) \((?:idle|active)[^)]{0,20}\): "
    r"|(?:Current thread|Thread) 0x[0-9a-fA-F]+ \(most recent call first\):)",
    re.ASCII,
)
STACK_FRAME = re.compile(
    r"^\s*(?:(?P<fn>[A-Za-z_][A-Za-z0-9_]{0,63}) \((?P<file>[^()\s]+):[0-9]+\)"
    r"|File \"(?P<file2>[^\"]+)\", line [0-9]+ in (?P<fn2>[A-Za-z_][A-Za-z0-9_]{0,63}))\s*$",
    re.ASCII,
)
# the global rank a py-spy header's command line names: "(rank 1)" after it, "--rank 1", "rank=1", "RANK=1"; never
# "--local_rank 1" / "--local-rank=1"
_CMD_RANK = re.compile(
    r"\((?:global )?rank (?P<r>[0-9]{1,7})\)|(?:(?<![A-Za-z_-])|(?<= --))(?:rank|RANK)[= ](?P<r2>[0-9]{1,7})\b", re.ASCII
)
# a pipeline's point-to-point wrappers (Megatron, DeepSpeed, torchtitan) by the direction they wait in, named by the
# torch.distributed call they post (reason.P2P_CALLS), so that a rank stuck in one reads as a point-to-point wait
STACK_P2P = {
    "recv_forward": "irecv",
    "recv_backward": "irecv",
    "send_forward": "isend",
    "send_backward": "isend",
    "send_forward_recv_backward": "batch_isend_irecv",
    "send_backward_recv_forward": "batch_isend_irecv",
    "send_forward_recv_forward": "batch_isend_irecv",
    "send_backward_recv_backward": "batch_isend_irecv",
    "send_forward_backward_recv_forward_backward": "batch_isend_irecv",
}
# the calls under those wrappers that name no direction: the wrapper a frame further out names it
_STACK_P2P_GENERIC = {"_communicate": "batch_isend_irecv", "batch_isend_irecv": "batch_isend_irecv", "P2POp": "batch_isend_irecv"}
_STACK_SPAN = 64  # lines between a stack's header and its frames (or between its frames) at most
_STACK_GATES = (
    "Process ",
    "py-spy dump",
    "(idle)",
    "(active",
    "most recent call first",
    *STACK_P2P,
    *_STACK_P2P_GENERIC,
    "isend",
    "irecv",
)

_LINE_GATES += _STACK_GATES
# the gates whose reading of a line is the same again when one process prints it again: each keeps its first
# (a version per process, a comm's rank by its size, a launcher option's value, the peer-access fact). Every
# other gate (comm lines that pick the row by the largest comm seen so far, banners, watchdog and progress
# records, tracebacks and stacks, p2p plans) makes a line never an echo (Matcher._echo); a new gate is unsafe
# until it is listed here
_ECHO_SAFE = (
    "--n",
    "SLURM_N",
    "SLURM_JOB_NUM",
    "PET_N",
    *_VERSION_GATES,
    " nranks ",
    "can_device_access_peer",
    "NET/IB",
)
_ECHO_UNSAFE = tuple(g for g in _LINE_GATES if g not in _ECHO_SAFE)


_MASK_BYTE_DIGITS = bytes.maketrans(b"0123456789", b"\0" * 10)


class ProgressLines:
    """Which lines say only that the run went on: they hold a progress trigger (kb.PROGRESS_TRIGGERS) that no
    signature or reasoning pattern can need, and no other trigger nor any of line()'s gates. Decided once per
    shape (the line with its ASCII digits masked): a training log's loss lines differ in their numbers only; a
    literal with no digit is in the shape exactly when it is in the line, those with one are looked for in the line."""

    def __init__(self, patterns, gates) -> None:
        other = tuple(t for t in TRIGGERS if t not in PROGRESS_TRIGGERS)
        # a pattern that a line with no other trigger may match names the progress triggers it may rely on
        needed = [p for p in patterns if not pattern_covered(p, other)]
        safe = [t for t in PROGRESS_TRIGGERS if not any(t in p or pattern_covered(p, other + (t,)) for p in needed)]
        progress = tuple(t.encode() for t in safe)
        # (a progress literal with a digit, "1s/it", is looked for in the line, its masked form in the shape; where
        # all ten digits' literals are progress literals, the masked form in the shape is enough: "\0s/it")
        digits = [lit for lit in progress if lit != lit.translate(None, b"0123456789")]
        by_mask: dict = {}
        for lit in digits:
            by_mask.setdefault(lit.translate(_MASK_BYTE_DIGITS), []).append(lit)
        complete = {m for m, lits in by_mask.items() if len(lits) == 10 and m.count(0) == 1}
        self.progress = tuple(lit for lit in progress if lit not in digits) + tuple(complete)
        self.progress_masked = tuple((m, lit) for m, lits in by_mask.items() if m not in complete for lit in lits)
        rest = [t.encode() for t in TRIGGERS if t not in safe] + [g.encode() for g in gates]  # a gate is read beyond
        self.with_digit = tuple(lit for lit in rest if lit != lit.translate(None, b"0123456789"))
        self.plain = tuple(lit for lit in rest if lit not in self.with_digit)
        self.masked = tuple((lit.translate(_MASK_BYTE_DIGITS), lit) for lit in self.with_digit)
        # shape -> None when the line holds something else to read, else the literals with a digit whose
        # masked form the shape holds (the line can hold such a literal only then); bounded
        self.shapes: dict = {}

    def only(self, raw: bytes) -> bool:
        shape = raw.translate(_MASK_BYTE_DIGITS)
        try:
            check, needed = self.shapes[shape]
        except KeyError:
            if len(self.shapes) >= 4096:
                self.shapes.clear()
            needed = None  # the progress literals with a digit the line must hold (None: it holds one without)
            if not any(lit in shape for lit in self.progress):
                needed = tuple(lit for masked, lit in self.progress_masked if masked in shape)
            only = needed != () and not any(lit in shape for lit in self.plain)
            check = tuple(lit for masked, lit in self.masked if masked in shape) if only else None
            self.shapes[shape] = (check, needed)
        return (
            check is not None and not any(lit in raw for lit in check) and (needed is None or any(lit in raw for lit in needed))
        )


@cache
def _progress_lines_for(patterns: tuple) -> ProgressLines:
    """One ProgressLines per set of patterns (about 20 ms to build): a notebook diagnoses many logs."""
    return ProgressLines(patterns, _LINE_GATES)


@dataclass
class Hits:
    """What one signature matched: how often, its first lines and whom they name."""

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
class SourceContext:
    """The input being read, and what its lines so far tell the next one."""

    name: str
    index: int
    rank_hint: Optional[int]
    host: Optional[str] = None
    prev_no: int = 0  # the last candidate line's number and text (to rejoin a hard-wrapped message)
    prev_text: str = ""
    prev_ids: frozenset = frozenset()
    last_watchdog: int = -(1 << 30)  # number of the last line of a watchdog timeout in this source
    c10d_calls: dict = field(default_factory=dict)  # rank -> torch.distributed call of its traceback's last frame
    stack_rank: Optional[int] = None  # the rank of the process whose stack dump is being read (py-spy, faulthandler)
    stack: Optional[list] = None  # [rank, line of its last frame or header, call it waits in or None, final]


class Matcher:
    """Reads lines into hits, reasoning state, rank rows, run facts and unknown WARNs."""

    def __init__(self, sigs: tuple[Signature, ...], rows: RankRows, redact: bool = True, collapse: bool = True):
        # text kept from a line, cut to a length; credentials in it replaced before the cut
        self.cut = scrub_cut if redact else (lambda text, limit: text[:limit])
        # flat (signature, literal, regex) list: the per-line loop is the hot path for candidate lines
        self._matchers = [(sig, lit, rx) for sig in sigs for lit, rx in sig.compiled]
        self._shortlists: dict = {}  # message shape (digits masked) -> the matchers worth trying on it, bounded
        # a matcher with no single literal may still require one of a few (kb.required_any: one per branch)
        self._any: dict = {}
        for entry in self._matchers:
            alts = required_any(entry[2].pattern, entry[2].flags) if entry[1] is None else None
            if alts is not None and not any(map(_masked, alts)):
                self._any[id(entry)] = alts
        # the matchers whose literals a message's shape cannot rule out: none, or one with a digit (or the mask)
        self._always = {
            id(entry)
            for entry in self._matchers
            if (entry[1] is None and id(entry) not in self._any) or (entry[1] is not None and _masked(entry[1]))
        }
        self._match_cache: dict = {}  # message -> [(signature, match)], bounded
        self._normalize = Normalizer(enabled=collapse)  # raw line -> (Line, template); see collapse.py
        self._gates: dict = {}  # message -> (holds a stack gate, a line gate, an echo-unsafe gate), bounded
        self._echoes: dict = {}  # what makes a line an echo (see _echo) -> (its matched text, its signature ids), bounded
        self._inert = InertRests()
        # messages a once_per_message signature read (every process prints them alike): read no more, bounded
        self._once_read: set = set()
        self._progress: Optional[ProgressLines] = None  # rests of inert messages still in the match cache (collapse.skip_inert)
        self.rows = rows
        self.hits: dict[str, Hits] = {}
        self.state = ReasonState()
        self.world_size: Optional[int] = None  # the largest nRanks an NCCL comm line gave
        self.context = LogContext()  # facts of the run that decide between causes
        # (category, NCCL tuning variable the message names or None) -> [count, evidence, first, also, hosts,
        # printers, where, said set] of unrecognised WARNs; read as ``warns`` once the whole log is known
        self._warns: dict = {}
        self._warn_seen: set = set()
        self._superseded: dict = {}  # signature id -> messages a source-keyed signature explained (see _by_source)

    @property
    def warns(self) -> dict:
        """category -> [count, evidence, first, also, hosts, printers, where] of the NCCL WARN lines no signature
        knows, each leaning to the category of the file that printed it; a WARN that names an NCCL tuning
        variable (priors.TUNING_VARS) this run set, wherever in the log it was set, is that setting's failure
        (nccl_env_override), the file's category its alternative."""
        out: dict = {}
        for (cat, var), (count, evidence, first, also, hosts, printers, where, said) in self._warns.items():
            if var is not None and (said or var in self.context.env):
                also = tuple(dict.fromkeys(c for c in (cat, *also) if c != "nccl_env_override"))
                cat = "nccl_env_override"
            entry = out.get(cat)
            if entry is None:
                out[cat] = [count, list(evidence), first, also, set(hosts), set(printers), where]
                continue
            entry[0] += count
            entry[1] = (entry[1] + [e for e in evidence if e not in entry[1]])[:MAX_EVIDENCE]
            if first < entry[2]:
                entry[2], entry[6] = first, where
            entry[3] = tuple(dict.fromkeys((*entry[3], *also)))
            entry[4] |= hosts
            entry[5] |= printers
        return out

    def _by_source(self, hits: list, where_len: int, msg: str) -> list:
        """``hits`` of one NCCL WARN line (matched as "<where> NCCL WARN <msg>") when a signature keyed on the
        source file that printed it (transport/nvls.cc: NVLS) is among them: that one says what failed, the
        wording another signature reads in the message ("Cuda failure 'out of memory'") is only how it failed,
        so only the source-keyed ones count, here and on the lines that repeat the message (torch's "Last
        error:")."""
        keyed = [(sig, m) for sig, m in hits if m.start() < where_len]
        if not keyed or len(keyed) == len(hits):
            return hits
        keyed_ids = {sig.id for sig, _ in keyed}
        for sig, _ in hits:
            if sig.id not in keyed_ids:
                said = self._superseded.setdefault(sig.id, set())
                if len(said) < MAX_WARN_KEPT:
                    said.add(msg)
        return keyed

    def _stack_line(self, ctx: SourceContext, line_no: int, text: str, rank, host, pid, ev) -> None:
        """A line of a stack dump (py-spy, faulthandler): a process header names the rank, a thread header opens
        a stack, and its first frame in torch.distributed or in a pipeline's send/recv wrapper is where that rank
        waits (ReasonState.add_wait, as a traceback's last torch.distributed frame is): reason.wait_findings reads them."""
        m = STACK_PROCESS.match(text)
        if m:
            r = _CMD_RANK.search(m.group("cmd"))
            got = num(r.group("r") or r.group("r2")) if r else None
            if got is None:
                known = self.rows.pid_rank.get((host, num(m.group("pid") or m.group("pid2"))))
                got = known[1] if known is not None else rank
            ctx.stack_rank, ctx.stack = got, None
            return
        if STACK_THREAD.match(text):
            ctx.stack = [ctx.stack_rank if ctx.stack_rank is not None else rank, line_no, None, False]
            return
        st = ctx.stack
        if st is None or st[3] or line_no - st[1] > _STACK_SPAN:
            return
        f = STACK_FRAME.match(text)
        if not f:
            return
        st[1] = line_no
        fn, path = (f.group("fn"), f.group("file")) if f.group("fn") else (f.group("fn2"), f.group("file2"))
        if fn in STACK_P2P:
            call, final = STACK_P2P[fn], True
        elif fn in _STACK_P2P_GENERIC:
            call, final = _STACK_P2P_GENERIC[fn], False
        elif "distributed_c10d" in path and not fn.startswith("_") and fn not in ("wait", "wrapper"):
            call, final = fn, True
            if st[2] is not None and call not in P2P_CALLS:
                st[3] = True  # a collective further out than a send/recv: the rank waits in the send/recv
                return
        else:
            return
        r = st[0]
        if r is None:
            st[2], st[3] = call, final
            return
        if st[2] is None:
            if r in self.state.waits:
                st[3] = True  # a dump or traceback read before already says where this rank waits
                return
            self.state.add_wait(r, call, ev)
        elif r in self.state.waits:
            self.state.waits[r] = (call, ev)  # the wrapper further out names the direction of the exchange
        st[2], st[3] = call, final

    def _progress_lines(self) -> ProgressLines:
        if self._progress is None:  # built once a log shows progress (most never need it)
            patterns = tuple(rx.pattern for _, _, rx in self._matchers) + REASONING_PATTERNS + (COMM_DONE.pattern, LAUNCH.pattern)
            self._progress = _progress_lines_for(patterns)
        return self._progress

    @property
    def inert(self) -> Optional[InertRests]:
        """The rests of messages known inert, which a scanner may leave out; None when lines are not collapsed."""
        return self._inert if self._normalize.enabled else None

    def line(self, ctx: SourceContext, line_no: int, raw: bytes) -> None:
        """Line ``line_no`` of ``ctx``'s input (bytes as read) matched and kept."""
        if self.context.progress and self._progress_lines().only(raw):
            # a training log prints a loss or a rate every step, each line new: once the run is known to have
            # gone on, they say nothing more. A hard-wrapped next line joins none
            ctx.prev_no, ctx.prev_text, ctx.prev_ids = line_no, "", frozenset()
            return
        ln, tpl = self._normalize(raw)  # collapse.Normalizer: a rest after NCCL's prefix is read once
        if ln is None:
            return
        if ctx.prev_no == line_no - 1 and "can_device_access_peer" in ctx.prev_text:
            self.context.observe_pair(ctx.prev_text, ln.text)
        if (tpl is not None and tpl.inert) or (ln.level != "WARN" and ln.text in self._once_read):
            self._inert_line(ctx, line_no, ln, tpl, raw)
            return
        msg = ln.text
        echo_key = None
        if ln.level != "WARN" and raw[:1] not in (b" ", b"\t"):
            echo_key = (ctx.index, ln.host, ln.pid, ln.rank, ln.local_rank, ln.where, msg)
            known = self._echoes.get(echo_key)
            if known is not None:
                self._echo(ctx, line_no, ln, known, raw)
                return
        text = raw.decode("utf-8", "replace")
        if ln.host:
            ctx.host = ln.host
        rank = ln.rank if ln.rank is not None else ctx.rank_hint
        host = ln.host
        ev = Evidence(ctx.name, line_no, self.cut(clean(text), MAX_TEXT))
        order = (ctx.index, line_no)

        if "NCCL version" in msg or "ccl version" in msg or "CCL (" in msg or "ccl (" in msg or "ccl.version()" in msg:
            ver: Optional[str] = None
            cuda: Optional[str] = None
            m = VERSION.search(msg)
            if m and not msg[m.end("ver") : m.end("ver") + 1].isdigit():  # a part longer than VERSION reads: none
                ver, cuda = version_read(m.group("ver")), m.group("cuda")
            elif m is None:
                t = VERSION_TUPLE.search(msg)
                if t:
                    ver = f"{t.group('a') or 2}.{t.group('b')}.{t.group('c')}"
            if ver is not None:
                # one entry per process: two processes on one host may load different libraries. A line
                # with no host is kept hostless (never the host of the line before it, which in a log of
                # many hosts is anyone's), by its rank or else its source and pid; with neither rank nor pid
                # (a script's own print per node), by its version: one process loads one library, so two
                # versions printed so are two processes
                where = (
                    (host, ln.pid if ln.pid is not None else rank)
                    if host
                    else (
                        None,
                        rank if rank is not None else f"{ctx.name}:{ln.pid}" if ln.pid is not None else f"{ctx.name}:{ver}",
                    )
                )
                self.state.add_version(where, ver, cuda, ev)
                row = self.rows.row(self.rows.key(rank, host, ln.pid))
                if row is not None:
                    row.nccl_version = row.nccl_version or ver + (f"+cuda{cuda}" if cuda else "")
                    self.rows.fill(row, host, ln.pid, ctx.name)
        if "nRanks" in msg:
            m = COMM.search(msg)
            # four calls, not a generator over the names: this runs for every comm line of every rank
            r, n, lr, nodes = (
                (num(m.group("rank")), num(m.group("nranks")), num(m.group("lrank")), num(m.group("nnodes")))
                if m
                else (None,) * 4
            )
            if r is not None and n is not None and lr is not None and nodes is not None:
                self.state.add_comm(CommRecord(host, r, n, nodes, ev))
                self.world_size = max(self.world_size or 0, n)
                if host is not None and ln.pid is not None:
                    self.state.add_claim(n, r, (host, ln.pid), ev)
                if ln.pid is not None:
                    old = self.rows.pid_rank.get((host, ln.pid))
                    if old is None or n > old[0]:
                        if old is not None or len(self.rows.pid_rank) < MAX_CUT_COUNTED:
                            self.rows.pid_rank[(host, ln.pid)] = (n, r, lr)
                largest = ln.pid is None or old_is_smaller(self.rows.pid_rank.get((host, ln.pid)), n)
                row = self.rows.row(r if largest else self.rows.key(None, host, ln.pid))
                if row is not None:
                    row.local_rank = lr if row.local_rank is None else row.local_rank
                    self.rows.fill(row, host, ln.pid, ctx.name)
        if " nranks " in msg and ln.pid is not None:
            m = COMM_DONE.search(msg)
            r, n = (num(m.group("rank")), num(m.group("nranks"))) if m else (None, None)
            if r is not None and n is not None and r < n:
                old = self.rows.pid_rank.get((host, ln.pid))
                if (old is None and len(self.rows.pid_rank) < MAX_CUT_COUNTED) or (old is not None and n > old[0]):
                    self.rows.pid_rank[(host, ln.pid)] = (n, r, old[2] if old is not None else None)
        if "--n" in msg or "SLURM_N" in msg or "SLURM_JOB_NUM" in msg or "PET_N" in msg:
            for m in LAUNCH.finditer(msg):
                self.state.add_launch(m.group("opt"), launch_count(m.group("n")), ev)
        if "GLOBAL_RANK" in msg:
            m = BANNER.search(msg)
            if m:
                r, size = num(m.group("rank")), num(m.group("size"))
                if r is None or size is None:
                    r = None
                else:
                    if r >= size:
                        self.state.add_out_of_range(r, size, ev)
                    # the process: its log (stdout and stderr of one process share a stem), host, pid, local rank
                    self.state.add_claim(size, r, (log_stem(ctx.name), host, ln.pid, ln.local_rank), ev)
                row = self.rows.row(r)
                if row is not None:
                    self.rows.fill(row, host, ln.pid, ctx.name)
        if "WorkNCCL(" in msg or "NCCL work:" in msg or "enqueued work" in msg:
            self._watchdog(msg, rank, host, ln.pid, ev, ctx.name)
        if "NET/IB" in msg and host and "Using" in msg:
            m = NET_IB_USING.search(msg)
            if m:
                self.state.add_ib_devices(host, m.group("devs"), ev)
        if "profiling_name" in msg:
            m = FR_P2P_TEXT.search(msg)
            state = FR_STATE_TEXT.search(msg) if m else None
            if m and state and state.group("state") != "completed":
                # the recorder's own rank waits in this send or recv (its first such entry read says where)
                self.state.add_wait(int(m.group("rank")), "i" + m.group("op"), ev)
        if "distributed_c10d.py" in msg and rank is not None:
            m = C10D_FRAME.search(msg)
            if m and (rank in ctx.c10d_calls or len(ctx.c10d_calls) < MAX_RANKS):
                ctx.c10d_calls[rank] = m.group("fn")
        gates = self._gates.get(msg)
        if gates is None:  # which gate families the message holds, looked up once per distinct message
            if len(self._gates) >= MATCH_CACHE:
                self._gates.clear()
            gates = self._gates[msg] = (
                any(g in msg for g in _STACK_GATES),
                any(g in msg for g in _LINE_GATES),
                any(g in msg for g in _ECHO_UNSAFE),
            )
        stack_gate, line_gate, echo_unsafe = gates
        if stack_gate or (ctx.stack is not None and "distributed_c10d.py" in msg):
            self._stack_line(ctx, line_no, msg.strip(), rank, host, ln.pid, ev)
        if "opCount" in msg and rank is not None:
            m = COLL_TRACE.search(msg)
            if m:
                self.state.add_coll_trace(
                    rank, int(m.group("oc"), 16), (m.group("op"), int(m.group("count")), int(m.group("dt"))), ev
                )
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
        hits = self.matches(text_)
        if hits and self._superseded and not (ln.level == "WARN" and ln.where):
            # a line that repeats a message a source-keyed signature explained (torch's "Last error:"); a WARN
            # printed by another file is read on its own
            hits = [(sig, m) for sig, m in hits if msg.strip() not in self._superseded.get(sig.id, ())]
        if len(hits) > 1 and ln.level == "WARN" and ln.where:
            hits = self._by_source(hits, len(ln.where), msg.strip())
        once = bool(hits) and all(sig.once_per_message for sig, _ in hits)
        if once or (tpl is not None and tpl.inert is None):  # the gate scan only where it decides something
            quiet = ln.level != "WARN" and not line_gate
            if once and quiet and len(self._once_read) < MATCH_CACHE:
                self._once_read.add(msg)  # this line is read; the same message again, from any process, is not
            if tpl is not None and tpl.inert is None:
                tpl.inert = quiet and (not hits or once)
        ids = frozenset(sig.id for sig, _ in hits)
        if ctx.prev_no == line_no - 1 and ctx.prev_text and raw[:1] in (b" ", b"\t"):
            # a hard-wrapped message: what only the two halves together say
            for sig, m in self.matches(ctx.prev_text + " " + msg.lstrip()):
                if sig.id not in ids and sig.id not in ctx.prev_ids:
                    hits = hits + [(sig, m)]
        ctx.prev_no, ctx.prev_text, ctx.prev_ids = line_no, text_[:2000], ids
        if hits and any(sig.id in INCIDENT_RULES for sig, _ in hits):
            ctx.last_watchdog = line_no
        in_incident = line_no - ctx.last_watchdog <= _INCIDENT_SPAN
        for sig, m in hits:
            self._hit(sig, m, rank, host, ln.pid, ln.ts, ev, order, msg, ctx.name)
            if in_incident:
                self.hits[sig.id].in_incident += 1
            if sig.id in P2P_WAIT_RULES and rank is not None:
                # the traceback that ends here says which call the rank waited in
                self.state.add_wait(rank, ctx.c10d_calls.pop(rank, None), ev)
        if ln.level == "WARN" and not hits:
            self._unrecognised_warn(ln.where, msg, rank, host, ln.pid, ev, order)
        elif echo_key is not None and (hits or line_gate) and not echo_unsafe:
            # (an inert line is not remembered: the collapsed path never shows it here twice, the plain one does)
            if not any(sig.id in INCIDENT_RULES or sig.id in P2P_WAIT_RULES for sig, _ in hits):
                if len(self._echoes) >= MATCH_CACHE:
                    self._echoes.clear()
                    self._inert.repeats.clear()  # an echo no longer known is read in full again
                self._echoes[echo_key] = (text_, ids)
                if not ids and msg.strip() not in PAIR_ANSWERS:
                    self._inert.add_repeat(raw)  # this very line again is an echo that counts for nothing

    def _echo(self, ctx: SourceContext, line_no: int, ln, known: tuple, raw: bytes) -> None:
        """What :meth:`line` does with an echo: a message its process (this source, host, pid and rank)
        printed before, read in full then (``known``: its matched text and signature ids). It counts again
        for the signatures it hits and is the line a hard-wrapped next one joins; its evidence, and the
        versions, rows and blame it names, are those of the first time (each of them keeps its first)."""
        text_, ids = known
        if not ids and ln.text.strip() not in PAIR_ANSWERS:
            self._inert.add_repeat(raw)
        if ln.host:
            ctx.host = ln.host
            self.context.observe_host(ln.host)
        hits = self.matches(text_)  # the cached hits (a message the bounded cache dropped feeds the context again)
        in_incident = line_no - ctx.last_watchdog <= _INCIDENT_SPAN
        for sig, _ in hits:
            if sig.id not in ids:
                continue  # left out at its first reading (_by_source)
            h = self.hits[sig.id]
            h.count += 1
            if in_incident:
                h.in_incident += 1
        ctx.prev_no, ctx.prev_text, ctx.prev_ids = line_no, text_[:2000], ids

    def _is_wrapper(self, rule: Optional[str]) -> bool:
        """Whether ``rule`` (a signature this log hit) says that something failed, not why (``consequence``)."""
        h = self.hits.get(rule) if rule else None
        return h is not None and h.sig.consequence

    def _inert_line(self, ctx: SourceContext, line_no: int, ln, tpl, raw: bytes) -> None:
        """What :meth:`line` does with a line whose message no gate, signature or
        WARN rule reads (its template says so), or one a once_per_message
        signature has read already: the host is seen, the message is the one a
        hard-wrapped next line would be joined to. Nothing else."""
        if ln.host:  # (a line with no host, a once-read plugin line pasted twice, borrows none and names none)
            ctx.host = ln.host
            self.context.observe_host(ln.host)
        self.matches(ln.text)  # the same lookups as line(): a message the bounded cache dropped feeds the context again
        ctx.prev_no, ctx.prev_text, ctx.prev_ids = line_no, ln.text[:2000], frozenset()
        if tpl is not None:
            tpl.inert = True  # a rest first seen after its message was read once
            self._inert.add(tpl.rest)  # later lines with it need not reach here at all
        elif ln.text.strip() not in PAIR_ANSWERS:
            self._inert.add_repeat(raw)  # no NCCL prefix to collapse it by: this very line again

    def matches(self, msg: str) -> list:
        """[(signature, match)] for ``msg``; a message seen for the first time also feeds the context."""
        hits = self._match_cache.get(msg)
        if hits is None:
            # what matches depends on the message alone, and big logs repeat messages
            self.context.observe(msg)
            hits, matched = [], set()
            for sig, lit, rx in self.shortlist(msg):
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

    def shortlist(self, msg: str) -> list:
        """The matchers, in order, less those whose literal ``msg`` cannot hold. A 1024-rank log holds
        thousands of messages that differ only in their numbers (a rank, a comm address), each new to the
        match cache; they share a shape (ASCII digits masked), and a literal with no digit (nor the mask)
        is in a message exactly when it is in its shape, so the literal tests are made once per shape.
        Literals with a digit stay on the list, to be tested on the message itself (as are all kept). A
        matcher with no literal of its own stays when its shape holds one of the few its regex requires
        one of (kb.required_any), or when those have a digit."""
        shape = msg.translate(_MASK_DIGITS)
        got = self._shortlists.get(shape)
        if got is None:
            always, alts = self._always, self._any
            got = [
                entry
                for entry in self._matchers
                if id(entry) in always
                or (entry[1] in shape if entry[1] is not None else any(a in shape for a in alts[id(entry)]))
            ]
            if len(self._shortlists) >= MATCH_CACHE:
                self._shortlists.clear()
            self._shortlists[shape] = got
        return got

    def _unrecognised_warn(self, where, msg, rank, host, pid, ev, order) -> None:
        """An NCCL WARN no signature knows: kept as evidence, leaning to the category of the file that printed it."""
        prior = warn_prior(where, msg)
        # an NCCL tuning variable the message names (the run may set it later in the paste: decided in ``warns``)
        named = next((v for v in NAMED_VAR.findall(msg) if v in TUNING_VARS), None) if "NCCL_" in msg else None
        if prior is None and named is None:
            return
        cat, also = prior if prior is not None else ("nccl_env_override", ())
        entry = self._warns.get((cat, named))
        if entry is None:
            entry = self._warns[(cat, named)] = [0, [], order, also, set(), set(), where, False]
        entry[7] = entry[7] or (named is not None and self.context.tuning_var_named(msg) is not None)
        entry[0] += 1
        if len(entry[1]) < MAX_EVIDENCE and msg not in self._warn_seen:
            entry[1].append(ev)
        if len(self._warn_seen) < MAX_WARN_KEPT:
            self._warn_seen.add(msg)
        if host and len(entry[4]) < 64:
            entry[4].add(host)
        key = self.rows.key(rank, host, pid)
        if key is not None and len(entry[5]) < MAX_BLAMED:
            entry[5].add(key)

    def _watchdog(self, msg, rank, host, pid, ev, source) -> None:
        m = WATCHDOG.search(msg)
        seq = op = None
        if m:
            seq, op = num(m.group("seq"), MAX_DIGITS), m.group("op")
            nin, nout = _signed(m.group("nin")), _signed(m.group("nout"))
            numel = (nin, nout) if nin is not None and nout is not None else None
            if seq is None:
                return
            key = self.rows.key(rank, host, pid)
            if key is not None:
                self.state.add_watchdog(WatchdogRecord(key, seq, op, numel, ev))
        else:
            w = WORK.search(msg)
            if w:
                seq = num(w.group("enq"), MAX_DIGITS)
        p = PROGRESS.search(msg)
        if p:
            enq, done = _signed(p.group("enq")), _signed(p.group("done"))
            key = self.rows.key(rank, host, pid)
            if enq is not None and done is not None and key is not None:
                g = PG_ID.search(msg)
                self.state.add_progress(ProgressRecord(key, enq, done, ev, g.group("pg") if g else None))
                seq = enq if seq is None else seq
        if seq is None:
            return
        row = self.rows.row(self.rows.key(rank, host, pid), keep=True)
        if row is not None and (row.last_seq is None or seq >= row.last_seq):
            row.last_seq = seq
            row.last_op = op or row.last_op
            self.rows.fill(row, host, pid, source)

    def _hit(self, sig, m, rank, host, pid, ts, ev, order, msg, source) -> None:
        h = self.hits.get(sig.id)
        if h is None:
            h = self.hits[sig.id] = Hits(sig, first=order, groups={k: v for k, v in m.groupdict().items() if v is not None})
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
        key = self.rows.key(rank, host, pid)
        if sig.blame == "values":  # a count every rank should share: kept per rank (the one the line names, else its own)
            named = num(groups.get("rank")) if rank is None else None
            kind, value = value_kind(groups.get("what")), num(groups.get("value"), MAX_DIGITS)
            if kind is not None and value is not None and (named is not None or key is not None):
                self.state.add_value(kind, named if named is not None else key, value, ev)
        if key is not None and len(h.printers) < MAX_BLAMED:
            h.printers.add(key)
        if host and len(h.hosts) < 64:
            h.hosts.add(host)
        if not sig.benign and key is not None:
            row = self.rows.row(key, keep=sig.severity == "error")
            if row is not None:
                self.rows.fill(row, host, pid, source)
                if sig.severity == "error" and row.first_error is None:
                    row.first_error, row.first_error_at, row.first_rule = self.cut(msg, 200), order, sig.id
                elif sig.severity == "error" and not sig.consequence and self._is_wrapper(row.first_rule):
                    # a wrapper said first that the rank failed (DistBackendError, "unhandled system error"); its
                    # "Last error:" lines say why: that is the rank's own error, as of the wrapper's moment
                    row.first_error, row.first_rule = self.cut(msg, 200), sig.id


_MASK_DIGITS = str.maketrans("0123456789", "\0" * 10)  # a message's shape: its ASCII digits masked


def _masked(lit: str) -> bool:
    """Does the shape of a message change ``lit``'s presence (it holds a digit or the mask)?"""
    return lit != lit.translate(_MASK_DIGITS) or "\0" in lit


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


def old_is_smaller(known, n) -> bool:
    """True when the pid's largest communicator is this one (so its rank is the global rank)."""
    return known is not None and known[0] == n


def _signed(text: Optional[str]) -> Optional[int]:
    """ "-1" -> -1, "4096" -> 4096: an element count (NCCL writes -1 when unknown)."""
    if text and text[0] == "-":
        n = num(text[1:], MAX_DIGITS)
        return -n if n is not None else None
    return num(text, MAX_DIGITS)
