"""``check_p2p_plan``: before a hand-written all-to-all or pipeline exchange
posts its isend/irecv, the ranks compare their plans, so an unpaired send or
receive is named at once instead of hanging until the watchdog (seed 004)."""
from __future__ import annotations

import json
from typing import Mapping, Optional

from ._dist import all_gather_bytes, all_gather_int64, device_for, group_ranks, torch_dist
from ._compare import fmt_ranks
from .errors import GuardError

MAX_SHOWN = 4   # unpaired operations spelled out in the message


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
    me = dist.get_rank()
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
    raise GuardError(f"ncclnb guard: {fmt_ranks(blamed)} {verb} on the point-to-point plan: {shown}",
                     ranks=sorted(blamed), values={"plan": {r: json.dumps(p) for r, p in plans.items()}},
                     check="p2p_plan")
