"""Flight recorder dumps: who ran which collective, aligned across ranks.

Input is what ``torch._C._distributed_c10d._dump_fr_trace_json()`` returns,
one JSON document per rank, already parsed. The pickled ``_dump_fr_trace``
form (what torch writes by default) never reaches this module as a pickle:
:mod:`ncclnb.doctor.unpickle` reads it as plain data only, with no globals,
and hands it on as the JSON form. The analysis follows the
stock analyzer in ``torch/distributed/flight_recorder`` (align entries by
process group and ``collective_seq_id``; pair sends with receives) but never
asserts on its input: a dump that does not look right is skipped with an info
finding, and the others are still analysed.

What torch 2.13 writes, and what this module relies on
------------------------------------------------------
Top level: ``version`` ("2.10"), ``comm_lib_version`` ("" on gloo, the NCCL
version on NCCL), ``pg_config``, ``pg_status``, ``nccl_comm_state``,
``entries``. No key names the rank that wrote the dump. Each entry has
``record_id``, ``pg_id``, ``process_group`` ([name, desc]),
``collective_seq_id``, ``p2p_seq_id``, ``op_id``, ``is_p2p``,
``profiling_name`` ("gloo:all_reduce", "nccl:send 0->1", "nccl:recv 1<-0"),
``input_sizes``/``output_sizes`` (one list of dims per tensor),
``input_dtypes``/``output_dtypes`` ("Float", "BFloat16", ...), ``state``,
``time_created_ns``, ``timeout_ms``, ``retired``. The JSON form carries no
``frames``.

On gloo every ``state`` reads ``scheduled`` and ``pg_config`` is keyed by ""
with empty name and desc, so it cannot be tied to the groups named in the
entries: group membership is then rebuilt from the entries (the default group
holds every rank that gave a dump, and every rank below the largest one a
``pg_config`` group names, gloo's unnamed one too: its ranks are global
ranks, so they bound the world size from below, :func:`world_size`; another
group holds the ranks that recorded an entry in it). gloo does not record send/recv at all, so point to
point pairing only has something to say on NCCL dumps.

Which rank wrote a dump
-----------------------
1. a top-level integer ``rank`` key, if a tool added one (torch does not);
2. the file name: ``rank<N>`` anywhere in it (``rank3.json``,
   ``fr_rank_3.json``), else trailing digits before the extension
   (``nccl_trace_3``, ``trace_3.json``: the stock analyzer's
   ``<prefix><rank>``);
3. the dump's own sends and receives on the default group (``send 3->x`` and
   ``recv 3<-x`` are written by rank 3).
A dump whose rank none of these tell is skipped with an info finding.

Bounds
------
Every field is read defensively: integers are int64 (as torch writes them),
names at most 256 characters, an entry at most 4096 tensors of at most 64
dimensions a side, ranks and peers at most 9 ASCII digits. A dump that breaks
a bound on a field the analysis needs is skipped with a one-line reason
(``fr.bad_dump``); an optional field out of bounds (a timestamp, a timeout,
``pg_config``) is ignored. ``prepare_dump`` keeps only what the analysis
reads, so the parsed JSON can be dropped at once; ``size`` estimates the
bytes kept, for a caller that bounds the total over many dumps.

Rules for the first divergence of a process group (collective entries only,
in ``collective_seq_id`` order, starting where every wrapped ring buffer
still has entries):
- ranks at the same sequence id ran different ops: ``fr.desync_op``;
  same ops but other sizes: ``fr.size_mismatch``; other dtypes:
  ``fr.dtype_mismatch`` (all ``collective_desync``). The majority is taken as
  right and the others are blamed; on a tie of ops the ranks that repeat the
  op every rank ran at the collective before (one more loop iteration) are
  blamed, else every rank involved.
- some members have no entry at a sequence id the others reached. If those
  that reached it are fewer than those that did not, the few ran collectives
  the rest never ran: ``fr.extra_collective`` (``collective_desync``, blames
  the few). Otherwise the missing ranks are blamed: a missing rank is
  *merely behind* when its last entry anywhere is either finished
  (``completed``) or a collective of this group or of a group whose every
  member reached it; it then hangs in its own code (a checkpoint, an
  evaluation, a data loader): ``fr.missing_rank`` (``slow_rank_timeout``).
  When its last entry is a send/recv, or a collective of another group that
  the others of that group never reached, or it skipped this sequence id but
  ran later ones, it ran something else: ``fr.missing_rank_elsewhere``
  (``collective_desync``).
- every rank reached the same collective, but one issued it later than its
  peers by more than the collective's timeout, measured from each rank's own
  previous collective of the group (so clocks of different hosts need not
  agree): ``fr.late_rank`` (``slow_rank_timeout``). This is how a slow rank
  shows on gloo when it does reach the collective in the end.

Point to point (per process group, per ordered pair src -> dst, in record
order): the i-th send a->b pairs with the i-th recv b<-a. Extra sends or
receives are ``fr.p2p_unmatched``, blaming the end that is out of step
(:func:`p2p_culprits`: the fewest ranks that account for every unpaired op;
between the two ends of one, the peer that never posted its half, unless
most of the job went on to a later collective without the poster; both, and
said so, when nothing tells); a pair whose sizes or dtypes differ is
``fr.p2p_order`` when the pair's sizes agree as a multiset (same messages,
other order) and ``fr.p2p_size_mismatch`` otherwise (all ``p2p_pairing``;
these blame both ends, the rank involved most often first: nothing tells
which side's size is the wrong one).
"""

from __future__ import annotations

import json
import math
import re
from bisect import bisect_left
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any, Iterable, Optional, Union

from ncclnb.doctor.cards import prose
from ncclnb.doctor.sources import MAX_RANK as _MAX_RANK, rank_from_name
from ncclnb.errors import InputError
from ncclnb.model.findings import SEVERITY_ORDER
from ncclnb.model import Evidence, Finding, RankStatus

__all__ = [
    "looks_like_dump",
    "analyze_dumps",
    "dump_rank_status",
    "prepare_dump",
    "PreparedDump",
    "MAX_ENTRIES",
    "world_size",
    "p2p_culprits",
    "ranks_ahead",
    "alignment",
    "Alignment",
    "GroupAlignment",
    "AlignedCall",
    "Divergence",
    "match_p2p",
]

MAX_ENTRIES = 200_000  # per dump; torch's default ring buffer holds 2000
MAX_P2P_EDGES = 2048  # unpaired sends/receives weighed to find whom they blame
_MAX_EVIDENCE = 12  # evidence lines per finding
_MAX_INT = 1 << 63  # integers of a dump are int64; a larger one is not read
_MAX_NAME = 256  # characters of a profiling name, a group name or desc
_MAX_WORD = 64  # characters of a state, a dtype, a library version
_MAX_TENSORS = 4096  # tensors on each side of one entry
_MAX_DIMS = 64  # dimensions of one tensor
_MAX_GROUPS = 65536  # pg_config groups read
_MAX_RANKS_TEXT = 1 << 20  # characters of one pg_config "ranks" text

# Collectives whose input and output sizes must agree on every rank.
# all_to_all, scatter, gather, the *_v variants and barrier legitimately differ.
_SAME_SIZE_OPS = frozenset(
    {
        "all_reduce",
        "allreduce_coalesced",
        "all_reduce_barrier",
        "broadcast",
        "_broadcast_oop",
        "reduce",
        "_reduce_oop",
        "all_gather",
        "_all_gather_base",
        "all_gather_into_tensor",
        "all_gather_into_tensor_coalesced",
        "all_gather_single",
        "reduce_scatter",
        "_reduce_scatter_base",
        "reduce_scatter_tensor",
        "reduce_scatter_tensor_coalesced",
        "reduce_scatter_single",
    }
)
_P2P_OPS = frozenset({"send", "recv"})
_DTYPE_NAMES = {
    "Float": "float32",
    "Double": "float64",
    "Half": "float16",
    "BFloat16": "bfloat16",
    "Long": "int64",
    "Int": "int32",
    "Short": "int16",
    "Char": "int8",
    "Byte": "uint8",
    "Bool": "bool",
    "ComplexFloat": "complex64",
    "ComplexDouble": "complex128",
    "Float8_e4m3fn": "float8_e4m3fn",
    "Float8_e5m2": "float8_e5m2",
}
# ASCII digits only (``\d`` would take any Unicode digit) and at most 9 of them
_SEND_RE = re.compile(r"^\s*([0-9]{1,9})\s*->\s*([0-9]{1,9})\s*$", re.ASCII)
_RECV_RE = re.compile(r"^\s*([0-9]{1,9})\s*<-\s*([0-9]{1,9})\s*$", re.ASCII)


