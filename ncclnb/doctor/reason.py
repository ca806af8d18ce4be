"""Cross-rank reasoning: what no single line says.

The matcher keeps bounded per-rank state (the last watchdog record, each
rank's last enqueued and completed work, the call its traceback waited in,
the NCCL version, the communicator table, the ranks each process claims)
from the lines the scanner hands it; the functions below turn that state
into findings that blame the ranks that are wrong, not those that printed
the error: ranks that diverged (``collective_desync``), lagged or never
arrived (``slow_rank_timeout``), or waited in a send/recv no peer matched
(``p2p_pairing``), hosts on different NCCL versions (``version_mismatch``),
ranks outside the world size or claimed by two processes
(``rank_world_size_mismatch``).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Optional

from ..model import Evidence, Finding
from .cards import card, prose
from ..model.words import how_many

# numbers are ASCII digits of bounded length (a version part of 5,000 digits is not a version;
# the reader drops a match followed by one more digit)
VERSION = re.compile(r"NCCL version (?P<ver>[0-9]{1,4}\.[0-9]{1,4}\.[0-9]{1,4})(?:[-+]cuda(?P<cuda>[0-9.]{1,16}))?", re.ASCII)


def version_read(ver: str) -> str:
    """An NCCL version as printed, read back: torch 1.x printed NCCL 2.9+'s version code (major * 10000 +
    minor * 100 + patch, 21003 for 2.10.3) as code / 1000, (code % 1000) / 100, the rest: "21.0.3". No NCCL
    major has reached 20, so a major that large is that misprint."""
    a, _, rest = ver.partition(".")
    b, _, c = rest.partition(".")
    if not (a.isdigit() and b.isdigit() and c.isdigit()) or int(a) < 20:
        return ver
    code = int(a) * 1000 + int(b) * 100 + int(c)
    return f"{code // 10000}.{code % 10000 // 100}.{code % 100}"


# the version as torch reports it, a tuple (torch.cuda.nccl.version(), collect_env-style prints: "NCCL (2, 18, 1)",
# "nccl version: (2, 20, 5)", "torch.cuda.nccl.version() = (2, 19, 3)")
# (the bare tuple read with its major, 2: "NCCL (" alone is on every line NCCL prints, too weak a trigger)
VERSION_TUPLE = re.compile(
    r"(?:NCCL \(2,|nccl \(2,|(?:NCCL version|nccl version|ccl\.version\(\)):? ?=? ?\((?P<a>[0-9]{1,2}),)"
    r" ?(?P<b>[0-9]{1,3}), ?(?P<c>[0-9]{1,3})\)",
    re.ASCII,
)
COMM = re.compile(
    r"comm (?P<comm>0x[0-9a-f]+) rank (?P<rank>[0-9]+) nRanks (?P<nranks>[0-9]+) nNodes (?P<nnodes>[0-9]+) "
    r"localRanks (?P<lranks>[0-9]+) localRank (?P<lrank>[0-9]+)",
    re.ASCII,
)
WATCHDOG = re.compile(
    r"WorkNCCL\(SeqNum=(?P<seq>[0-9]+), OpType=(?P<op>[A-Za-z_]+)"
    r"(?:, NumelIn=(?P<nin>-?[0-9]+), NumelOut=(?P<nout>-?[0-9]+))?(?:, Timeout\(ms\)=(?P<tmo>[0-9]+))?",
    re.ASCII,
)
# torch 2.2-2.3 ("Timeout at NCCL work: 7, last enqueued NCCL work: 7, ...") and 2.4+ ("failure detected by
# watchdog at work sequence id: 7 PG status: last enqueued work: 7, last completed work: 6")
WORK = re.compile(
    r"(?:Timeout at NCCL work|failure detected by watchdog at work sequence id): (?P<seq>[0-9]+),? "
    r"(?:PG status: )?last enqueued (?:NCCL )?work: (?P<enq>[0-9]+), "
    r"last completed (?:NCCL )?work: (?P<done>[0-9]+)",
    re.ASCII,
)
# the process group a torch line names: 2.4+ "[PG ID 3 PG GUID 3(...) Rank 1]", 2.2-2.3 "[PG 3 Rank 1]"
PG_ID = re.compile(r"\[PG (?:ID )?(?P<pg>[0-9]{1,9}) ", re.ASCII)
# a rank's progress in every torch wording that prints it: 2.2-2.4 "last enqueued NCCL work: 7, last completed NCCL
# work: 6" (the timeout line, "Exception ... detected by watchdog at work: 7, ...", and the "Received a dump signal"
# line of a rank that did not time out itself: "Last enqueued NCCL work: 6, ..."), 2.5+ "last enqueued work: 7,
# last completed work: 6"
PROGRESS = re.compile(
    r"[Ll]ast enqueued (?:NCCL )?work: (?P<enq>-?[0-9]+), "
    r"last completed (?:NCCL )?work: (?P<done>-?[0-9]+)",
    re.ASCII,
)
# a framework's banner naming a process's global rank and the world size it was given
# (PyTorch Lightning: "Initializing distributed: GLOBAL_RANK: 7, MEMBER: 8/4")
BANNER = re.compile(r"GLOBAL_RANK: (?P<rank>[0-9]+), MEMBER: (?P<member>[0-9]+)/(?P<size>[0-9]+)", re.ASCII)

# a Python traceback's frame in torch.distributed's collective API: the call a rank waited in when it timed out
C10D_FRAME = re.compile(r'distributed_c10d\.py", line [0-9]+, in (?P<fn>[A-Za-z_][A-Za-z0-9_]{0,63})', re.ASCII)
# its point-to-point calls (a blocking send/recv, or the requests of isend/irecv and batch_isend_irecv)
P2P_CALLS = frozenset({"send", "recv", "isend", "irecv", "batch_isend_irecv"})

# the HCAs NCCL's IB transport uses on a host: "NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_bond_0:1/RoCE ; OOB ib0:10.2.0.11<0>"
NET_IB_USING = re.compile(
    r"NET/IB : Using (?P<devs>(?:\[[0-9]{1,3}\] ?[\w.-]{1,64}:[0-9]{1,3}/(?:IB|RoCE)[ ;]*){1,64})", re.ASCII
)
_IB_DEVICE = re.compile(r"\[[0-9]{1,3}\] ?(?P<dev>[\w.-]{1,64}:[0-9]{1,3}/(?:IB|RoCE))", re.ASCII)

# a flight-recorder entry pasted as text (a dump's dict printed by pickle.load or fr_trace's raw view): a send or
# recv of the recorder's rank ("nccl:recv 0<-4": rank 0 receiving from 4) and whether it ever completed
FR_P2P_TEXT = re.compile(r"'profiling_name': 'nccl:(?P<op>send|recv) (?P<rank>[0-9]{1,7}) ?(?:->|<-) ?[0-9]{1,7}'", re.ASCII)
FR_STATE_TEXT = re.compile(r"'state': '(?P<state>scheduled|started|completed)'", re.ASCII)

# a rank's point-to-point plan, printed by ncclnb.guard.p2p.log_p2p_plan (read by ncclnb.doctor.pairing)
PLAN = re.compile(r"ncclnb guard: p2p plan \{", re.ASCII)
# (not in REASONING_PATTERNS: the regex parser factors the options' common "--n" out of the alternation, so the
# lint cannot see that each option is a trigger; tests/doctor/test_launcher_world.py checks that instead)
# how many processes a launcher starts: Slurm's --nodes/-N, --ntasks-per-node, --ntasks/-n (in #SBATCH lines or
# on srun's command line) and torchrun's (torch.distributed.launch's) --nnodes, --nproc_per_node / --nproc-per-node
LAUNCH = re.compile(
    r"(?P<opt>--nodes|--ntasks-per-node|--ntasks|--nnodes|--nproc[_-]per[_-]node"
    r"|\bSLURM_(?:NNODES|JOB_NUM_NODES|NTASKS|NTASKS_PER_NODE)|\bPET_(?:NNODES|NPROC_PER_NODE))[= ]+"
    r"(?P<n>[0-9]{1,5}(?::[0-9]{1,5})?)\b",
    re.ASCII,
)
# Slurm's environment (an env dump, the job's echo), and torchrun's PET_ variables, say what their options said
LAUNCH_ENV = {
    "SLURM_NNODES": "nodes",
    "SLURM_JOB_NUM_NODES": "nodes",
    "SLURM_NTASKS": "ntasks",
    "SLURM_NTASKS_PER_NODE": "ntasks-per-node",
    # torchrun's options as the environment a Kubernetes operator (PyTorchJob) hands it
    "PET_NNODES": "nnodes",
    "PET_NPROC_PER_NODE": "nproc-per-node",
}


def launch_count(text: str) -> int:
    """A LAUNCH value as a count: "4", or an elastic range "2:2" that fixes it; -1 for a range that does not."""
    lo, _, hi = text.partition(":")
    return int(lo) if not hi or hi == lo else -1


# NCCL's per-call trace (NCCL_DEBUG_SUBSYS=COLL): "AllReduce: opCount 3f4 sendbuff 0x... recvbuff 0x... count 1
# datatype 7 op 0 root 0 comm 0x... [nranks=4] stream 0x...": the op, its number in the communicator, size and type
COLL_TRACE = re.compile(
    r"\b(?P<op>AllReduce|AllGather|ReduceScatter|Broadcast|Reduce|AllToAll|Send|Recv): opCount (?P<oc>[0-9a-f]{1,16}) "
    r"[^\n]{0,200}?count (?P<count>[0-9]{1,20}) datatype (?P<dt>[0-9]{1,3})",
    re.ASCII,
)
MAX_TRACED_OPS = 4  # the last opCounts of each rank's trace that are compared

# exported with the knowledge base for the grep comparison
REASONING_PATTERNS = (
    NET_IB_USING.pattern,
    FR_P2P_TEXT.pattern,
    VERSION.pattern,
    VERSION_TUPLE.pattern,
    COMM.pattern,
    WATCHDOG.pattern,
    WORK.pattern,
    PROGRESS.pattern,
    BANNER.pattern,
    PLAN.pattern,
    C10D_FRAME.pattern,
    COLL_TRACE.pattern,
)


@dataclass
class WatchdogRecord:
    rank: int
    seq: int
    op: str
    numel: Optional[tuple[int, int]]
    evidence: Evidence


@dataclass
class ProgressRecord:
    """A rank's last enqueued and last completed work (sequence numbers of its default group)."""

    rank: object  # a global rank, or the matcher's ("pid", host, pid) key until it is resolved
    enqueued: int
    completed: int
    evidence: Evidence
    pg: Optional[str] = None  # the process group the line names ("[PG ID 3 ...", "[PG 3 Rank"), None when it names none


