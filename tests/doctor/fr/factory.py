"""Synthetic NCCL-style flight-recorder dumps, for what gloo cannot record.

gloo writes no send/recv entries and a malformed ``pg_config``, so point to
point pairing and sub-group membership are tested on dumps built here. The
layout follows what ``ProcessGroupNCCL`` writes through the flight recorder in
torch 2.13 (and what ``torch/distributed/flight_recorder/components`` reads):

- ``pg_config``: ``{pg_name: {"name", "desc", "ranks": "[0, 1, ...]"}}``,
  ranks as text, global ranks;
- one entry per op with ``record_id`` (per-process counter across groups),
  ``pg_id``, ``process_group`` = [name, desc], ``collective_seq_id`` (per
  group, bumped by collectives), ``p2p_seq_id`` (per group, bumped by p2p ops
  and by a batch of them), ``op_id`` (bumped by every op, also inside a
  batch), ``profiling_name`` ``nccl:<op>`` or ``nccl:send a->b`` /
  ``nccl:recv b<-a`` with *group* ranks, sizes, dtypes, ``state``,
  timestamps, ``is_p2p``, ``frames``;
- a batch (``batch_isend_irecv``, coalesced collectives) shares one sequence
  id and ends with an ``nccl:coalesced`` entry.
"""

from __future__ import annotations

import json
from typing import Iterable, Optional, Sequence

T0_NS = 1_700_000_000_000_000_000


class RankTrace:
    """The flight recorder of one rank, filled op by op."""

    def __init__(
        self,
        rank: int,
        groups: Optional[dict] = None,
        *,
        nccl_version: str = "2.21.5",
        timeout_ms: int = 600_000,
        t0_ns: int = T0_NS,
    ):
        self.rank = rank
        # pg name -> (desc, global ranks); "0" is the default group
        self.groups = groups or {"0": ("default_pg", (0, 1, 2, 3))}
        self.nccl_version = nccl_version
        self.timeout_ms = timeout_ms
        self.now_ns = t0_ns
        self.entries: list[dict] = []
        self._coll_seq = {pg: 0 for pg in self.groups}
        self._p2p_seq = {pg: 0 for pg in self.groups}
        self._op_id = {pg: 0 for pg in self.groups}
        self.first_record_id = 0

    def local(self, pg: str) -> int:
        return self.groups[pg][1].index(self.rank)

    def wait(self, seconds: float) -> RankTrace:
        """Let time pass on this rank before its next op."""
        self.now_ns += int(seconds * 1e9)
        return self

    def _entry(self, pg: str, name: str, in_sizes, out_sizes, dtype: str, state: str, is_p2p: bool) -> dict:
        self._op_id[pg] += 1
        self.now_ns += 1_000_000
        desc = self.groups[pg][0]
        entry = {
            "record_id": self.first_record_id + len(self.entries),
            "pg_id": list(self.groups).index(pg),
            "process_group": [pg, desc],
            "collective_seq_id": self._coll_seq[pg],
            "p2p_seq_id": self._p2p_seq[pg],
            "op_id": self._op_id[pg],
            "profiling_name": f"nccl:{name}",
            "time_created_ns": self.now_ns,
            "input_sizes": [list(s) for s in in_sizes],
            "input_dtypes": [dtype] * len(in_sizes),
            "output_sizes": [list(s) for s in out_sizes],
            "output_dtypes": [dtype] * len(out_sizes),
            "state": state,
            "time_discovered_started_ns": self.now_ns + 1000 if state != "scheduled" else None,
            "time_discovered_completed_ns": self.now_ns + 2000 if state == "completed" else None,
            "retired": state == "completed",
            "timeout_ms": self.timeout_ms,
            "is_p2p": is_p2p,
            "thread_id": "140000000000000",
            "thread_name": "python",
            "frames": [{"name": "train_step", "filename": "train.py", "line": 42}],
        }
        self.entries.append(entry)
        return entry

    def collective(
        self,
        op: str,
        sizes: Sequence[Sequence[int]] = ((1024,),),
        *,
        out_sizes: Optional[Sequence[Sequence[int]]] = None,
        dtype: str = "Float",
        pg: str = "0",
        state: str = "completed",
    ) -> RankTrace:
        """One collective on group ``pg`` (bumps its collective_seq_id)."""
        self._coll_seq[pg] += 1
        self._entry(pg, op, sizes, sizes if out_sizes is None else out_sizes, dtype, state, False)
        return self

    def coalesced(self, ops: Iterable[tuple], *, pg: str = "0", state: str = "completed") -> RankTrace:
        """Several collectives in one coalescing block: ``ops`` of (op, sizes)."""
        self._coll_seq[pg] += 1
        for op, sizes in ops:
            self._entry(pg, op, sizes, sizes, "Float", state, False)
        self._entry(pg, "coalesced", [], [], "Float", state, False)
        return self

    def _p2p(self, kind: str, peer: int, sizes, dtype: str, pg: str, state: str) -> None:
        me = self.local(pg)
        name = f"send {me}->{peer}" if kind == "send" else f"recv {me}<-{peer}"
        # NCCL records the one tensor of a send or a recv as both input and output.
        self._entry(pg, name, sizes, sizes, dtype, state, True)

    def send(self, peer: int, sizes=((1024,),), *, dtype: str = "Float", pg: str = "0", state: str = "completed") -> RankTrace:
        """A blocking send to group rank ``peer``."""
        self._p2p_seq[pg] += 1
        self._p2p("send", peer, sizes, dtype, pg, state)
        return self

    def recv(self, peer: int, sizes=((1024,),), *, dtype: str = "Float", pg: str = "0", state: str = "completed") -> RankTrace:
        """A blocking receive from group rank ``peer``."""
        self._p2p_seq[pg] += 1
        self._p2p("recv", peer, sizes, dtype, pg, state)
        return self

    def batch(self, ops: Iterable[tuple], *, pg: str = "0", state: str = "completed") -> RankTrace:
        """``batch_isend_irecv``: ops of ("send"|"recv", peer, sizes), one p2p seq id."""
        self._p2p_seq[pg] += 1
        for kind, peer, sizes in ops:
            self._p2p(kind, peer, sizes, "Float", pg, state)
        self._entry(pg, "coalesced", [], [], "Float", state, True)
        return self

    def dump(self) -> dict:
        """The dump as ``_dump_fr_trace_json`` would return it, parsed."""
        return {
            "version": "2.10",
            "comm_lib_version": self.nccl_version,
            "pg_config": {
                pg: {"name": pg, "desc": desc, "ranks": json.dumps(list(ranks))} for pg, (desc, ranks) in self.groups.items()
            },
            "pg_status": {
                pg: {
                    "last_enqueued_collective": str(self._coll_seq[pg]),
                    "last_started_collective": str(self._coll_seq[pg]),
                    "last_completed_collective": str(self._coll_seq[pg]),
                }
                for pg in self.groups
            },
            "nccl_comm_state": {},
            "entries": self.entries,
        }