# --------------------------------------------------------------------------- parsing


@dataclass(frozen=True, slots=True)
class _Entry:
    rank: int  # global rank of the dump that holds it
    source: str
    record_id: int
    pg: str  # process_group[0]
    pg_desc: str  # process_group[1]
    op: str  # "all_reduce", "send", "coalesced", ...
    peer_spec: Optional[str]  # "0->1" / "1<-0" for send/recv
    coll_seq: int
    p2p_seq: int
    is_p2p: bool
    in_sizes: tuple
    out_sizes: tuple
    dtypes: tuple  # input dtypes then output dtypes
    state: str
    t_ns: Optional[int]
    timeout_ms: Optional[int]


@dataclass(frozen=True, slots=True)
class _Dump:
    rank: int
    source: str
    entries: tuple  # of _Entry, in record order
    pg_ranks: dict  # pg name -> tuple of global ranks, from a usable pg_config
    lib_version: Optional[str]
    wrapped: bool  # the ring buffer dropped older entries
    size: int = 0  # estimated bytes this dump holds in memory
    world: int = 0  # the largest rank any pg_config group names, plus one (0: none named)


class _BadDump(InputError):
    """A dump that cannot be analysed (malformed input, never a bug); the
    message says why, in one line."""


class _NoEntries(_BadDump):
    """A dump with no ``entries`` at all: the recorder was off, or (when other
    ranks' dumps of the same job hold entries) this rank issued no collective."""

    def __init__(self, message: str, rank: Optional[int] = None, world: int = 0):
        super().__init__(message)
        self.rank = rank  # from a ``rank`` key or the file name, if either tells
        self.world = world  # as _Dump.world


class _TooLarge(_BadDump):
    """A dump whose entries would need more memory than the caller has left."""

    def __init__(self, message: str, size: int):
        super().__init__(message)
        self.size = size


@dataclass(frozen=True)
class PreparedDump:
    """One dump read by :func:`prepare_dump`: what the analysis keeps of it
    (``dump``), or why it cannot be analysed (``reason``, a one-line message).
    ``size`` is the estimated bytes it holds in memory (for a dump refused for
    its size, what it would have needed; 0 for another refused one).
    ``analyze_dumps`` and ``dump_rank_status`` take it in place of the JSON."""

    source: str
    dump: Optional[_Dump] = None
    reason: Optional[_BadDump] = None
    size: int = 0


class _Shared:
    """Equal sizes, dtypes and names of a dump's entries share one object;
    ``size`` estimates the bytes of the distinct ones kept."""

    def __init__(self):
        self.seen: dict = {}
        self.size = 0

    def __call__(self, value, cost: int):
        got = self.seen.get(value)
        if got is None:
            self.seen[value] = got = value
            self.size += cost
        return got


def looks_like_dump(data: Union[str, bytes]) -> bool:
    """Cheap check that ``data`` (a file's text or bytes) is a flight-recorder
    JSON dump: a JSON object whose first 64 KiB name ``"entries"`` and one of
    the keys torch writes beside it (``pg_config``, ``pg_status``,
    ``comm_lib_version``, ``nccl_comm_state``, ``profiling_name``), or, for a
    recorder that was switched off and wrote no entries, ``pg_config``,
    ``pg_status`` and ``version``.

    Only the head is looked at; the file is not parsed. Never raises.
    """
    try:
        head = data[:65536]
        if isinstance(head, (bytes, bytearray)):
            head = bytes(head).decode("utf-8", errors="replace")
        if not isinstance(head, str):
            return False
        head = head.lstrip("\ufeff \t\r\n")
        if not head.startswith("{"):
            return False
        if '"entries"' not in head:
            # a recorder that was off (TORCH_FR_BUFFER_SIZE=0) writes no "entries" key
            return all(k in head for k in ('"pg_config"', '"pg_status"', '"version"'))
        return any(
            k in head for k in ('"pg_config"', '"pg_status"', '"comm_lib_version"', '"nccl_comm_state"', '"profiling_name"')
        )
    except (TypeError, ValueError):  # not text or bytes: simply "not a dump"
        return False


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _int64(v: Any) -> bool:
    """An integer as torch writes one (int64); larger ones would overflow float
    arithmetic and int-to-text conversion."""
    return (type(v) is int or _is_int(v)) and -_MAX_INT <= v < _MAX_INT


def _dims(v: Any) -> Optional[tuple]:
    """One tensor's sizes: a list of at most _MAX_DIMS int64s, as a tuple; else None."""
    if type(v) is not list or len(v) > _MAX_DIMS:
        return None
    if all(type(d) is int for d in v):
        return tuple(v) if not v or (min(v) >= -_MAX_INT and max(v) < _MAX_INT) else None
    return tuple(v) if all(_int64(d) for d in v) else None


def _word(v: Any, limit: int = _MAX_WORD) -> Optional[str]:
    """``v`` when it is a string of at most ``limit`` characters, else None."""
    return v if isinstance(v, str) and len(v) <= limit else None


def _sizes(v: Any, what: str, share: _Shared) -> tuple:
    if not isinstance(v, list):
        raise _BadDump(f"{what} is not a list")
    if len(v) > _MAX_TENSORS:
        raise _BadDump(f"{what} lists {len(v)} tensors, more than {_MAX_TENSORS}")
    out = []
    for raw in v:
        dims = _dims(raw)
        if dims is None:
            raise _BadDump(f"{what} holds something other than lists of at most {_MAX_DIMS} integers")
        out.append(share(dims, 64 + 40 * len(dims)))
    return share(tuple(out), 64 + 8 * len(out))


def _strs(v: Any, what: str, share: _Shared) -> tuple:
    if v is None:
        return ()
    if not isinstance(v, list) or len(v) > _MAX_TENSORS or not all(_word(s) is not None for s in v):
        raise _BadDump(f"{what} is not a list of at most {_MAX_TENSORS} short strings")
    return share(tuple(share(s, 64 + len(s)) for s in v), 64 + 8 * len(v))


def _parse_entry(raw: Any, index: int, rank: int, source: str, share: Optional[_Shared] = None) -> _Entry:
    where = f"entries[{index}]"
    share = _Shared() if share is None else share
    if not isinstance(raw, dict):
        raise _BadDump(f"{where} is not an object")
    name = raw.get("profiling_name")
    if not isinstance(name, str) or not name:
        raise _BadDump(f"{where}.profiling_name is missing")
    if len(name) > _MAX_NAME:
        raise _BadDump(f"{where}.profiling_name is longer than {_MAX_NAME} characters")
    op_part = name.split(":", 1)[1] if ":" in name else name
    op, _, meta = op_part.strip().partition(" ")
    pg = raw.get("process_group")
    if not isinstance(pg, list) or len(pg) != 2 or not all(_word(x, _MAX_NAME) is not None for x in pg):
        raise _BadDump(f"{where}.process_group is not [name, desc] (strings of at most {_MAX_NAME} characters)")
    seq = raw.get("collective_seq_id")
    if not _int64(seq):
        raise _BadDump(f"{where}.collective_seq_id is not a 64-bit integer")
    p2p_seq = raw.get("p2p_seq_id", 0)
    record_id = raw.get("record_id", index)
    if not _int64(p2p_seq) or not _int64(record_id):
        raise _BadDump(f"{where}: p2p_seq_id or record_id is not a 64-bit integer")
    is_p2p = raw.get("is_p2p")
    if not isinstance(is_p2p, bool):
        is_p2p = op in _P2P_OPS
    t_ns = raw.get("time_created_ns")
    timeout_ms = raw.get("timeout_ms")
    state = _word(raw.get("state", "")) or ""
    in_sizes = _sizes(raw.get("input_sizes", []), f"{where}.input_sizes", share)
    out_sizes = _sizes(raw.get("output_sizes", []), f"{where}.output_sizes", share)
    dtypes = share(
        _strs(raw.get("input_dtypes"), f"{where}.input_dtypes", share)
        + _strs(raw.get("output_dtypes"), f"{where}.output_dtypes", share),
        0,
    )
    return _Entry(
        rank=rank,
        source=source,
        record_id=record_id,
        pg=share(pg[0], 64 + len(pg[0])),
        pg_desc=share(pg[1], 64 + len(pg[1])),
        op=share(op, 64 + len(op)),
        peer_spec=share(meta.strip(), 64 + len(meta)) or None,
        coll_seq=seq,
        p2p_seq=p2p_seq,
        is_p2p=is_p2p,
        in_sizes=in_sizes,
        out_sizes=out_sizes,
        dtypes=dtypes,
        state=share(state, 64 + len(state)),
        t_ns=t_ns if _int64(t_ns) else None,
        timeout_ms=timeout_ms if _int64(timeout_ms) and timeout_ms > 0 else None,
    )