@dataclass
class CommRecord:
    host: Optional[str]
    rank: int
    nranks: int
    nnodes: int
    evidence: Evidence


@dataclass
class ReasonState:
    """Bounded state the reasoning needs; fed line by line by the matcher."""

    watchdog: dict = field(default_factory=dict)  # rank -> last WatchdogRecord
    coll_trace: dict = field(default_factory=dict)  # rank -> {opCount: (op, count, datatype, Evidence)}, its last few
    versions: dict = field(default_factory=dict)  # (host or source, pid) -> (version, cuda, Evidence)
    comm_by_host: dict = field(default_factory=dict)  # host -> CommRecord with the largest nRanks
    out_of_range: dict = field(default_factory=dict)  # rank -> (size, Evidence)
    plans: dict = field(default_factory=dict)  # rank -> its last P2PPlan (ncclnb guard: p2p plan)
    progress: dict = field(default_factory=dict)  # (rank, process group) -> its latest ProgressRecord
    claims: dict = field(default_factory=dict)  # (world size, rank) -> {process: Evidence} claiming it
    waits: dict = field(default_factory=dict)  # rank -> (c10d call or None, Evidence) of its first timeout
    values: dict = field(default_factory=dict)  # kind ("batches", "examples") -> {rank: (count, Evidence)}
    launch: dict = field(default_factory=dict)  # launcher option (LAUNCH) -> {value: Evidence} as the log gives it
    ib_devices: dict = field(default_factory=dict)  # host -> (the HCAs NCCL's IB transport uses there, Evidence)
    limit: int = 8192

    def add_ib_devices(self, host: str, line: str, ev: Evidence) -> None:
        """The HCAs a host's NET/IB line lists (its first such line; every process on it prints the same)."""
        if host in self.ib_devices or len(self.ib_devices) >= 256:
            return
        devs = tuple(m.group("dev") for m in _IB_DEVICE.finditer(line))
        if devs:
            self.ib_devices[host] = (devs, ev)

    def add_launch(self, option: str, value: int, ev: Evidence) -> None:
        """A launcher's option as a command line or #SBATCH line in the log sets it (the first line per value)."""
        per = self.launch.setdefault(LAUNCH_ENV.get(option) or option.lstrip("-").replace("_", "-"), {})
        if len(per) < 4:
            per.setdefault(value, ev)

    def add_value(self, kind: str, rank, value: int, ev: Evidence) -> None:
        """A count ``rank`` printed that every rank should share (the first one it printed of a kind)."""
        per = self.values.setdefault(kind, {})
        if rank not in per and len(per) < self.limit:
            per[rank] = (value, ev)

    def add_wait(self, rank: int, call: Optional[str], ev: Evidence) -> None:
        """Where ``rank`` timed out: the torch.distributed call its traceback passed through last,
        or None when it waited outside any (a ``Work.wait()`` of its own)."""
        if rank not in self.waits and len(self.waits) < self.limit:
            self.waits[rank] = (call, ev)

    def add_claim(self, size: int, rank: int, process: tuple, ev: Evidence) -> None:
        """A process (its log, host, pid, local rank) says it is ``rank`` of ``size``: a framework
        banner, or NCCL's communicator line of the world's size."""
        procs = self.claims.get((size, rank))
        if procs is None:
            if len(self.claims) >= self.limit:
                return
            procs = self.claims[(size, rank)] = {}
        if len(procs) < 4:
            procs.setdefault(process, ev)

    def add_progress(self, rec: ProgressRecord) -> None:
        key = (rec.rank, rec.pg)
        old = self.progress.get(key)
        if old is None and len(self.progress) >= self.limit:
            return
        if old is None or (rec.enqueued, rec.completed) >= (old.enqueued, old.completed):
            self.progress[key] = rec

    def add_watchdog(self, rec: WatchdogRecord) -> None:
        old = self.watchdog.get(rec.rank)
        if old is None and len(self.watchdog) >= self.limit:
            return
        if old is None or rec.seq >= old.seq:
            self.watchdog[rec.rank] = rec

    def add_coll_trace(self, rank: int, op_count: int, call: tuple, ev: Evidence) -> None:
        """One line of NCCL's COLL trace: ``call`` is (op, count, datatype). Each rank keeps its last MAX_TRACED_OPS."""
        ops = self.coll_trace.get(rank)
        if ops is None:
            if len(self.coll_trace) >= self.limit:
                return
            ops = self.coll_trace[rank] = {}
        if op_count not in ops:
            ops[op_count] = (*call, ev)
            if len(ops) > MAX_TRACED_OPS:
                del ops[min(ops)]

    def add_version(self, key: tuple, version: str, cuda: Optional[str], ev: Evidence) -> None:
        if key in self.versions or len(self.versions) >= self.limit:
            return
        self.versions[key] = (version, cuda, ev)

    def add_comm(self, rec: CommRecord) -> None:
        key = rec.host or "?"
        old = self.comm_by_host.get(key)
        if old is None and len(self.comm_by_host) >= self.limit:
            return
        if old is None or rec.nranks > old.nranks:
            self.comm_by_host[key] = rec

    def add_plan(self, plan) -> None:
        """The last plan a rank printed is the exchange it was in when it stopped."""
        if plan.rank in self.plans or len(self.plans) < self.limit:
            self.plans[plan.rank] = plan

    def add_out_of_range(self, rank: int, size: int, ev: Evidence) -> None:
        if rank not in self.out_of_range and len(self.out_of_range) < self.limit:
            self.out_of_range[rank] = (size, ev)


