"""Point-to-point pairing: who sends what to whom, and which send or receive
has no partner, as facts (a rank x rank matrix) and findings.

Two origins, one rule (:func:`ncclnb.doctor.flight_recorder.match_p2p`: per
ordered pair src -> dst, the i-th send pairs with the i-th receive):

- NCCL flight-recorder dumps, which record every send and recv
  (:func:`pairing_from_dumps`; its findings are exactly the point-to-point
  findings of :func:`~ncclnb.doctor.flight_recorder.analyze_dumps`);
- on gloo, whose flight recorder records no isend/irecv, the plan lines that
  ``ncclnb.guard.p2p.log_p2p_plan`` prints on each rank before posting::

      ncclnb guard: p2p plan {"rank": 2, "sends": [{"peer": 0, "shape": [3, 8], "dtype": "float32"}],
                              "recvs": [{"peer": 1, "shape": [1, 8], "dtype": "float32"}]}

  (:func:`parse_plan_line`, :func:`plan_pairing`). The doctor reads them in
  any log (``plan.*`` findings); the last plan a rank printed is the exchange
  it was in when it stopped.

Bounds: a plan line is read when its JSON is at most MAX_PLAN_CHARS
characters with at most MAX_PLAN_OPS ops a side, ranks and peers below
1,000,000, shapes of at most 64 non-negative int64 dims, dtype names of at
most 64 characters; anything else is not a plan line.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass
from typing import Iterable, Optional

from ..model import Evidence, Finding
from . import flight_recorder as fr
from .cards import prose

__all__ = [
    "PLAN_MARK",
    "PlannedOp",
    "P2PPlan",
    "PairCell",
    "UnpairedOp",
    "Pairing",
    "parse_plan_line",
    "plan_pairing",
    "pairing_from_dumps",
]

PLAN_MARK = "ncclnb guard: p2p plan "  # written by ncclnb.guard.p2p.log_p2p_plan
MAX_PLAN_CHARS = 64 << 10
MAX_PLAN_OPS = 4096
MAX_PLAN_RANKS = 8192  # plans kept (one per rank)
_MAX_RANK = 1_000_000
_MAX_EVIDENCE = 12


@dataclass(frozen=True)
class PlannedOp:
    """One send or receive a rank planned (``rank`` posts it to or from ``peer``)."""

    rank: int
    kind: str  # "send" or "recv"
    peer: int
    shape: tuple
    dtype: str
    source: str = ""
    line: Optional[int] = None

    @property
    def text(self) -> str:
        arrow = f"send {self.rank}->{self.peer}" if self.kind == "send" else f"recv {self.rank}<-{self.peer}"
        return f"rank {self.rank} plans {arrow} [{', '.join(map(str, self.shape))}] {self.dtype}".rstrip()


@dataclass(frozen=True)
class P2PPlan:
    """One ``ncclnb guard: p2p plan`` line: what ``rank`` was about to post."""

    rank: int
    sends: tuple = ()
    recvs: tuple = ()
    source: str = ""
    line: Optional[int] = None


@dataclass(frozen=True)
class PairCell:
    """Sends from ``src`` to ``dst`` and the receives ``dst`` posted from
    ``src``: each message as text ("[3, 8] float32"), in order; how many of
    them have no partner; ``mismatch`` "order" or "size" when a pair's
    messages differ (see ``match_p2p``); ``blind`` when one side's record is
    missing (its dump absent or cut), so nothing was compared."""

    src: int
    dst: int
    sends: tuple = ()
    recvs: tuple = ()
    unpaired_sends: int = 0
    unpaired_recvs: int = 0
    mismatch: str = ""
    blind: bool = False


@dataclass(frozen=True)
class UnpairedOp:
    """A send (on ``src``) or receive (on ``dst``) with no partner."""

    src: int
    dst: int
    kind: str  # "send" or "recv"
    text: str
    source: str = ""


@dataclass(frozen=True)
class Pairing:
    """The rank x rank matrix of point-to-point ops and the doctor's verdict
    on it: ``origin`` "flight recorder" (recorded sends/recvs) or "plan"
    (``ncclnb guard: p2p plan`` lines); ``cells`` for every ordered pair with
    an op; ``unpaired`` and ``findings`` are the doctor's (the same analysis
    gives both)."""

    origin: str
    ranks: tuple
    cells: tuple
    unpaired: tuple = ()
    findings: tuple = ()
    sources: tuple = ()

    def cell(self, src: int, dst: int) -> Optional[PairCell]:
        return next((c for c in self.cells if c.src == src and c.dst == dst), None)

    def to_dict(self) -> dict:
        out = asdict(self)
        out["findings"] = [f.to_dict() for f in self.findings]
        return out


# --------------------------------------------------------------------------- plan lines


def _small_int(v) -> Optional[int]:
    return v if type(v) is int and 0 <= v < _MAX_RANK else None


def _ops(raw, rank: int, kind: str, source: str, line: Optional[int]) -> Optional[tuple]:
    if not isinstance(raw, list) or len(raw) > MAX_PLAN_OPS:
        return None
    out = []
    for op in raw:
        if not isinstance(op, dict):
            return None
        peer, shape, dtype = _small_int(op.get("peer")), op.get("shape"), op.get("dtype", "")
        if (
            peer is None
            or not isinstance(shape, list)
            or len(shape) > 64
            or not isinstance(dtype, str)
            or len(dtype) > 64
            or not all(type(d) is int and 0 <= d < 1 << 63 for d in shape)
        ):
            return None
        out.append(PlannedOp(rank, kind, peer, tuple(shape), dtype, source, line))
    return tuple(out)


def parse_plan_line(text: str, source: str = "<text>", line: Optional[int] = None) -> Optional[P2PPlan]:
    """The plan in a log line holding ``ncclnb guard: p2p plan {...}`` (after
    any prefix), or None when the line holds none or it breaks a bound.
    Never raises."""
    if not isinstance(text, str):
        return None
    at = text.find(PLAN_MARK)
    if at < 0:
        return None
    body = text[at + len(PLAN_MARK) :].strip()
    if not body.startswith("{") or len(body) > MAX_PLAN_CHARS:
        return None
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    rank = _small_int(data.get("rank"))
    if rank is None:
        return None
    sends = _ops(data.get("sends", []), rank, "send", source, line)
    recvs = _ops(data.get("recvs", []), rank, "recv", source, line)
    if sends is None or recvs is None:
        return None
    return P2PPlan(rank, sends, recvs, source, line)


def _plan_message(op: PlannedOp, kind: str) -> tuple:
    return op.shape


def _plan_dtypes(op: PlannedOp) -> tuple:
    return (op.dtype,) if op.dtype else ()


def _msg_text(shape: tuple, dtype: str) -> str:
    return f"[{', '.join(map(str, shape))}] {dtype}".rstrip()


def _blamed(pairs: Iterable[tuple]) -> tuple:
    """Both ends of every (src, dst), the rank involved most often first."""
    count: Counter = Counter()
    for src, dst in pairs:
        count[src] += 1
        count[dst] += 1
    return tuple(sorted(count, key=lambda r: (-count[r], r)))


def plan_pairing(plans: Iterable[P2PPlan], ahead: Iterable = ()) -> Pairing:
    """Pair the planned sends and receives of every rank (the last plan each
    rank printed). A pair whose other side printed no plan is ``blind``:
    nothing is said about it. Findings: ``plan.p2p_unmatched`` (a send with no
    receive, a receive with no send: blaming the end that is out of step,
    :func:`~ncclnb.doctor.flight_recorder.p2p_culprits`; ``ahead`` are the
    ranks known to have gone past the exchange to a later collective, from
    the flight recorder, :func:`~ncclnb.doctor.flight_recorder.ranks_ahead`,
    or the tracebacks), ``plan.p2p_order`` / ``plan.p2p_size_mismatch`` (a
    pair whose shapes or dtypes differ: both ends), all ``p2p_pairing``."""
    ahead = frozenset(ahead)
    last: dict = {}
    for p in plans:
        last[p.rank] = p
    sends: dict = defaultdict(list)
    recvs: dict = defaultdict(list)
    for p in last.values():
        for op in p.sends:
            sends[("plan", p.rank, op.peer)].append(op)
        for op in p.recvs:
            recvs[("plan", op.peer, p.rank)].append(op)
    blind = {k for k in set(sends) | set(recvs) if k[1] not in last or k[2] not in last}
    unmatched, mismatched = fr.match_p2p(
        {k: v for k, v in sends.items() if k not in blind},
        {k: v for k, v in recvs.items() if k not in blind},
        _plan_message,
        _plan_dtypes,
    )
    findings = []
    if unmatched:
        lines = []
        for op, src, dst, _ in unmatched:
            other = (
                f"rank {dst} plans no matching recv from rank {src}"
                if op.kind == "send"
                else f"rank {src} plans no matching send to rank {dst}"
            )
            lines.append(Evidence(op.source, op.line, f"{op.text}: {other}"))
        first = unmatched[0]
        edges = [(src, dst) if op.kind == "send" else (dst, src) for op, src, dst, _ in unmatched]
        findings.append(fr.unmatched_finding("plan.p2p_unmatched", lines, first[0].kind, first[1], first[2], edges, ahead))
    for kind, items in mismatched.items():
        if not items:
            continue
        lines = [Evidence(op.source, op.line, op.text) for s, r, _, _, _ in items for op in (s, r)]
        _, _, src0, dst0, _ = items[0]
        rule = "plan.p2p_order" if kind == "order" else "plan.p2p_size_mismatch"
        findings.append(
            Finding(
                rule=rule,
                category="p2p_pairing",
                severity="error",
                confidence=0.8,
                evidence=tuple(lines[:_MAX_EVIDENCE]),
                **prose(rule, src=src0, dst=dst0),
                ranks=_blamed((src, dst) for _, _, src, dst, _ in items),
            )
        )
    return _pairing(
        "plan",
        sorted(last),
        sends,
        recvs,
        blind,
        unmatched,
        mismatched,
        lambda op: _msg_text(op.shape, op.dtype),
        lambda op: op.text,
        findings,
        [p.source for p in last.values()],
    )


def _pairing(origin, ranks, sends, recvs, blind, unmatched, mismatched, msg, text, findings, sources) -> Pairing:
    """The matrix of (src, dst) cells over every group, from one match."""
    by_pair: dict = defaultdict(lambda: {"s": [], "r": [], "us": 0, "ur": 0, "mm": "", "blind": False})
    for key in set(sends) | set(recvs):
        _, src, dst = key
        cell = by_pair[(src, dst)]
        cell["s"] += [msg(op) for op in sends.get(key, ())]
        cell["r"] += [msg(op) for op in recvs.get(key, ())]
        cell["blind"] |= key in blind
    unpaired = []
    for op, src, dst, _pg in unmatched:
        kind = getattr(op, "kind", None) or op.op  # a PlannedOp, or a recorded entry ("send"/"recv")
        by_pair[(src, dst)]["us" if kind == "send" else "ur"] += 1
        unpaired.append(UnpairedOp(src, dst, kind, text(op), getattr(op, "source", "")))
    for kind, items in mismatched.items():
        for _, _, src, dst, _ in items:
            by_pair[(src, dst)]["mm"] = kind
    cells = tuple(
        PairCell(src, dst, tuple(c["s"]), tuple(c["r"]), c["us"], c["ur"], c["mm"], c["blind"])
        for (src, dst), c in sorted(by_pair.items())
    )
    every = sorted(set(ranks) | {r for c in cells for r in (c.src, c.dst)})
    return Pairing(
        origin=origin, ranks=tuple(every), cells=cells, unpaired=tuple(unpaired), findings=tuple(findings), sources=tuple(sources)
    )


# --------------------------------------------------------------------------- flight recorder


def pairing_from_dumps(dumps: list) -> Optional[Pairing]:
    """The pairing of the sends and recvs recorded in flight-recorder dumps
    (NCCL records them; gloo does not), or None when they record none.
    ``dumps`` as for :func:`~ncclnb.doctor.flight_recorder.analyze_dumps`;
    the findings are its point-to-point findings, from the same match."""
    items = fr._items(dumps) or []
    loaded, _ = fr._load(items)
    loaded = fr._ordered(loaded)
    if not loaded:
        return None
    members, desc, _ = fr._memberships(loaded)
    matched = fr._p2p_match(loaded, members, desc)
    sends, recvs, blind, unmatched, mismatched = matched
    if not sends and not recvs:
        return None
    findings = fr._sorted_findings(fr._p2p_findings(loaded, members, desc, matched))

    def text(e):
        line = fr._fmt_entry(e)
        return line if desc.get(e.pg) == "default_pg" else f"{line} [{fr._pg_text(e.pg, desc.get(e.pg, ''))}]"

    def msg(e):
        sizes = e.in_sizes if e.op == "send" else e.out_sizes
        return f"{fr._fmt_sizes(sizes)} {'/'.join(sorted({fr._dtype(d) for d in e.dtypes}))}".rstrip() + (
            f" ({e.state})" if e.state else ""
        )

    return _pairing(
        "flight recorder",
        list(loaded),
        sends,
        recvs,
        blind,
        unmatched,
        mismatched,
        msg,
        text,
        findings,
        [d.source for d in loaded.values()],
    )