def _num(text: str) -> Optional[int]:
    """ASCII digits, at most 9 of them, as an int; else None."""
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 9 else None


def _rank_from_p2p(raw_entries: list) -> Optional[int]:
    """The rank a dump belongs to, read from its own default-group p2p entries."""
    seen = set()
    for raw in raw_entries:
        if not isinstance(raw, dict):
            continue
        name, pg = raw.get("profiling_name"), raw.get("process_group")
        if not isinstance(name, str) or not isinstance(pg, list) or len(pg) != 2:
            continue
        if pg[1] != "default_pg" and pg[0] != "0":
            continue
        op, _, meta = (name.split(":", 1)[-1]).strip().partition(" ")
        m = _SEND_RE if op == "send" else _RECV_RE if op == "recv" else None
        m = m.match(meta) if m else None
        if m and _num(m.group(1)) is not None:
            seen.add(_num(m.group(1)))  # "a->b": a sends; "b<-a": b receives
    return seen.pop() if len(seen) == 1 else None


def _parse_ranks_text(v: Any) -> Optional[tuple]:
    """pg_config ``ranks``: a JSON list of ints, written as text ("[0, 1]").
    Text too long, nested too deeply or holding ranks out of range is ignored
    (the group's members are then rebuilt from the entries)."""
    if isinstance(v, str):
        if len(v) > _MAX_RANKS_TEXT:
            return None
        try:
            v = json.loads(v)
        except (ValueError, RecursionError):  # not JSON, an int past 4300 digits, or nested too deeply
            return None
    if isinstance(v, list) and 0 < len(v) <= _MAX_RANK and all(_is_int(r) and 0 <= r < _MAX_RANK for r in v):
        return tuple(v)
    return None


def _parse_dump(source: str, data: Any, max_size: Optional[int] = None) -> _Dump:
    if not isinstance(data, dict):
        raise _BadDump("it is not a JSON object")
    rank = data.get("rank")
    if not (_is_int(rank) and 0 <= rank < _MAX_RANK):
        rank = rank_from_name(source, trailing_number=True)
    raw_entries = data.get("entries")
    pg_ranks, world, cfg_size = _pg_config(data.get("pg_config"))
    if raw_entries is None and "pg_status" in data:
        raise _NoEntries(
            "it holds no entries: the flight recorder was off (TORCH_FR_BUFFER_SIZE=0 or TORCH_NCCL_TRACE_BUFFER_SIZE=0)",
            rank,
            world,
        )
    if not isinstance(raw_entries, list):
        raise _BadDump('it has no "entries" list')
    if len(raw_entries) > MAX_ENTRIES:
        raise _BadDump(f"it holds {len(raw_entries)} entries, more than the {MAX_ENTRIES} read")
    if max_size is not None and _size(len(raw_entries), 0) > max_size:
        raise _TooLarge(
            f"its {len(raw_entries)} entries need more than the {max_size >> 20} MiB left", _size(len(raw_entries), 0)
        )
    if rank is None:
        rank = _rank_from_p2p(raw_entries)
    if rank is None:
        raise _BadDump("no rank in its file name (rank<N> or trailing digits) or in its entries")
    source = str(source)
    share = _Shared()
    entries = tuple(_parse_entry(raw, i, rank, source, share) for i, raw in enumerate(raw_entries))
    entries = tuple(sorted(entries, key=lambda e: e.record_id))
    share.size += cfg_size
    lib = _word(data.get("comm_lib_version", data.get("nccl_version")))
    return _Dump(
        rank=rank,
        source=source,
        entries=entries,
        pg_ranks=pg_ranks,
        lib_version=lib or None,
        wrapped=bool(entries) and entries[0].record_id > 0,
        size=_size(len(entries), share.size),
        world=world,
    )


def _pg_config(cfg: Any) -> tuple[dict, int, int]:
    """(pg name -> global ranks, world, bytes kept) of a dump's ``pg_config``:
    ``{name: {"name", "desc", "ranks": "[0, 1, 2, 3]"}}``. ``world`` is the
    largest rank any group names plus one: a lower bound of the world size
    (every group's ranks are global ranks), 0 when no group names its ranks.
    gloo writes ``{"": {"name": "", "desc": "", "ranks": "[0, 1, 2]"}}``: the
    ranks count for ``world``, but a group without a name cannot be tied to
    the groups of the entries. A ``ranks`` that is not a list of ranks (text
    too long, "all", out of range) says nothing."""
    pg_ranks: dict = {}
    world = size = 0
    if not isinstance(cfg, dict):
        return pg_ranks, world, size
    for key, val in list(cfg.items())[:_MAX_GROUPS]:
        if _word(key, _MAX_NAME) is None or not isinstance(val, dict):
            continue
        ranks = _parse_ranks_text(val.get("ranks"))
        if ranks is None:
            continue
        world = max(world, max(ranks) + 1)
        if key:
            pg_ranks[key] = ranks
            size += 64 + len(key) + 40 * len(ranks)
    return pg_ranks, world, size


def world_size(dumps: Iterable) -> Optional[int]:
    """The world size the dumps' process-group configs tell at least (the
    largest rank a group names, plus one), or None when none names its ranks.
    ``dumps`` as for :func:`analyze_dumps`; dumps that cannot be read are
    ignored. Never raises on odd input."""
    loaded, _ = _load(_items(dumps) or [])
    return max((d.world for d in loaded.values()), default=0) or None


def _size(entries: int, shared: int) -> int:
    """Estimated bytes of a dump kept: the entries (slots) and what they share."""
    return 256 + 200 * entries + shared


def prepare_dump(source: str, data: Any, max_size: Optional[int] = None) -> PreparedDump:
    """Read one dump (its parsed JSON) into what the analysis keeps of it, so
    the caller can drop the JSON at once; ``analyze_dumps`` and
    ``dump_rank_status`` take the result in place of the JSON. A dump that
    cannot be analysed gives its reason instead, in one line; so does one
    whose entries alone would need more than ``max_size`` bytes (estimated),
    before they are read. Raises only on a bug, never on odd input."""
    source = str(source)
    try:
        dump = _parse_dump(source, data, max_size)
        return PreparedDump(source, dump=dump, size=dump.size)
    except _BadDump as exc:
        # without its traceback: the frames would keep the whole JSON alive
        exc.__traceback__ = exc.__context__ = exc.__cause__ = None
        return PreparedDump(source, reason=exc, size=exc.size if isinstance(exc, _TooLarge) else 0)
    except RecursionError:  # a Python caller's self-referencing or absurdly deep structure
        return PreparedDump(source, reason=_BadDump("it is nested too deeply"))
    except MemoryError:
        return PreparedDump(source, reason=_BadDump("it is too large to hold in memory"))