# what a rank_count line counts: the iterations of an epoch, or the data behind them
_VALUE_KINDS = (("batches", ("batch", "step", "iteration", "loader")), ("examples", ("example", "sample", "dataset")))


def value_kind(what: str) -> Optional[str]:
    """ "batches" or "examples" for the words a rank_count line names ("12 batches", "dataset length")."""
    what = (what or "").lower()
    return next((kind for kind, words in _VALUE_KINDS if any(w in what for w in words)), None)


def count_split(state: ReasonState, sides: list) -> Optional[tuple]:
    """Two sets of ranks whose printed counts of what every rank should share (batches or steps per epoch
    first, else training examples) agree within each side and differ between them: (kind, index of the side
    with more, its count, the other's, the count lines as evidence, more side first); None otherwise."""
    if len(sides) != 2:
        return None
    for kind, _ in _VALUE_KINDS:
        per = state.values.get(kind, {})
        counts = []
        for side in sides:
            got = {per[r][0] for r in side if r in per}
            if len(got) != 1 or not all(r in per for r in side):
                break
            counts.append(got.pop())
        else:
            if counts[0] == counts[1]:
                continue
            more, less = (0, 1) if counts[0] > counts[1] else (1, 0)
            evidence = [per[r][1] for i in (more, less) for r in sorted(sides[i])[:2]]
            return kind, more, counts[more], counts[less], evidence
    return None


def value_tiebreak(state: ReasonState, sides: list) -> Optional[tuple]:
    """Two sides of a desync with no majority (sets of ranks that called
    different collectives): the side whose ranks printed the larger count of
    what every rank should share (batches or steps per epoch first, else the
    training examples: :func:`count_split`), when each side agrees within itself.
    The side with more runs the loop once more: its collective is the loop's,
    issued after the others left the loop. Returns (the ranks blamed, the count
    lines as evidence, one sentence, a few words for a title), or None when the
    counts do not split the sides that way."""
    split = count_split(state, sides)
    if split is None:
        return None
    kind, more, n_more, n_less, evidence = split
    less = 1 - more
    what = "batches (steps per epoch)" if kind == "batches" else "training examples (dataset length)"
    text = (
        f" No majority decides, but the ranks printed their {what}, which every rank should share, and "
        f"they differ: {n_more} on rank {_ranks_text(sides[more])}, {n_less} on rank "
        f"{_ranks_text(sides[less])}. Rank {_ranks_text(sides[more])} runs more iterations: its collective "
        "is the loop's, issued once the others had left the loop."
    )
    label = "more batches" if kind == "batches" else "more training examples"
    return set(sides[more]), evidence, text, label