def world(n: int, groups: Optional[dict] = None, **kw) -> list[RankTrace]:
    """``n`` rank traces sharing the same groups (default: one group of all n)."""
    groups = groups or {"0": ("default_pg", tuple(range(n)))}
    return [RankTrace(r, groups, **kw) for r in range(n)]


def dumps(traces: Iterable[RankTrace], prefix: str = "nccl_trace_rank") -> list[tuple[str, dict]]:
    """(file name, dump) pairs, named the way per-rank dump files are."""
    return [(f"{prefix}{t.rank}.json", t.dump()) for t in traces]


def all_to_all_p2p(traces: Sequence[RankTrace], numel: int = 256, *, peer_of=None, batched: bool = True) -> None:
    """A hand-written all-to-all: every rank sends to and receives from every
    other one. ``peer_of(rank, step, n) -> (send_to, recv_from)`` lets a test
    break the peer arithmetic on some rank, as in seed 004."""
    n = len(traces)
    for t in traces:
        ops = []
        for step in range(1, n):
            to, frm = ((t.rank + step) % n, (t.rank - step) % n) if peer_of is None else peer_of(t.rank, step, n)
            ops.append(("send", to, ((numel,),)))
            ops.append(("recv", frm, ((numel,),)))
        if batched:
            t.batch(ops)
        else:
            for kind, peer, sizes in ops:
                (t.send if kind == "send" else t.recv)(peer, sizes)