def _load(dumps: Iterable) -> tuple[dict, list]:
    """Parse every dump; returns ({rank: _Dump}, [info findings for the skipped])."""
    by_rank: dict[int, _Dump] = {}
    notes: list[Finding] = []
    empty: list = []
    for item in dumps:
        try:
            source, data = item
        except (TypeError, ValueError):
            source, data = "<dump>", None
        # only odd input is turned into a skipped dump (prepare_dump); a bug raises
        prepared = data if isinstance(data, PreparedDump) else prepare_dump(str(source), data)
        source, dump, exc = prepared.source, prepared.dump, prepared.reason
        if isinstance(exc, _NoEntries):
            empty.append((source, exc))
            continue
        if exc is not None:
            notes.append(_info("fr.bad_dump", source, dump=source, why=exc))
            continue
        if dump.rank in by_rank:
            notes.append(_info("fr.duplicate_rank", source, rank=dump.rank, kept=by_rank[dump.rank].source))
            continue
        by_rank[dump.rank] = dump
    for source, exc in empty:
        # beside dumps that recorded collectives, an empty one is a rank that reached none
        rank = exc.rank
        if by_rank and rank is not None and rank not in by_rank:
            by_rank[rank] = _Dump(
                rank=rank, source=source, entries=(), pg_ranks={}, lib_version=None, wrapped=False, world=exc.world
            )
        else:
            notes.append(_info("fr.bad_dump", source, dump=source, why=exc))
    return by_rank, notes


def _info(rule: str, source: str, **values) -> Finding:
    """An info note about the dumps themselves, worded by ``rule``'s card filled with ``values``."""
    text = prose(rule, **values)
    return Finding(
        rule=rule,
        category="unknown",
        severity="info",
        confidence=1.0,
        evidence=(Evidence(source=source, line=None, text=text["title"]),),
        **text,
    )


# --------------------------------------------------------------------------- text


def _dtype(name: str) -> str:
    return _DTYPE_NAMES.get(name, name)


def _fmt_sizes(sizes: tuple) -> str:
    if not sizes:
        return "[]"
    shown = " ".join("[" + ", ".join(str(d) for d in dims) + "]" for dims in sizes[:4])
    return shown + (f" (+{len(sizes) - 4} tensors)" if len(sizes) > 4 else "")


def _fmt_entry(e: _Entry, seq: Optional[int] = None) -> str:
    op = e.op if not e.peer_spec else f"{e.op} {e.peer_spec}"
    dtypes = sorted({_dtype(d) for d in e.dtypes})
    sizes = _fmt_sizes(e.in_sizes if e.in_sizes else e.out_sizes)
    text = f"rank {e.rank} seq {e.coll_seq if seq is None else seq}: {op} {sizes}"
    if dtypes:
        text += " " + "/".join(dtypes)
    if e.state:
        text += f" (state {e.state})"
    return text


def _fmt_group(entries: list, seq: int) -> str:
    if len(entries) == 1:
        return _fmt_entry(entries[0], seq)
    return f"rank {entries[0].rank} seq {seq}: " + " + ".join(_fmt_entry(e, seq).split(": ", 1)[1] for e in entries)


def _ranks_text(ranks: Iterable[int]) -> str:
    ranks = sorted(ranks)
    if len(ranks) == 1:
        return f"rank {ranks[0]}"
    if len(ranks) > 8:
        return f"ranks {', '.join(map(str, ranks[:8]))} and {len(ranks) - 8} more"
    return "ranks " + ", ".join(map(str, ranks[:-1])) + f" and {ranks[-1]}"


def _pg_text(pg: str, desc: str) -> str:
    return f"process group {pg}" + (f" ({desc})" if desc and desc not in ("undefined", pg) else "")


# --------------------------------------------------------------------------- groups


def _memberships(dumps: dict) -> tuple[dict, dict, list]:
    """pg name -> (members, desc); a pg_config is used when it names the group
    the entries use, otherwise membership is rebuilt from the entries."""
    seen: dict[str, set] = defaultdict(set)
    desc: dict[str, str] = {}
    for d in dumps.values():
        for e in d.entries:
            seen[e.pg].add(d.rank)
            desc.setdefault(e.pg, e.pg_desc)
    config: dict[str, tuple] = {}
    for d in sorted(dumps.values(), key=lambda d: d.rank):
        for pg, ranks in d.pg_ranks.items():
            config.setdefault(pg, ranks)
    members: dict[str, frozenset] = {}
    notes: list[Finding] = []
    all_ranks = frozenset(dumps)
    # the world the groups' configs name (gloo's unnamed one too): the default group's ranks
    world = frozenset(range(max((d.world for d in dumps.values()), default=0)))
    for pg in seen:
        if pg in config:
            members[pg] = frozenset(config[pg])
        elif desc.get(pg) == "default_pg":
            members[pg] = all_ranks | world
        else:
            members[pg] = frozenset(seen[pg])
        absent = sorted(members[pg] - all_ranks)
        if absent:
            notes.append(_info("fr.missing_dump", "flight recorder", ranks=_ranks_text(absent), group=_pg_text(pg, desc[pg])))
    return members, desc, notes


def _ordered(dumps: dict) -> dict:
    return {r: dumps[r] for r in sorted(dumps)}


# --------------------------------------------------------------------------- collectives


def _blame_groups(by_key: dict) -> tuple[list, bool]:
    """Ranks grouped by a signature: (ranks to blame, whether the majority was clear)."""
    sizes = sorted((len(v) for v in by_key.values()), reverse=True)
    if len(sizes) > 1 and sizes[0] == sizes[1]:
        return sorted(r for v in by_key.values() for r in v), False
    majority = max(by_key, key=lambda k: len(by_key[k]))
    return sorted(r for k, v in by_key.items() if k != majority for r in v), True


def _repeats_previous(groups: dict, before: dict) -> Optional[tuple]:
    """With two groups of ranks and no majority, the group whose ops at the
    divergent sequence id are the ops every rank ran at the collective
    before it (the loop's collective once more, where the others moved on to
    another): it ran an extra iteration. None when neither or both do."""
    if not before or len(groups) != 2:
        return None
    previous = {tuple(e.op for e in es) for es in before.values()}
    if len(previous) != 1:
        return None
    (last,) = previous
    repeating = [k for k in groups if k == last]
    return repeating[0] if len(repeating) == 1 else None


def _mismatch_finding(kind: str, pg: str, desc: str, seq: int, groups: dict, at: dict, before: Optional[dict] = None) -> Finding:
    blamed, clear = _blame_groups(groups)
    majority_key = max(groups, key=lambda k: len(groups[k])) if clear else None
    history = ""
    if not clear and kind == "op":
        extra = _repeats_previous(groups, before or {})
        if extra is not None:
            blamed, clear = sorted(groups[extra]), True
            majority_key = next(k for k in groups if k != extra)
            history = (
                f" No majority decides, but {_ranks_text(blamed)} repeated the "
                f"{' + '.join(extra)} every rank ran at the collective before: it ran one "
                "more iteration than the others (a loop whose length depends on the rank's data)."
            )
    evidence = []
    for key, ranks in sorted(groups.items(), key=lambda kv: (-len(kv[1]), min(kv[1]))):
        shown = sorted(ranks)
        for r in shown[:3]:
            evidence.append(Evidence(source=at[r][0].source, line=None, text=_fmt_group(at[r], seq)))
        if len(shown) > 3:
            evidence.append(
                Evidence(
                    source=at[shown[0]][0].source, line=None, text=f"... and {len(shown) - 3} more ranks like rank {shown[0]}"
                )
            )
    where = f"collective #{seq} of {_pg_text(pg, desc)}"

    def ops(r):
        return " + ".join(e.op for e in at[r])

    rule = {"op": "fr.desync_op", "size": "fr.size_mismatch"}.get(kind, "fr.dtype_mismatch")
    good = sorted(groups[majority_key]) if clear else blamed
    text = prose(
        rule,
        Blamed=_ranks_text(blamed).capitalize(),
        blamed_ops=ops(blamed[0]),
        good=_ranks_text(good),
        good_ops=ops(good[0]),
        op=ops(blamed[0]),
        where=where,
        who_is_named=history if clear else " No majority tells which side is wrong, so every rank involved is named.",
    )
    if not clear:
        # nothing says which side is wrong: the title names no side (the card's title is the one that does)
        text["title"] = {
            "fr.desync_op": f"Ranks called different collectives at {where}",
            "fr.size_mismatch": f"Ranks passed different tensor sizes to {ops(blamed[0])} at {where}",
            "fr.dtype_mismatch": f"Ranks passed different dtypes to {ops(blamed[0])} at {where}",
        }[rule]
    return Finding(
        rule=rule,
        category="collective_desync",
        severity="error",
        confidence=(0.75 if history else 0.9) if clear else 0.6,
        evidence=tuple(evidence[:_MAX_EVIDENCE]),
        ranks=tuple(blamed),
        **text,
    )