def uneven_data(state: ReasonState, waiting: set, others: set, op: str, seq, evidence: tuple) -> Optional[Finding]:
    """The ranks that wait in a collective the others never called printed another number of batches (or
    training examples) than those others. With more, they run the loop once more, and that iteration's
    collective has no partner; with fewer, they left the loop and wait in what follows it while the others are
    still in their last iteration. Uneven data per rank (collective_desync), not ranks busy elsewhere: the
    ranks with more are named. None when the counts do not split the two sides."""
    split = count_split(state, [waiting, others]) if waiting and others else None
    if split is None:
        return None
    kind, more_side, n_more, n_less, lines = split
    more, fewer = (waiting, others) if more_side == 0 else (others, waiting)
    return _cross_rank(
        rule="watchdog_uneven_data",
        confidence=0.8,
        evidence=tuple(lines + [e for e in evidence if e not in lines])[:8],
        values=dict(
            more=_ranks_text(more),
            fewer=_ranks_text(fewer),
            waiting=_ranks_text(waiting),
            others=_ranks_text(others),
            what="batches" if kind == "batches" else "training examples",
            n_more=n_more,
            n_fewer=n_less,
            op=op,
            seq=seq,
            where="the extra iteration's" if more_side == 0 else "the one after the loop",
        ),
        ranks=tuple(sorted(more)),
    )


def _cross_rank(rule: str, confidence: float, evidence: tuple, values: dict, ranks: tuple = (), hosts: tuple = ()) -> Finding:
    """A finding of the cross-rank reasoning: an error whose category, title, cause, fix and docs are its card's,
    the card filled with ``values``."""
    return Finding(
        rule=rule,
        category=card(rule).category,
        severity="error",
        confidence=confidence,
        evidence=evidence,
        **prose(rule, **values),
        ranks=ranks,
        hosts=hosts,
    )


def _ranks_text(ranks) -> str:
    ranks = sorted(ranks)
    if len(ranks) > 8:
        return ", ".join(map(str, ranks[:8])) + f" and {len(ranks) - 8} more"
    return ", ".join(map(str, ranks))


def coll_trace_findings(state: ReasonState) -> list[Finding]:
    """NCCL's COLL trace of two or more ranks: the latest operation number all of them traced is one call of one
    communicator on every rank, so its op, count and datatype must agree. Where they do not, the ranks called
    different collectives (or sizes) at that point: a desync; the ranks outside the most common call are named (on
    a tie, none: both sides' calls are said, nothing says which is wrong)."""
    traced = {r: ops for r, ops in state.coll_trace.items() if isinstance(r, int)}
    if len(traced) < 2:
        return []
    shared = set.intersection(*(set(ops) for ops in traced.values()))
    for oc in sorted(shared, reverse=True):
        calls = {r: ops[oc] for r, ops in traced.items()}
        kinds = Counter(c[:3] for c in calls.values())
        if len(kinds) < 2:
            continue
        (common, n), (_, n2) = kinds.most_common(2)
        odd = {r for r, c in calls.items() if c[:3] != common}
        others = set(calls) - odd
        odd_call = Counter(calls[r][:3] for r in odd).most_common(1)[0][0]
        order = sorted(calls, key=lambda r: (r not in odd, r))
        return [
            _cross_rank(
                rule="coll_trace_mismatch",
                confidence=0.85,
                evidence=tuple(calls[r][3] for r in order[:8]),
                values=dict(
                    op_count=format(oc, "x"),
                    odd=_ranks_text(odd),
                    odd_call=_call_text(odd_call),
                    others=_ranks_text(others),
                    common=_call_text(common),
                ),
                ranks=tuple(sorted(odd)) if n > n2 else (),
            )
        ]
    return []


def _call_text(call: tuple) -> str:
    op, count, dtype = call
    return f"{op} of {how_many(count, 'element')} (datatype {dtype})"


def progress_findings(state: ReasonState) -> list[Finding]:
    """A rank that never enqueued the work the others wait in, per process
    group (their counters are separate). The first work some rank has not
    completed (the smallest last completed + 1) is where the group stopped;
    a rank whose last enqueued work is below it never called that
    collective: it lags (or skipped it), and the others' timeouts are its
    consequence. Said only when the lagging ranks are no more than the ranks
    that reached it (a lone rank ahead of all others is another story) and
    the records can be one group's: no rank completes a collective before
    every rank enqueued it, so their completed counts differ by little. Where
    no rank lags, a rank waiting in work the others completed (_offset) or
    ranks that enqueued different amounts after the stuck work (_ahead) say
    the ranks' collectives diverged."""
    groups: dict = {}
    for (rank, pg), rec in state.progress.items():
        if isinstance(rank, int):
            groups.setdefault(pg, {})[rank] = rec
    for pg in sorted(groups, key=lambda g: (g is not None, len(g or ""), g or "")):
        found = _behind(groups[pg])
        if found:
            return found
    return []


MAX_COMPLETED_SPREAD = 8  # completed counts further apart than this are not one process group's


def _progress_finding(rule: str, confidence: float, recs: dict, named: set, values: dict) -> list[Finding]:
    """A finding read from the ranks' progress records ``recs`` that names the ranks ``named``: their lines come
    first among its evidence."""
    order = sorted(recs.values(), key=lambda p: (p.rank not in named, p.rank))
    return [
        _cross_rank(
            rule=rule,
            confidence=confidence,
            evidence=tuple(p.evidence for p in order[:8]),
            values=values,
            ranks=tuple(sorted(named)),
        )
    ]


def _behind(recs: dict) -> list[Finding]:
    if len(recs) < 2:
        return []
    done = [p.completed for p in recs.values()]
    if max(done) - min(done) > MAX_COMPLETED_SPREAD:
        return []
    stuck = min(done) + 1
    behind = {r for r, p in recs.items() if p.enqueued < stuck}
    reached = set(recs) - behind
    if not behind:
        return _offset(recs) or _ahead(recs, stuck)
    if not reached or len(behind) > len(reached):
        return []
    last = sorted({recs[r].enqueued for r in behind})
    values = dict(behind=_ranks_text(behind), reached=_ranks_text(reached), stuck=stuck, last=", ".join(map(str, last)))
    return _progress_finding(rule="watchdog_rank_behind", confidence=0.8, recs=recs, named=behind, values=values)


def _offset(recs: dict) -> list[Finding]:
    """A rank waits in a work number that other ranks have completed. A collective completes on no rank before
    every rank of the group joined it, so the two ranks' work of that number is not the same collective: their
    counts are offset, they issued different numbers of collectives (an extra or a skipped one). The ranks whose
    pending work others completed are named, when they are fewer than the others."""
    done = max(p.completed for p in recs.values())
    offset = {r for r, p in recs.items() if p.enqueued > p.completed and p.completed < done}
    others = set(recs) - offset
    if not offset or len(offset) >= len(others) or any(p.completed < done for r, p in recs.items() if r in others):
        return []
    values = dict(
        offset=_ranks_text(offset),
        others=_ranks_text(others),
        pending=", ".join(str(n) for n in sorted({recs[r].completed + 1 for r in offset})),
        done=done,
    )
    return _progress_finding(rule="watchdog_work_offset", confidence=0.7, recs=recs, named=offset, values=values)


