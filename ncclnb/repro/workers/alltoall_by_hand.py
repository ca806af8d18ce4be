"""Seed 004: a hand-written all-to-all whose sends and receives do not pair.

Each rank routes tokens to the others (as a mixture-of-experts layer does)
and exchanges them with ``isend`` / ``irecv``. The broken version skips the
send when it has no tokens for a peer, but every receiver still posts a
receive from every peer: rank 1 routes nothing to rank 2, so rank 2's
receive from rank 1 has no partner and waits, while the other ranks finish
the exchange and wait for rank 2 in the next collective, until the timeout.

Knobs: ``method``: "unpaired" (broken), "batch_isend_irecv" (exchange the
counts first, then post only the pairs both sides agree on) or
"all_to_all_single" (the library's own collective does the pairing);
``guard``: compare the send/receive plans with ``ncclnb.guard.check_p2p_plan``
before anything is posted; ``leave_before_plan``: the rank that exits right
after init, before the plans are compared.

Before posting its isend/irecv each rank prints its plan as one line
(``ncclnb.guard.p2p.log_p2p_plan``: peer, shape and dtype of every send and
receive): gloo's flight recorder does not record isend/irecv, so these lines
are what ``ncclnb doctor`` and ``ncclnb.show_pairing`` pair after the hang.
"""

from __future__ import annotations

from ncclnb.guard.p2p import log_p2p_plan
from ncclnb.repro.job import Job

HIDDEN = 8


def routed_counts(world: int) -> list:
    """counts[src][dst]: tokens rank src sends to rank dst (fixed routing; rank 1 sends nothing to rank 2)."""
    counts = [[0 if src == dst else 2 + (src + dst) % 3 for dst in range(world)] for src in range(world)]
    if world > 2:
        counts[1][2] = 0
    return counts


def train(job: Job) -> None:
    import torch
    import torch.distributed as dist

    method = job.arg("method", "unpaired")
    world, me = job.world_size, job.rank
    counts = routed_counts(world)
    job.init_process_group()
    if job.arg("leave_before_plan") == me:  # a rank that dies between init and the exchange (tests)
        job.say(f"rank {me}: leaving before the exchange")
        job.leave(3)
    send = {p: torch.full((counts[me][p], HIDDEN), float(me), device=job.device) for p in range(world) if p != me}
    if method == "unpaired":
        # what the exchange below posts: a send only where there are tokens, a receive from every peer
        log_p2p_plan(
            sends={p: (counts[me][p], HIDDEN) for p in send if counts[me][p]},
            recvs={p: (counts[p][me] or 1, HIDDEN) for p in send},
            dtype="float32",
            rank=me,
        )
    if job.arg("guard", False):
        from ncclnb.guard import check_p2p_plan

        # the plan of exactly what the exchange below posts: the unpaired one receives from every
        # peer; the paired one only where the peer's count says a send will come
        paired = method != "unpaired"
        check_p2p_plan(
            sends={p: (counts[me][p], HIDDEN) for p in send if counts[me][p]},
            recvs={p: (counts[p][me] or 1, HIDDEN) for p in send if counts[p][me] or not paired},
        )
    if method == "all_to_all_single":
        inp = torch.cat([send.get(p, torch.zeros(0, HIDDEN, device=job.device)) for p in range(world)])
        in_splits = [counts[me][p] if p != me else 0 for p in range(world)]
        out_splits = [counts[p][me] if p != me else 0 for p in range(world)]
        out = torch.zeros(sum(out_splits), HIDDEN, device=job.device)
        dist.all_to_all_single(out, inp, output_split_sizes=out_splits, input_split_sizes=in_splits)
        received = sum(out_splits)
    elif method == "batch_isend_irecv":
        # exchange the counts first, so each receive is posted only where a send will come
        mine = torch.tensor([counts[me][p] for p in range(world)], dtype=torch.int64, device=job.device)
        theirs = torch.zeros_like(mine)
        dist.all_to_all_single(theirs, mine)
        log_p2p_plan(
            sends={p: (counts[me][p], HIDDEN) for p in send if counts[me][p]},
            recvs={p: (int(theirs[p]), HIDDEN) for p in send if int(theirs[p])},
            dtype="float32",
            rank=me,
        )
        ops, bufs = [], []
        for p in range(world):
            if p != me and counts[me][p]:
                ops.append(dist.P2POp(dist.isend, send[p], p))
            if p != me and int(theirs[p]):
                bufs.append(torch.zeros(int(theirs[p]), HIDDEN, device=job.device))
                ops.append(dist.P2POp(dist.irecv, bufs[-1], p))
        for req in dist.batch_isend_irecv(ops):
            req.wait()
        received = sum(b.shape[0] for b in bufs)
    else:
        reqs, bufs = [], []
        for p in range(world):
            if p == me:
                continue
            if counts[me][p]:  # the bug: no send when there is nothing to send ...
                reqs.append(dist.isend(send[p], dst=p))
            bufs.append(torch.zeros(counts[p][me] or 1, HIDDEN, device=job.device))
            reqs.append(dist.irecv(bufs[-1], src=p))  # ... but a receive from every peer
        for req in reqs:
            req.wait()
        received = sum(b.shape[0] for b in bufs)
    job.say(f"rank {me}: all-to-all done, received {received} tokens")
    loss = torch.ones(1, device=job.device)
    dist.all_reduce(loss)
    job.say(f"rank {me}: step done")


if __name__ == "__main__":
    Job.main(train)