def _last_entry(dump: _Dump) -> Optional[_Entry]:
    return dump.entries[-1] if dump.entries else None


def _classify_missing(rank: int, dumps: dict, pg: str, seq: int, coll: dict, members: dict) -> tuple[bool, str]:
    """(merely behind?, one line on where the rank is) for a rank without ``seq``."""
    own = coll[pg].get(rank, {})
    if any(s > seq for s in own):
        return False, f"rank {rank} skipped collective #{seq} but ran later ones"
    last = _last_entry(dumps[rank])
    if last is None:
        return True, f"rank {rank} recorded no collective at all"
    where = _fmt_entry(last)
    if last.state == "completed":
        return True, f"{where}: its last entry, finished"
    if last.is_p2p:
        return False, f"{where}: its last entry, a point-to-point op"
    if last.pg == pg:
        return True, f"{where}: its last entry"
    others = [r for r in members.get(last.pg, ()) if r in dumps and r != rank]
    reached = all(any(s >= last.coll_seq for s in coll.get(last.pg, {}).get(r, {})) for r in others)
    if reached:
        return True, f"{where}: its last entry (its group's peers got past it)"
    return False, f"{where}: its last entry, which its peers in that group never reached"


def _missing_finding(
    pg: str, desc: str, seq: int, present: dict, absent: list, dumps: dict, coll: dict, members: dict
) -> Finding:
    where = f"collective #{seq} of {_pg_text(pg, desc)}"
    sample = sorted(present)[:3]
    arrived_ev = [Evidence(source=present[r][0].source, line=None, text=_fmt_group(present[r], seq)) for r in sample]
    if len(present) < len(absent):
        # A minority went further than everybody else: it ran extra collectives.
        ahead = sorted(present)
        ev = arrived_ev + [
            Evidence(
                source=dumps[r].source,
                line=None,
                text=(_fmt_entry(_last_entry(dumps[r])) if _last_entry(dumps[r]) else f"rank {r}: no entries"),
            )
            for r in absent[:4]
        ]
        return Finding(
            rule="fr.extra_collective",
            category="collective_desync",
            severity="error",
            confidence=0.7,
            evidence=tuple(ev[:_MAX_EVIDENCE]),
            **prose(
                "fr.extra_collective",
                Ahead=_ranks_text(ahead).capitalize(),
                ahead=_ranks_text(ahead),
                absent=_ranks_text(absent),
                where=where,
            ),
            ranks=tuple(ahead),
        )
    verdicts = {r: _classify_missing(r, dumps, pg, seq, coll, members) for r in absent}
    elsewhere = [r for r in absent if not verdicts[r][0]]
    tie = len(present) == len(absent)  # no majority says who is out of step
    ev = [Evidence(source=dumps[r].source, line=None, text=verdicts[r][1]) for r in absent[:6]]
    ev += arrived_ev
    if elsewhere:
        return Finding(
            rule="fr.missing_rank_elsewhere",
            category="collective_desync",
            severity="error",
            confidence=0.55 if tie else 0.75,
            evidence=tuple(ev[:_MAX_EVIDENCE]),
            **prose(
                "fr.missing_rank_elsewhere",
                Absent=_ranks_text(absent).capitalize(),
                Present=_ranks_text(present).capitalize(),
                elsewhere=_ranks_text(elsewhere),
                where=where,
            ),
            ranks=tuple(absent),
        )
    return Finding(
        rule="fr.missing_rank",
        category="slow_rank_timeout",
        severity="error",
        confidence=0.6 if tie else 0.8,
        evidence=tuple(ev[:_MAX_EVIDENCE]),
        **prose("fr.missing_rank", Absent=_ranks_text(absent).capitalize(), present=_ranks_text(present), where=where),
        ranks=tuple(absent),
    )


def _late_finding(pg: str, desc: str, seq: int, prev: int, at: dict, prev_at: dict) -> Optional[Finding]:
    timeouts = [e.timeout_ms for es in at.values() for e in es if e.timeout_ms]
    gaps = {}
    for r in at:
        t1, t0 = at[r][0].t_ns, prev_at[r][-1].t_ns
        if t1 is None or t0 is None:
            return None
        gaps[r] = t1 - t0
    if not timeouts or len(gaps) < 2:
        return None
    limit_ns = min(timeouts) * 1_000_000
    fastest = min(gaps.values())
    late = sorted(r for r, g in gaps.items() if g - fastest >= limit_ns)
    if not late or len(late) == len(gaps):
        return None
    on_time = sorted(set(gaps) - set(late))
    where = f"collective #{seq} of {_pg_text(pg, desc)}"
    ev = [
        Evidence(
            source=at[r][0].source,
            line=None,
            text=f"{_fmt_group(at[r], seq)}: issued {gaps[r] / 1e9:.1f} s after its collective #{prev}",
        )
        for r in (late[:4] + on_time[:3])
    ]
    return Finding(
        rule="fr.late_rank",
        category="slow_rank_timeout",
        severity="error",
        confidence=0.7,
        evidence=tuple(ev[:_MAX_EVIDENCE]),
        **prose(
            "fr.late_rank",
            Late=_ranks_text(late).capitalize(),
            late=_ranks_text(late),
            on_time=_ranks_text(on_time),
            where=where,
            timeout=f"{min(timeouts) / 1000:g}",
            prev=prev,
            seq=seq,
        ),
        ranks=tuple(late),
    )


def _collectives(dumps: dict) -> dict:
    """coll[pg][rank][seq] -> entries at that sequence id (several when coalesced)."""
    coll: dict[str, dict[int, dict[int, list]]] = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for d in dumps.values():
        for e in d.entries:
            if not e.is_p2p:
                coll[e.pg][d.rank][e.coll_seq].append(e)
    return coll


def _aligned_start(dumps: dict, per_rank: dict, ranks: list) -> float:
    """The first sequence id every wrapped ring buffer of the group still holds."""
    wrapped_starts = [min(per_rank[r]) for r in ranks if per_rank.get(r) and dumps[r].wrapped]
    return max(wrapped_starts, default=-math.inf)


def _collective_findings(dumps: dict, members: dict, desc: dict, where: Optional[dict] = None) -> list:
    """The first divergence of each process group. ``where``, when given, is
    filled with id(finding) -> (pg, sequence id, kind) for every finding kept
    (kind: "op", "size", "dtype", "extra", "missing" or "late")."""
    coll = _collectives(dumps)
    found_at: dict = {}
    findings = []
    waiting: dict[int, frozenset] = {}  # id(finding) -> ranks that wait in its collective
    for pg in sorted(coll, key=lambda p: (not desc.get(p) == "default_pg", p)):
        ranks = sorted(r for r in members.get(pg, ()) if r in dumps)
        per_rank = coll[pg]
        start = _aligned_start(dumps, per_rank, ranks)
        seqs = sorted({s for r in ranks for s in per_rank.get(r, {}) if s >= start})
        prev = None
        late_found = False
        for seq in seqs:
            at = {r: per_rank[r][seq] for r in ranks if seq in per_rank.get(r, {})}
            absent = [r for r in ranks if r not in at]
            by_op: dict = defaultdict(list)
            by_size: dict = defaultdict(list)
            by_dtype: dict = defaultdict(list)
            for r, es in at.items():
                by_op[tuple(e.op for e in es)].append(r)
                by_size[tuple((e.in_sizes, e.out_sizes) for e in es if e.op in _SAME_SIZE_OPS)].append(r)
                by_dtype[tuple(frozenset(e.dtypes) for e in es if e.dtypes)].append(r)
            mismatch = next(
                ((kind, groups) for kind, groups in (("op", by_op), ("size", by_size), ("dtype", by_dtype)) if len(groups) > 1),
                None,
            )
            if mismatch is not None:
                # annotated: without it mypy (1.20, 2.4) crashes inferring this loop ("Too many iterations")
                before: dict = {r: per_rank[r][prev] for r in at if prev in per_rank.get(r, {})} if prev is not None else {}
                found = _mismatch_finding(mismatch[0], pg, desc[pg], seq, mismatch[1], at, before)
                findings.append(found)
                found_at[id(found)] = (pg, seq, mismatch[0])
                break
            if absent:
                found = _missing_finding(pg, desc[pg], seq, at, absent, dumps, coll, members)
                findings.append(found)
                waiting[id(found)] = frozenset(at)
                found_at[id(found)] = (pg, seq, "extra" if found.rule == "fr.extra_collective" else "missing")
                break
            if prev is not None and not late_found:
                late = _late_finding(pg, desc[pg], seq, prev, at, {r: per_rank[r][prev] for r in at})
                if late is not None:
                    findings.append(late)
                    found_at[id(late)] = (pg, seq, "late")
                    late_found = True
            prev = seq
    kept = _drop_mirrors(findings, waiting)
    if where is not None:
        where.update((id(f), found_at[id(f)]) for f in kept)
    return kept