def _ahead(recs: dict, stuck: int) -> list[Finding]:
    """Every rank enqueued work ``stuck`` and none completed it, yet some enqueued more work than the others.
    A rank's enqueue runs ahead of its GPU until its code waits on a result, and ranks running the same code
    wait at the same point, with the same count enqueued: counts that differ are code paths that differ (a
    collective only some ranks call, under a condition of their own), and work ``stuck`` is not the same
    collective on every rank."""
    most = max(p.enqueued for p in recs.values())
    ahead = {r for r, p in recs.items() if p.enqueued == most}
    fewer = set(recs) - ahead
    if not fewer or any(p.enqueued < stuck or p.completed >= stuck for p in recs.values()):
        return []
    values = dict(
        ahead=_ranks_text(ahead), fewer=_ranks_text(fewer), stuck=stuck, most=most, least=min(p.enqueued for p in recs.values())
    )
    return _progress_finding(rule="watchdog_ranks_ahead", confidence=0.7, recs=recs, named=ahead, values=values)


# torch's OpType names (ProcessGroupNCCL's WorkNCCL) of point-to-point work: a send, a receive, or a
# batch of them (dist.batch_isend_irecv is reported as one COALESCED work), and of all-to-all, whose
# per-rank sizes differ by design (uneven splits)
P2P_OPS = frozenset({"SEND", "RECV", "RECVANYSOURCE", "COALESCED"})
ALLTOALL_OPS = frozenset({"ALLTOALL", "ALLTOALL_BASE"})


def _p2p_timeouts(recs: dict) -> list[Finding]:
    """Ranks that timed out in point-to-point work: waiting for a peer whose half of the
    exchange never came. Beside ranks stuck in a collective, the point-to-point ranks are
    the ones out of step (their peers went on); on their own, every rank waits in a send or
    every rank in a receive (a cycle), or in a batch whose halves do not pair."""
    p2p = {r.rank for r in recs.values() if r.op in P2P_OPS}
    ops = Counter(r.op for r in recs.values() if r.rank in p2p)
    seqs = ", ".join(str(s) for s in sorted({r.seq for r in recs.values() if r.rank in p2p}))
    others = set(recs) - p2p
    order = tuple(r.evidence for r in sorted(recs.values(), key=lambda r: (r.rank not in p2p, r.rank))[:8])
    if others:
        rule = "watchdog_p2p_beside_collective"
        values = dict(
            p2p=_ranks_text(p2p),
            p2p_ops=" / ".join(ops),
            others=_ranks_text(others),
            collective=" / ".join(Counter(r.op for r in recs.values() if r.rank in others)),
        )
        confidence = 0.8
    elif set(ops) in ({"SEND"}, {"RECV"}, {"RECVANYSOURCE"}, {"RECV", "RECVANYSOURCE"}):
        rule, values, confidence = "watchdog_p2p_cycle", dict(ranks=_ranks_text(p2p), op=" / ".join(ops), seqs=seqs), 0.75
    else:
        rule, values, confidence = "watchdog_p2p_batch", dict(ranks=_ranks_text(p2p), ops=" / ".join(ops), seqs=seqs), 0.7
    return [
        _cross_rank(
            rule=rule,
            confidence=confidence,
            evidence=order,
            values=values,
            ranks=tuple(sorted(p2p)),
        )
    ]


