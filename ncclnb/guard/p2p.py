"""``check_p2p_plan``: before a hand-written all-to-all or pipeline exchange
posts its isend/irecv, the ranks compare their plans, so an unpaired send or
receive is named at once instead of hanging until the watchdog (seed 004).

``log_p2p_plan``: each rank prints its plan as one machine-readable line
(``ncclnb guard: p2p plan {...}``: JSON with the rank and, per send and
receive, the peer, shape and dtype; no tensor data, nothing pickled). gloo's
flight recorder does not record isend/irecv, so these lines are what the
doctor (:mod:`ncclnb.doctor.pairing`) pairs after a hang on gloo."""

from __future__ import annotations

import json
import sys
from typing import Iterable, Mapping, Optional, Union

from ._dist import all_gather_bytes, all_gather_int64, device_for, group_ranks, torch_dist
from ._compare import fmt_ranks
from .errors import GuardError

MAX_SHOWN = 4  # unpaired operations spelled out in the message
PLAN_PREFIX = "ncclnb guard: p2p plan "  # what the doctor looks for (the "ncclnb guard:" trigger included)


def _norm_plan(plan: Optional[Mapping], what: str) -> dict:
    """{peer: shape or size} -> {peer: list of dims}."""
    out = {}
    for peer, shape in (plan or {}).items():
        if isinstance(shape, int):
            shape = (shape,)
        try:
            out[int(peer)] = [int(d) for d in shape]
        except (TypeError, ValueError):
            raise ValueError(f"check_p2p_plan: {what}[{peer!r}] must be a size or a shape, got {shape!r}") from None
    return out


def check_p2p_plan(sends: Mapping, recvs: Mapping, group=None) -> None:
    """Check that every send this rank is about to post has a matching receive
    on its peer, and every receive a matching send, with the same shape;
    raise :class:`GuardError` on every rank naming the unpaired operations.

    ``sends`` / ``recvs``: ``{peer global rank: shape (or element count)}``
    of the isend/irecv this rank will post. Call it on every rank at the same
    point, like a collective::

        check_p2p_plan(sends={p: t.shape for p, t in outgoing.items()},
                       recvs={p: (counts[p], hidden) for p in peers})

    Cost: two all_gathers (8 bytes, then the plans as JSON bytes padded to the
    longest plan); nothing is pickled. Raises on every rank, e.g.::

        ncclnb guard: ranks 1,2 disagree on the point-to-point plan: rank 2 posts a receive
        from rank 1 ([2, 8]) that rank 1 never sends
    """
    torch, dist = torch_dist()
    ranks = group_ranks(dist, group)
    if ranks is None:
        return
    plan = {"s": _norm_plan(sends, "sends"), "r": _norm_plan(recvs, "recvs")}
    payload = json.dumps(plan, sort_keys=True).encode("utf-8")
    device = device_for(torch, dist, group)
    lengths = [row[0] for row in all_gather_int64(torch, dist, group, [len(payload)], device, len(ranks))]
    width = max(lengths)
    rows = all_gather_bytes(torch, dist, group, payload.ljust(width, b" "), device, len(ranks))
    plans = {}
    for rank, row, n in zip(ranks, rows, lengths):
        data = json.loads(row[:n].decode("utf-8"))
        plans[rank] = ({int(k): v for k, v in data["s"].items()}, {int(k): v for k, v in data["r"].items()})
    problems, blamed = [], set()
    for src, (src_sends, _) in plans.items():
        for dst, shape in sorted(src_sends.items()):
            got = plans.get(dst, ({}, {}))[1].get(src)
            if got is None:
                problems.append(f"rank {src} sends {shape} to rank {dst}, which posts no receive from it")
                blamed |= {src, dst}
            elif got != shape:
                problems.append(f"rank {src} sends {shape} to rank {dst}, which expects {got}")
                blamed |= {src, dst}
    for dst, (_, dst_recvs) in plans.items():
        for src, shape in sorted(dst_recvs.items()):
            if dst not in plans.get(src, ({}, {}))[0]:
                problems.append(f"rank {dst} posts a receive from rank {src} ({shape}) that rank {src} never sends")
                blamed |= {src, dst}
    if not problems:
        return
    shown = "; ".join(problems[:MAX_SHOWN]) + (f"; and {len(problems) - MAX_SHOWN} more" if len(problems) > MAX_SHOWN else "")
    verb = "disagrees" if len(blamed) == 1 else "disagree"
    raise GuardError(
        f"ncclnb guard: {fmt_ranks(blamed)} {verb} on the point-to-point plan: {shown}",
        ranks=sorted(blamed),
        values={"plan": {r: json.dumps(p) for r, p in plans.items()}},
        check="p2p_plan",
    )


def _plan_ops(plan: Union[Mapping, Iterable, None], what: str, dtype: str) -> list:
    """{peer: shape} or [(peer, shape), ...] (several ops to one peer, in posting
    order) -> [{"peer", "shape", "dtype"}]."""
    items = plan.items() if isinstance(plan, Mapping) else (plan or ())
    out = []
    for item in items:
        try:
            peer, shape = item
        except (TypeError, ValueError):
            raise ValueError(f"log_p2p_plan: {what} must map peers to shapes, got {item!r}") from None
        norm = _norm_plan({peer: shape}, what)
        for p, dims in norm.items():
            out.append({"peer": p, "shape": dims, "dtype": dtype})
    return out


def _dtype_name(dtype) -> str:
    name = str(dtype)
    return name[len("torch.") :] if name.startswith("torch.") else name


def p2p_plan_line(rank: int, sends, recvs, dtype="float32") -> str:
    """The one line :func:`log_p2p_plan` prints: ``ncclnb guard: p2p plan``
    and a JSON object ``{"rank", "sends", "recvs"}``, each op
    ``{"peer", "shape", "dtype"}`` (global ranks). ``sends`` / ``recvs`` as for
    :func:`check_p2p_plan`, or lists of (peer, shape) in posting order."""
    name = _dtype_name(dtype)
    body = {"rank": int(rank), "sends": _plan_ops(sends, "sends", name), "recvs": _plan_ops(recvs, "recvs", name)}
    return PLAN_PREFIX + json.dumps(body, separators=(", ", ": "))


def log_p2p_plan(sends, recvs, dtype="float32", rank: Optional[int] = None, file=None) -> str:
    """Print this rank's point-to-point plan (what it is about to post) as one
    line on stdout (or ``file``) and return it. Call it on every rank before
    the isend/irecv of a hand-written exchange: after a hang, ``ncclnb doctor``
    (and ``ncclnb.show_pairing``) pair the sends and receives from these lines,
    which gloo's flight recorder does not record. ``rank`` defaults to
    ``torch.distributed.get_rank()``. Costs nothing on the wire."""
    if rank is None:
        _, dist = torch_dist()
        rank = dist.get_rank()
    line = p2p_plan_line(rank, sends, recvs, dtype)
    print(line, file=file or sys.stdout, flush=True)
    return line