def _drop_mirrors(findings: list, waiting: dict) -> list:
    """Two groups that wait on each other (rank A in group 1 for B, B in group
    0 for A) give two findings that blame each other's waiters; keep the one a
    majority backs and drop its mirror image."""
    drop = set()
    for a in findings:
        for b in findings:
            if (
                a is not b
                and id(a) in waiting
                and id(b) in waiting
                and set(b.ranks) <= waiting[id(a)]
                and set(a.ranks) <= waiting[id(b)]
                and a.confidence > b.confidence
            ):
                drop.add(id(b))
    return [f for f in findings if id(f) not in drop]


# --------------------------------------------------------------------------- point to point


def _p2p_endpoints(e: _Entry, members: tuple) -> Optional[tuple]:
    """(global src, global dst) of a send/recv entry; group ranks map to global
    ranks through the sorted member list, as in torch's analyzer."""
    if e.peer_spec is None:
        return None
    m = (_SEND_RE if e.op == "send" else _RECV_RE).match(e.peer_spec)
    if not m:
        return None
    a, b = int(m.group(1)), int(m.group(2))
    src, dst = (a, b) if e.op == "send" else (b, a)
    if members:
        if src >= len(members) or dst >= len(members):
            return None
        return members[src], members[dst]
    return src, dst


def match_p2p(sends: dict, recvs: dict, message, dtypes) -> tuple[list, dict]:
    """The one pairing rule for point-to-point ops, whether recorded (NCCL's
    flight recorder) or planned (``ncclnb guard: p2p plan`` lines): per key
    (group, src, dst), the i-th send pairs with the i-th receive. ``sends`` /
    ``recvs`` map keys to ops in order; ``message(op, kind)`` gives what an op
    carries (its sizes), ``dtypes(op)`` its dtypes (empty when not known).

    Returns ``(unmatched, mismatched)``: unmatched is [(op, src, dst, group)]
    for sends and receives without a partner; mismatched is {"order": [...],
    "size": [...]} of (send, recv, src, dst, group) for the first pair of a key
    whose messages differ ("order" when both sides carry the same messages as
    a multiset, i.e. in another order)."""
    unmatched: list = []
    mismatched: dict = {"order": [], "size": []}
    for key in sorted(set(sends) | set(recvs)):
        pg, src, dst = key
        ss, rr = sends.get(key, []), recvs.get(key, [])
        for s, r in zip(ss, rr):
            ds, dr = dtypes(s), dtypes(r)
            if message(s, "send") != message(r, "recv") or (ds and dr and set(ds) != set(dr)):
                same_msgs = Counter(message(x, "send") for x in ss) == Counter(message(x, "recv") for x in rr)
                mismatched["order" if same_msgs else "size"].append((s, r, src, dst, pg))
                break
        for e in ss[len(rr) :] + rr[len(ss) :]:
            unmatched.append((e, src, dst, pg))
    return unmatched, mismatched


def _entry_message(e: _Entry, kind: str) -> tuple:
    return e.in_sizes if kind == "send" else e.out_sizes


def _entry_dtypes(e: _Entry) -> tuple:
    return e.dtypes


def _p2p_ops(dumps: dict, members: dict, desc: dict) -> tuple[dict, dict, set]:
    """Recorded sends and receives by (pg, src, dst), in record order, and the
    keys that cannot be compared (a side's dump is absent or wrapped)."""
    sends: dict = defaultdict(list)  # (pg, src, dst) -> entries on src, in order
    recvs: dict = defaultdict(list)  # (pg, src, dst) -> entries on dst, in order
    for d in dumps.values():
        for e in d.entries:
            if e.op not in _P2P_OPS:
                continue
            group = tuple(sorted(members.get(e.pg, ()))) if desc.get(e.pg) != "default_pg" else ()
            ends = _p2p_endpoints(e, group)
            if ends is None:
                continue
            src, dst = ends
            own = src if e.op == "send" else dst
            if own != d.rank:  # written by another rank than the one this dump is for
                continue
            (sends if e.op == "send" else recvs)[(e.pg, src, dst)].append(e)
    # the other side's record is absent or cut by the ring buffer: nothing to compare
    blind = {
        key
        for key in set(sends) | set(recvs)
        if key[1] not in dumps or key[2] not in dumps or dumps[key[1]].wrapped or dumps[key[2]].wrapped
    }
    return sends, recvs, blind


def _p2p_match(dumps: dict, members: dict, desc: dict) -> tuple[dict, dict, set, list, dict]:
    """(sends, recvs, blind keys, unmatched, mismatched) of the recorded p2p ops."""
    sends, recvs, blind = _p2p_ops(dumps, members, desc)
    unmatched, mismatched = match_p2p(
        {k: v for k, v in sends.items() if k not in blind},
        {k: v for k, v in recvs.items() if k not in blind},
        _entry_message,
        _entry_dtypes,
    )
    return sends, recvs, blind, unmatched, mismatched


def p2p_culprits(edges: Iterable[tuple], ahead: Iterable = ()) -> tuple[tuple, bool]:
    """Whom sends and receives without a partner blame: (ranks, certain).

    ``edges`` holds (poster, peer) for each of them: the rank that posted it
    waits for the peer, which posted no matching op. ``ahead`` are the ranks
    known to have gone past the exchange to the furthest collective any rank
    reached (:func:`ranks_ahead`); it counts only when they outnumber the
    posters that did not.

    The blamed are the fewest ranks that account for every unpaired op, the
    rank at an end of most of them first: one rank in the middle of a chain
    (A sends to B, B waits on a receive from C) or that sent to a wrong peer
    (its send to C goes unmatched while B waits for the message it meant for
    B) accounts for several. Between the two ends of one op, the peer, whose
    matching op never came; unless the peer went on with most of the job to
    a later collective that the poster never reached: then the poster is the
    one out of step (it posted an op the rest never planned, and they wait
    for it). ``certain`` is False when two ends explain the same ops equally
    (A and B each send to the other and neither receives): both are then
    blamed, and nothing tells which is wrong. Only the first
    MAX_P2P_EDGES ops are weighed (the work grows with their square)."""
    edges = [(a, b) for a, b in edges if a != b][:MAX_P2P_EDGES]
    ahead = _went_on(edges, ahead)
    left, picked = list(edges), []
    while left:
        score: Counter = Counter()
        waited_on: Counter = Counter()
        for a, b in left:
            score[a] += 1
            score[b] += 1
            waited_on[b] += 1

        def key(r):
            return score[r], r not in ahead, waited_on[r]

        best = max(key(r) for r in score)
        top = sorted(r for r in score if key(r) == best)
        picked += top
        left = [(a, b) for a, b in left if a not in top and b not in top]
    chosen = set(picked)
    # a rank whose every op has its other end blamed too: the two ends were tied, nothing chose one
    redundant = any(all((b if a == r else a) in chosen for a, b in edges if r in (a, b)) for r in picked)
    return tuple(picked), not redundant