def watchdog_findings(state: ReasonState, world_size: Optional[int], present=frozenset()) -> list[Finding]:
    """Tell a desync from a slow rank using every rank's last timed-out work
    and how far each rank got. ``present`` are the ranks that left any trace
    in the logs: one of them that reported no timeout while the others did
    is a rank that never reached the collective."""
    recs = state.watchdog
    if not recs:
        return progress_findings(state)
    ops = Counter(r.op for r in recs.values())
    if set(ops) & P2P_OPS:
        return _p2p_timeouts(recs)
    # an all-to-all's sizes differ from rank to rank by design: only the other collectives' are compared
    by_shape = Counter((r.op, r.numel) for r in recs.values() if r.numel is not None and r.op not in ALLTOALL_OPS)
    seqs = Counter(r.seq for r in recs.values())
    evidence = tuple(r.evidence for r in sorted(recs.values(), key=lambda r: r.rank)[:8])
    timed_out = set(recs)
    known = set(range(world_size)) if world_size and world_size > len(timed_out) and world_size <= 1 << 20 else set()
    # (a rank that printed its batches or dataset length left a trace too, whatever prefix its lines carry)
    traced = {r for r in present if isinstance(r, int)} | {r for per in state.values.values() for r in per if isinstance(r, int)}
    missing = known - timed_out
    if len(missing - traced) > len(timed_out):
        # most of the world left no trace at all (a paste of a few lines, the logs of some ranks): that says
        # their lines are not here, not that they never arrived
        missing &= traced
    silent = traced - timed_out - missing
    if len(missing | silent) <= len(timed_out):
        # a rank whose log is here but shows no timeout is late for those that waited: said when it is
        # among the fewer (when most logs show no timeout, they were cut before it, or the waiting rank is odd)
        missing |= silent

    def minority(key):
        """The ranks outside the one most common value; with no single most common value (a tie),
        every rank: nothing says which side is wrong."""
        counts = Counter(key(r) for r in recs.values())
        if len(counts) < 2:
            return set()
        (common, n), (_, runner_up) = counts.most_common(2)
        if n == runner_up:
            return set(recs)
        return {r.rank for r in recs.values() if key(r) != common}

    if len(ops) > 1 or len(by_shape) > 1:
        # different collectives, or one collective with different sizes
        if len(ops) > 1:
            blamed = minority(lambda r: r.op)
            what = "different collectives (" + ", ".join(f"{op} on {n}" for op, n in ops.most_common()) + ")"
        else:
            blamed = minority(lambda r: r.numel)
            sizes = Counter(r.numel for r in recs.values())
            what = (
                "the same collective with different sizes ("
                + "; ".join(f"NumelIn={a}, NumelOut={b} on {how_many(n, 'rank')}" for (a, b), n in sizes.most_common())
                + ")"
            )
        if len(seqs) > 1 and not blamed:
            blamed = minority(lambda r: r.seq)
        broken = None
        if blamed == set(recs):  # a tie: the counts the ranks printed may say which side ran on
            key = (lambda r: r.op) if len(ops) > 1 else (lambda r: r.numel)
            broken = value_tiebreak(
                state, [{r.rank for r in recs.values() if key(r) == k} for k in dict.fromkeys(key(r) for r in recs.values())]
            )
        if broken is not None:
            blamed = broken[0]
            evidence = tuple(broken[1] + [e for e in evidence if e not in broken[1]])[:8]
        return [
            _cross_rank(
                rule="watchdog_desync",
                confidence=0.85,
                evidence=evidence,
                values=dict(
                    blamed=f" (rank {_ranks_text(blamed)})" if blamed else "",
                    printed=f"; it printed {broken[3]}" if broken is not None else "",
                    what=what,
                    tiebreak=broken[2] if broken is not None else "",
                ),
                ranks=tuple(sorted(blamed)),
            )
        ]
    behind = progress_findings(state)
    if behind:
        late = set(behind[0].ranks)
        uneven = uneven_data(state, timed_out - late, late, ops.most_common(1)[0][0], seqs.most_common(1)[0][0], evidence)
        return [uneven] if uneven is not None else behind
    if len(seqs) > 1 and len(recs) >= 2 and set(ops) <= ALLTOALL_OPS:
        # all-to-alls at different numbers: a rank whose receive from a peer is larger than the peer's send waits
        # in its all-to-all while the peers complete their halves and go on to the next one (the split sizes, not
        # a collective some ranks skipped: the ranks at the earlier number are the ones still receiving)
        low = min(seqs)
        stuck = {r.rank for r in recs.values() if r.seq == low}
        return [
            _cross_rank(
                rule="watchdog_alltoall_unpaired",
                confidence=0.7,
                evidence=evidence,
                values=dict(ranks=_ranks_text(stuck), op=ops.most_common(1)[0][0], seq=low),
                ranks=tuple(sorted(stuck)),
            )
        ]
    if len(seqs) > 1 and len(recs) >= 2:
        # the most common sequence number; on a tie the higher one, so that the ranks behind are named
        common = max(seqs, key=lambda s: (seqs[s], s))
        off_seq = {r.rank for r in recs.values() if r.seq != common}
        return [
            _cross_rank(
                rule="watchdog_seq_differs",
                confidence=0.7,
                evidence=evidence,
                values=dict(
                    behind=_ranks_text(off_seq),
                    op=ops.most_common(1)[0][0],
                    their_seqs=", ".join(str(s) for s in sorted(seqs) if s != common),
                    common=common,
                ),
                ranks=tuple(sorted(off_seq)),
            )
        ]
    if missing:
        uneven = uneven_data(state, timed_out, missing, ops.most_common(1)[0][0], seqs.most_common(1)[0][0], evidence)
        if uneven is not None:
            return [uneven]
        return [
            _cross_rank(
                rule="watchdog_rank_missing",
                confidence=0.75,
                evidence=evidence,
                values=dict(
                    missing=_ranks_text(missing),
                    timed_out=_ranks_text(timed_out),
                    op=ops.most_common(1)[0][0],
                    seq=seqs.most_common(1)[0][0],
                ),
                ranks=tuple(sorted(missing)),
            )
        ]
    if len(recs) >= 2 and set(ops) <= ALLTOALL_OPS:
        # every rank reached the all-to-all, and it still hangs: the split sizes do not pair
        return [
            _cross_rank(
                rule="watchdog_alltoall_unpaired",
                confidence=0.65,
                evidence=evidence,
                values=dict(ranks=_ranks_text(timed_out), op=ops.most_common(1)[0][0], seq=seqs.most_common(1)[0][0]),
                ranks=(),
            )
        ]
    if len(recs) >= 2:
        return [
            _cross_rank(
                rule="watchdog_all_waiting",
                confidence=0.55,
                evidence=evidence,
                values=dict(count=len(recs), op=ops.most_common(1)[0][0]),
            )
        ]
    return []


def ib_device_findings(state: ReasonState) -> list[Finding]:
    """Hosts whose NCCL uses different HCAs (another count, another link layer: an Ethernet RoCE port listed
    beside the InfiniBand ones on some hosts only). NCCL pairs the ranks' NICs by index across hosts, so a
    channel joins two ports that are not on one fabric and its first transfer never arrives."""
    if len(state.ib_devices) < 2:
        return []
    lists = Counter(devs for devs, _ in state.ib_devices.values())
    if len(lists) < 2:
        return []
    (common, most), (_, second) = lists.most_common(2)
    if most == second:  # no majority (two hosts): the shorter list is the base, a port more is what changed
        common = min((devs for devs, n in lists.items() if n == most), key=lambda d: (len(d), d))
    odd = sorted(h for h, (devs, _) in state.ib_devices.items() if devs != common)
    odd_devs = sorted({d for h in odd for d in state.ib_devices[h][0]} ^ set(common))
    evidence = (state.ib_devices[odd[0]][1],) + tuple(ev for h, (devs, ev) in sorted(state.ib_devices.items()) if devs == common)[
        :1
    ]
    return [
        _cross_rank(
            rule="ib_devices_differ_across_hosts",
            confidence=0.6,
            evidence=evidence,
            values=dict(
                where=", ".join(odd[:8]) + (f" and {len(odd) - 8} more" if len(odd) > 8 else ""),
                odd_count=len(odd),
                hosts=len(state.ib_devices),
                common=len(common),
                differ=", ".join(odd_devs[:8]) or "the order of the same devices",
            ),
            hosts=tuple(odd[:64]),
        )
    ]


def version_findings(state: ReasonState, rank_hosts: dict) -> list[Finding]:
    """Different NCCL versions across hosts or processes. A version line
    that names no host (key ``(None, rank or source)``) counts as its own
    process and blames no host."""
    if len(state.versions) < 2:
        return []
    counts = Counter(v for v, _, _ in state.versions.values())
    if len(counts) < 2:
        return []
    common = counts.most_common(1)[0][0]
    odd = {k: v for k, (v, _, _) in state.versions.items() if v != common}
    shown: dict = {}
    for key, (ver, cuda, ev) in state.versions.items():
        shown.setdefault(ver, ev)
    evidence = tuple(shown.values())[:8]
    blamed_hosts = tuple(sorted({str(k[0]) for k in odd if k[0] is not None}))
    odd_procs = set(odd)
    ranks = tuple(
        sorted(r for r, (h, pid) in rank_hosts.items() if (h, pid) in odd_procs or (h, r) in odd_procs or (None, r) in odd_procs)
    )
    hosts_per_version: dict = {}
    procs_per_version: Counter = Counter()
    for (h, _), (ver, _, _) in state.versions.items():
        procs_per_version[ver] += 1
        if h is not None:
            hosts_per_version.setdefault(ver, set()).add(h)
    listing = "; ".join(
        f"{ver} on {how_many(len(hosts_per_version[ver]), 'host')}"
        if ver in hosts_per_version
        else f"{ver} in {how_many(procs_per_version[ver], 'process', 'processes')} of unnamed hosts"
        for ver, _ in counts.most_common()
    )
    where = ", ".join(blamed_hosts[:8]) or "processes whose lines name no host"
    return [
        _cross_rank(
            rule="nccl_version_differs_across_hosts",
            confidence=0.9,
            evidence=evidence,
            values=dict(
                listing=listing, odd_versions=", ".join(sorted(set(odd.values()))), where=where, odd_count=len(odd), common=common
            ),
            ranks=ranks,
            hosts=blamed_hosts,
        )
    ]


def world_size_findings(state: ReasonState, known_ranks: set) -> list[Finding]:
    """Hosts that disagree on the world size, and ranks beyond it."""
    sizes = Counter(c.nranks for c in state.comm_by_host.values())
    if len(sizes) < 2:
        return []
    smallest = min(sizes)
    beyond = {r for r in known_ranks if r >= smallest} | {r for r, (size, _) in state.out_of_range.items() if r >= size}
    evidence = tuple(c.evidence for c in sorted(state.comm_by_host.values(), key=lambda c: c.nranks))[:8]
    listing = "; ".join(
        f"{h or 'unknown host'} says {how_many(c.nranks, 'rank')} on {how_many(c.nnodes, 'node')}"
        for h, c in sorted(state.comm_by_host.items(), key=lambda kv: str(kv[0]))
    )
    return [
        _cross_rank(
            rule="world_size_differs_across_hosts",
            confidence=0.85,
            evidence=evidence,
            values=dict(beyond=f" (rank {_ranks_text(beyond)} beyond {smallest})" if beyond else "", listing=listing),
            ranks=tuple(sorted(beyond)),
            hosts=tuple(sorted(h for h, c in state.comm_by_host.items() if c.nranks != max(sizes) and h)),
        )
    ]


def _slurm_tasks(one: dict) -> tuple[int, tuple[str, ...]]:
    """(the tasks Slurm starts: --nodes x --ntasks-per-node, else --ntasks; the options that say so), or (0, ())."""
    if "nodes" in one and "ntasks-per-node" in one:
        return one["nodes"][0] * one["ntasks-per-node"][0], ("nodes", "ntasks-per-node")
    if "ntasks" in one:
        return one["ntasks"][0], ("ntasks",)
    return 0, ()


def launcher_findings(state: ReasonState, world_size: Optional[int]) -> list[Finding]:
    """The launcher starts another number of processes than the job's world size says (framework banners'
    MEMBER k/N, else NCCL's nRanks): torchrun's nnodes x nproc_per_node, else Slurm's nodes x ntasks-per-node
    or ntasks. Each option must have one value in the log (a paste of two attempts says nothing)."""
    one = {opt: next(iter(vals.items())) for opt, vals in state.launch.items() if len(vals) == 1}
    if any(len(vals) > 1 for vals in state.launch.values()):
        return []
    if any(value < 0 for value, _ in one.values()):
        return []  # an elastic range of nodes: how many run is not in the log
    tasks, task_opts = _slurm_tasks(one)
    if "nnodes" in one and one["nnodes"][0] > 0:
        # srun starting torchrun: each Slurm task is an agent, and the rendezvous waits for --nnodes of them
        agents, agent_opts = tasks, task_opts
        if agents and agents != one["nnodes"][0]:
            return [
                _cross_rank(
                    rule="launcher_nodes_differ",
                    confidence=0.85,  # two counts the paste states that cannot both hold: above what follows from them
                    evidence=tuple(dict.fromkeys(one[opt][1] for opt in agent_opts + ("nnodes",)))[:8],
                    values=dict(
                        nnodes=one["nnodes"][0],
                        agents=agents,
                        s="" if agents == 1 else "s",
                        options=" and ".join(f"--{opt} {one[opt][0]}" for opt in agent_opts),
                    ),
                )
            ]
    used: tuple[str, ...]
    if "nproc-per-node" in one:
        nodes = one.get("nnodes", (1, None))[0]
        launched, how, used = nodes * one["nproc-per-node"][0], "torchrun", ("nnodes", "nproc-per-node")
    elif tasks:
        launched, how, used = tasks, "Slurm", task_opts
    else:
        return []
    sizes = {size for size, _ in state.claims}
    size = next(iter(sizes)) if len(sizes) == 1 else (world_size if not sizes else None)
    if not size or not launched or launched == size:
        return []
    if how == "torchrun" and "nnodes" not in one and size > launched and size % launched == 0:
        # torchrun's command line without --nnodes (cut from the paste, or set by PET_NNODES or the operator): a
        # world of whole nodes of nproc_per_node says it ran on that many nodes, not that the launcher is wrong
        return []
    options = " and ".join(f"--{opt} {one[opt][0]}" for opt in used if opt in one)
    evidence = tuple(one[opt][1] for opt in used if opt in one) + tuple(
        ev for procs in list(state.claims.values())[:2] for ev in list(procs.values())[:1]
    )
    return [
        _cross_rank(
            rule="launcher_world_differs",
            confidence=0.7,
            evidence=evidence[:8],
            values=dict(launched=launched, how=how, options=options, size=size),
        )
    ]


def out_of_range_findings(state: ReasonState) -> list[Finding]:
    """Every rank that some line places at or beyond its world size (the
    error lines of NCCL and gloo, and framework banners printed before a
    launcher killed the rank): one finding blaming all of them, since a rank
    killed by its launcher before it could fail says nothing else."""
    if not state.out_of_range:
        return []
    ranks = tuple(sorted(state.out_of_range))
    sizes = sorted({size for size, _ in state.out_of_range.values()})
    evidence = tuple(ev for _, (_, ev) in sorted(state.out_of_range.items()))[:8]
    size_text = " or ".join(map(str, sizes))
    return [
        _cross_rank(
            rule="ranks_beyond_world_size",
            confidence=0.95,
            evidence=evidence,
            values=dict(ranks=_ranks_text(ranks), sizes=size_text),
            ranks=ranks,
        )
    ]