def _went_on(edges: list, ahead: Iterable) -> frozenset:
    """``ahead`` when those ranks outnumber the posters of ``edges`` left behind, else nobody."""
    posters = {a for a, _ in edges}
    ahead = frozenset(ahead)
    return ahead if len(ahead - posters) > len(posters - ahead) else frozenset()


def _ahead(dumps: dict) -> frozenset:
    """Ranks whose last collective of the default group is the furthest any rank reached."""
    last: dict = {}
    for d in dumps.values():
        seqs = [e.coll_seq for e in d.entries if not e.is_p2p and e.op != "coalesced" and e.pg_desc == "default_pg"]
        last[d.rank] = max(seqs, default=-1)
    top = max(last.values(), default=-1)
    return frozenset(r for r, s in last.items() if s == top) if top >= 0 else frozenset()


def ranks_ahead(dumps: Iterable) -> frozenset:
    """The ranks whose flight recorder shows them at the furthest collective
    of the default group any rank reached (where a job waits for a rank still
    in a send/recv). ``dumps`` as for :func:`analyze_dumps`. Never raises on
    odd input."""
    loaded, _ = _load(_items(dumps) or [])
    return _ahead(loaded)


def _p2p_verdict(blamed: tuple, certain: bool, edges: list, ahead: frozenset) -> str:
    """One sentence on why ``blamed`` are named for unpaired ops (edges: (poster, peer))."""
    ahead = _went_on(edges, ahead)
    if not certain:
        return (
            f" The records cannot tell which end is wrong: {_ranks_text(blamed)} each posted an op the "
            "other did not match, so both are named."
        )
    parts = []
    for r in blamed:
        mine = [(a, b) for a, b in edges if r in (a, b)]
        if len(mine) > 1 and any(a == r for a, _ in mine) and any(b == r for _, b in mine):
            parts.append(
                f"rank {r} is at one end of {len(mine)} of them: it posted an op no peer matched "
                "while another rank waits for one from it (a wrong peer)"
            )
        elif all(a == r for a, _ in mine):
            parts.append(
                f"rank {r} posted {'them' if len(mine) > 1 else 'it'}, and the other ranks went on "
                "to a later collective that it never reached: its op is the one out of step"
                if r not in ahead and ahead
                else f"rank {r} posted {'ops' if len(mine) > 1 else 'an op'} that no peer matched"
            )
        else:
            parts.append(
                f"rank {r} never posted the matching op{'s' if len(mine) > 1 else ''} "
                f"that {_ranks_text({a for a, _ in mine})} wait{'s' if len({a for a, _ in mine}) == 1 else ''} for"
            )
    return " Blamed: " + "; ".join(parts) + "."


def unmatched_finding(rule: str, lines: list, first_kind: str, src: int, dst: int, edges: list, ahead) -> Finding:
    """The one finding for sends and receives that no peer paired, recorded
    (``fr.p2p_unmatched``) or planned (``plan.p2p_unmatched``): ``lines`` one
    evidence line an op, ``first_kind`` ("send" or "recv") and ``src`` ->
    ``dst`` the first op's, ``edges`` each op's (poster, peer), ``ahead`` the
    ranks that went on past the others. It blames :func:`p2p_culprits`."""
    blamed, certain = p2p_culprits(edges, ahead)
    return Finding(
        rule=rule,
        category="p2p_pairing",
        severity="error",
        confidence=0.85,
        evidence=tuple(lines[:_MAX_EVIDENCE]),
        **prose(
            rule,
            count=len(edges),
            ops="ops" if len(edges) > 1 else "op",
            what="send" if first_kind == "send" else "receive",
            src=src,
            dst=dst,
            uncertain="" if certain else " (nothing tells which end is wrong)",
            verdict=_p2p_verdict(blamed, certain, edges, ahead),
        ),
        ranks=blamed,
    )


def _p2p_findings(dumps: dict, members: dict, desc: dict, matched: Optional[tuple] = None) -> list:
    _, _, _, unmatched, mismatched = matched if matched is not None else _p2p_match(dumps, members, desc)
    findings = []
    if unmatched:
        edges = [(src, dst) if e.op == "send" else (dst, src) for e, src, dst, _ in unmatched]
        ahead = _ahead(dumps)
        lines = []
        for e, src, dst, pg in unmatched:
            if e.op == "send":
                text = f"{_fmt_entry(e)}: rank {dst} posted no matching recv from rank {src}"
            else:
                text = f"{_fmt_entry(e)}: rank {src} posted no matching send to rank {dst}"
            if desc.get(pg) != "default_pg":
                text += f" [{_pg_text(pg, desc.get(pg, ''))}]"
            lines.append(Evidence(source=e.source, line=None, text=text))
        first = unmatched[0]
        findings.append(unmatched_finding("fr.p2p_unmatched", lines, first[0].op, first[1], first[2], edges, ahead))
    for kind, items in mismatched.items():
        if not items:
            continue
        count = Counter()
        for _, _, src, dst, _ in items:
            count[src] += 1
            count[dst] += 1
        blamed = tuple(sorted(count, key=lambda r: (-count[r], r)))
        lines = []
        for s, r, src, dst, pg in items:
            lines.append(Evidence(source=s.source, line=None, text=_fmt_entry(s)))
            lines.append(Evidence(source=r.source, line=None, text=_fmt_entry(r)))
        s0, _, src0, dst0, _ = items[0]
        rule = "fr.p2p_order" if kind == "order" else "fr.p2p_size_mismatch"
        findings.append(
            Finding(
                rule=rule,
                category="p2p_pairing",
                severity="error",
                confidence=0.8,
                evidence=tuple(lines[:_MAX_EVIDENCE]),
                **prose(rule, src=src0, dst=dst0),
                ranks=blamed,
            )
        )
    return findings


# --------------------------------------------------------------------------- public


def _items(dumps: Any) -> Optional[list]:
    """``dumps`` as a list, or None when it is not iterable (None is no dumps)."""
    if dumps is None:
        return []
    try:
        return list(dumps)
    except TypeError:
        return None


def _analyse(loaded: dict) -> tuple[list, dict, dict, dict]:
    """(findings sorted errors first, where each collective finding was found,
    members, desc) of loaded dumps: the one analysis behind ``analyze_dumps``
    and ``alignment``."""
    members, desc, member_notes = _memberships(loaded)
    where: dict = {}
    findings = _collective_findings(loaded, members, desc, where) + _p2p_findings(loaded, members, desc) + member_notes
    return findings, where, members, desc


def _sorted_findings(findings: list) -> list:
    return sorted(findings, key=lambda f: (SEVERITY_ORDER[f.severity], -f.confidence))


def analyze_dumps(dumps: list[tuple[str, dict]]) -> list[Finding]:
    """Compare the flight-recorder dumps of several ranks; return findings.

    ``dumps`` holds (source name, parsed JSON) per rank, as written by
    ``torch._C._distributed_c10d._dump_fr_trace_json()``, or (source name,
    what :func:`prepare_dump` made of the JSON). The rank of each
    dump comes from a ``rank`` key, else its file name (``rank<N>`` or
    trailing digits), else its own send/recv entries. Returns the first
    divergence of each process group (``collective_desync`` or
    ``slow_rank_timeout``), unpaired or mismatched point-to-point ops
    (``p2p_pairing``), and info findings for dumps that were skipped; errors
    first. Dumps that agree give no error finding. Never raises on odd input.
    """
    items = _items(dumps)
    if items is None:
        return [_info("fr.bad_dump", "<dumps>", dump="<dumps>", why="not a list of (name, dump) pairs")]
    loaded, notes = _load(items)
    loaded = _ordered(loaded)
    if not loaded:
        return notes
    findings, _, _, _ = _analyse(loaded)
    return _sorted_findings(findings + notes)