def duplicate_claims(state: ReasonState, world_size: Optional[int]) -> dict:
    """{rank: [Evidence]} of the ranks that two processes claim in one world
    (banners, or NCCL communicator lines of the world size) while another
    rank of that world has no process at all: two processes answer for one
    rank and nobody for another. A rank claimed twice with every rank
    claimed is left alone: a restart that numbered the ranks anew looks
    like that."""
    by_size: dict = {}
    for (size, rank), procs in state.claims.items():
        by_size.setdefault(size, {})[rank] = procs
    out: dict = {}
    for size, ranks in by_size.items():
        if size > state.limit or (world_size and size != world_size and any(s == world_size for s in by_size)):
            continue  # the world's own communicator decides when NCCL printed it
        doubled = {r: procs for r, procs in ranks.items() if len(procs) > 1}
        if doubled and len(ranks) < size:
            for r, procs in doubled.items():
                out.setdefault(r, []).extend(list(procs.values())[:2])
    return out


def wait_findings(state: ReasonState, present=frozenset()) -> list[Finding]:
    """What the ranks' tracebacks say about where each timed out (gloo
    prints no sequence numbers): ranks in a point-to-point wait beside ranks
    in a collective (``p2p_wait_beside_collective``: the point-to-point
    ranks' send or receive had no partner; the others finished their part
    of the exchange and wait in the next collective); ranks in different
    collectives (``traceback_desync``: the fewer are blamed, every rank on a
    tie); all in one collective while a rank of ``present`` (its log is
    here) reported no timeout (``traceback_rank_missing``: it never got
    there)."""
    collective = {r: call for r, (call, _) in state.waits.items() if call and call not in P2P_CALLS}
    p2p = {r: call for r, (call, _) in state.waits.items() if r not in collective}
    if not collective:
        return _p2p_only_waits(state)
    order = sorted(state.waits, key=lambda r: (r not in p2p, r))
    if not p2p:
        return _collective_waits(state, collective, {r for r in present if isinstance(r, int)} - set(state.waits))
    named = all(call in P2P_CALLS for call in p2p.values())
    calls = sorted(set(collective.values()))
    return [
        _cross_rank(
            rule="p2p_wait_beside_collective",
            confidence=0.7 if named else 0.6,
            evidence=tuple(state.waits[r][1] for r in order[:8]),
            values=dict(
                p2p=_ranks_text(p2p),
                collective=_ranks_text(collective),
                calls=", ".join(calls),  # the calls the tracebacks name, or where a bare wait() on a request waits
                p2p_wait=", ".join(sorted(set(p2p.values())))
                if named
                else "a wait() of its own, outside any torch.distributed collective (an isend/irecv request)",
            ),
            ranks=tuple(sorted(p2p)),
        )
    ]


# the calls of P2P_CALLS by the direction a rank waits in (match.STACK_P2P names pipeline wrappers by these)
_RECEIVES, _SENDS = frozenset({"recv", "irecv"}), frozenset({"send", "isend"})


def _p2p_only_waits(state: ReasonState) -> list[Finding]:
    """Every rank whose traceback or stack dump says where it waits is in a point-to-point call, and all of
    them receive (or all send): nobody is on the other side of the exchange (``traceback_p2p_cycle``)."""
    calls = {r: call for r, (call, _) in state.waits.items() if call}
    if len(calls) < 2 or len(calls) != len(state.waits):
        return []
    kinds = set(calls.values())
    direction = "receive" if kinds <= _RECEIVES else "send" if kinds <= _SENDS else None
    if direction is None:
        return []
    return [
        _cross_rank(
            rule="traceback_p2p_cycle",
            confidence=0.7,
            evidence=tuple(state.waits[r][1] for r in sorted(calls)[:8]),
            values=dict(ranks=_ranks_text(calls), direction=direction, calls=", ".join(sorted(kinds))),
            ranks=tuple(sorted(calls)),
        )
    ]


def _collective_waits(state: ReasonState, calls: dict, silent: set) -> list[Finding]:
    evidence = tuple(ev for _, ev in (state.waits[r] for r in sorted(calls)))[:8]
    counts = Counter(calls.values())
    if len(counts) > 1:
        (common, n), (_, runner_up) = counts.most_common(2)
        blamed = set(calls) if n == runner_up else {r for r, c in calls.items() if c != common}
        listing = ", ".join(f"{c} on rank {_ranks_text(r for r in calls if calls[r] == c)}" for c, _ in counts.most_common())
        tie = n == runner_up
        broken = value_tiebreak(state, [{r for r in calls if calls[r] == c} for c in counts]) if tie else None
        why = "" if not tie else "No majority tells which side is wrong, so every rank is named."
        if broken is not None:
            blamed, extra, why = broken[0], broken[1], broken[2].lstrip()
            evidence = tuple(extra + [e for e in evidence if e not in extra])[:8]
        return [
            _cross_rank(
                rule="traceback_desync",
                confidence=0.75,
                evidence=evidence,
                values=dict(
                    listing=listing,
                    printed=f"; rank {_ranks_text(blamed)} printed {broken[3]}" if broken is not None else "",
                    who_is_named=why,
                ),
                ranks=tuple(sorted(blamed)),
            )
        ]
    if not silent or len(silent) > len(calls):  # the fewer are late; most ranks silent says too little
        return []
    (call,) = counts
    return [
        _cross_rank(
            rule="traceback_rank_missing",
            confidence=0.7,
            evidence=evidence,
            values=dict(silent=_ranks_text(silent), calls=_ranks_text(calls), call=call),
            ranks=tuple(sorted(silent)),
        )
    ]


def plan_findings(state: ReasonState, ahead=frozenset()) -> list[Finding]:
    """Planned sends and receives without a partner (or of another shape),
    from the ranks' ``ncclnb guard: p2p plan`` lines: gloo records no
    isend/irecv, so these are what pairs them. The matrix behind these
    findings is :func:`ncclnb.doctor.pairing.plan_pairing` of the same plans.
    ``ahead``: the ranks the flight recorder shows at the furthest collective
    (they went past the exchange); without them, the ranks whose traceback
    ends in a collective."""
    if not state.plans:
        return []
    from .pairing import plan_pairing

    if not ahead:
        ahead = {r for r, (call, _) in state.waits.items() if call and call not in P2P_CALLS}
    return list(plan_pairing(state.plans.values(), ahead).findings)