def dump_rank_status(dumps: list[tuple[str, dict]]) -> list[RankStatus]:
    """One ``RankStatus`` per usable dump, sorted by rank: the rank, its last
    collective (``last_seq`` is its ``collective_seq_id`` within its process
    group; ``last_op`` names the op, and the group when it is not the default
    one), the NCCL version (``comm_lib_version``; empty on gloo, so None) and
    the source file. ``dumps`` as for ``analyze_dumps``. Dumps that cannot be
    read are left out (``analyze_dumps`` reports them). Never raises on odd
    input."""
    items = _items(dumps)
    if items is None:
        return []
    loaded, _ = _load(items)
    out = []
    for rank in sorted(loaded):
        d = loaded[rank]
        colls = [e for e in d.entries if not e.is_p2p and e.op != "coalesced"]
        last_seq = last_op = None
        if colls:
            last = colls[-1]
            last_seq = last.coll_seq
            last_op = last.op if last.pg_desc == "default_pg" else f"{last.op} ({_pg_text(last.pg, last.pg_desc)})"
        elif d.entries:
            last = d.entries[-1]
            last_op = f"{last.op} {last.peer_spec}" if last.peer_spec else last.op
        out.append(RankStatus(rank=rank, nccl_version=d.lib_version, last_seq=last_seq, last_op=last_op, source=d.source))
    return out


# --------------------------------------------------------------------------- alignment facts

MAX_ALIGNED_SEQS = 512  # sequence ids kept per group (a window ending past the first divergence)
MAX_ALIGNED_RANKS = 1024  # ranks kept per group (the blamed ones first)


@dataclass(frozen=True)
class AlignedCall:
    """What one rank recorded at one sequence id of a group: ``op`` ("all_reduce",
    or "all_reduce + broadcast" for a coalesced block), sizes and dtypes as
    torch wrote them (``input_sizes`` per tensor, dtype names like "Float"),
    the entry's ``state``, ``time_created_ns`` (the rank's own clock) and the
    doctor's one-line ``text`` of it."""

    rank: int
    seq: int
    op: str
    in_sizes: tuple = ()
    out_sizes: tuple = ()
    dtypes: tuple = ()
    state: str = ""
    time_ns: Optional[int] = None
    source: str = ""
    text: str = ""


@dataclass(frozen=True)
class Divergence:
    """Where the doctor found a group's ranks out of step: the sequence id,
    the finding's rule, category and title, the ranks it blames, and ``kind``:
    "op", "size" or "dtype" (ranks ran different things at ``seq``), "extra"
    (the blamed ranks ran a collective the others never did), "missing" (the
    blamed ranks never reached ``seq``) or "late" (they reached it late)."""

    seq: int
    kind: str
    rule: str
    category: str
    title: str
    ranks: tuple = ()
    finding: int = 0  # its index in Alignment.findings (0: the doctor's most likely cause)


@dataclass(frozen=True)
class GroupAlignment:
    """Ranks x sequence ids of one process group. ``ranks``: members with a
    dump (at most MAX_ALIGNED_RANKS; ``ranks_total`` counts them all);
    ``seqs``: the sequence ids kept, ascending (at most MAX_ALIGNED_SEQS,
    ``seqs_total`` counts them all); ``start``: the first id every wrapped
    ring buffer still holds (ids before it are not compared, None when none
    wrapped); ``calls``: the cells that hold a record, by (seq, rank);
    ``divergences``: the doctor's findings on this group, in seq order."""

    pg: str
    desc: str
    ranks: tuple
    seqs: tuple
    calls: tuple
    divergences: tuple = ()
    start: Optional[int] = None
    ranks_total: int = 0
    seqs_total: int = 0

    @property
    def first_divergence(self) -> Optional[Divergence]:
        return self.divergences[0] if self.divergences else None


@dataclass(frozen=True)
class Alignment:
    """Every rank's collectives aligned by process group and sequence id,
    with the divergences the doctor found (``findings``: exactly what
    :func:`analyze_dumps` returns for the same dumps)."""

    groups: tuple
    findings: tuple
    ranks: tuple
    sources: tuple

    @property
    def first_divergence(self) -> Optional[tuple]:
        """(group, divergence) that the doctor ranks first, or None."""
        found = [(d.finding, i, g, d) for i, g in enumerate(self.groups) for d in g.divergences]
        return min(found, key=lambda t: t[:2])[2:] if found else None

    def to_dict(self) -> dict:
        from dataclasses import asdict

        out = asdict(self)
        out["findings"] = [f.to_dict() for f in self.findings]
        return out


def _call(entries: list, seq: int) -> AlignedCall:
    ops = [e.op for e in entries if e.op != "coalesced"] or [e.op for e in entries]
    first = entries[0]
    return AlignedCall(
        rank=first.rank,
        seq=seq,
        op=" + ".join(ops),
        in_sizes=tuple(s for e in entries for s in e.in_sizes),
        out_sizes=tuple(s for e in entries for s in e.out_sizes),
        dtypes=tuple(sorted({d for e in entries for d in e.dtypes})),
        state=first.state,
        time_ns=first.t_ns,
        source=first.source,
        text=_fmt_group(entries, seq),
    )


def _window(seqs: list, focus: Optional[int], most: int) -> list:
    """At most ``most`` of the sorted ``seqs``: those before and a few after
    ``focus`` (the first divergence), else the last ones."""
    if len(seqs) <= most:
        return seqs
    if focus is None:
        return seqs[-most:]
    i = bisect_left(seqs, focus)
    end = min(len(seqs), i + 1 + min(8, most // 4))
    return seqs[max(0, end - most) : end]


def alignment(dumps: list, max_seqs: int = MAX_ALIGNED_SEQS, max_ranks: int = MAX_ALIGNED_RANKS) -> Alignment:
    """Ranks x sequence ids per process group, from the same dumps and the
    same analysis as :func:`analyze_dumps`: each divergence is where one of
    its findings was found (its rule, title and blamed ranks), never a second
    reading. ``dumps`` as for ``analyze_dumps``. Only collectives are aligned
    (send/recv pairing is :mod:`ncclnb.doctor.pairing`). Bounded: at most
    ``max_seqs`` sequence ids and ``max_ranks`` ranks per group are kept (the
    totals say what was cut). Never raises on odd input."""
    items = _items(dumps) or []
    loaded, notes = _load(items)
    loaded = _ordered(loaded)
    if not loaded:
        return Alignment(groups=(), findings=tuple(notes), ranks=(), sources=())
    findings, where, members, desc = _analyse(loaded)
    findings = _sorted_findings(findings + notes)
    coll = _collectives(loaded)
    divergences: dict = defaultdict(list)
    for index, f in enumerate(findings):
        if id(f) in where:
            pg, seq, kind = where[id(f)]
            divergences[pg].append(
                Divergence(
                    seq=seq, kind=kind, rule=f.rule, category=f.category, title=f.title, ranks=tuple(f.ranks), finding=index
                )
            )
    groups = []
    for pg in sorted(coll, key=lambda p: (not desc.get(p) == "default_pg", p)):
        per_rank = coll[pg]
        all_ranks = sorted(r for r in members.get(pg, ()) if r in loaded)
        divs = tuple(sorted(divergences.get(pg, ()), key=lambda d: d.seq))
        blamed = {r for d in divs for r in d.ranks}
        ranks = (
            all_ranks
            if len(all_ranks) <= max_ranks
            else sorted(sorted(all_ranks, key=lambda r: (r not in blamed, r))[:max_ranks])
        )
        start = _aligned_start(loaded, per_rank, all_ranks)
        all_seqs = sorted({s for r in all_ranks for s in per_rank.get(r, {})})
        seqs = _window(all_seqs, divs[0].seq if divs else None, max_seqs)
        kept = set(seqs)
        calls = tuple(_call(per_rank[r][s], s) for s in seqs for r in ranks if s in per_rank.get(r, {}) and s in kept)
        groups.append(
            GroupAlignment(
                pg=pg,
                desc=desc.get(pg, ""),
                ranks=tuple(ranks),
                seqs=tuple(seqs),
                calls=calls,
                divergences=divs,
                start=None if start == -math.inf else int(start),
                ranks_total=len(all_ranks),
                seqs_total=len(all_seqs),
            )
        )
    return Alignment(
        groups=tuple(groups), findings=tuple(findings), ranks=tuple(loaded), sources=tuple(d.source for d in loaded.values())
    )
