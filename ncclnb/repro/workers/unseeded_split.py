"""Seed 003: a dataset split without a seed, a desync at "save".

Each rank splits the same dataset into train and test with its own random
state (``train_test_split`` with no seed; ``torch.manual_seed`` does not seed
numpy), then drops over-long examples. The splits differ, so the ranks get
different numbers of batches. The rank with one batch more issues one
all_reduce more while the others have moved on to the all_gather that
gathers the weights for saving: the ranks wait for each other in different
collectives until the watchdog (600 s on a cluster, a few seconds here).

An unseeded RNG draws from the OS, so each process gets its own state; to
make the run repeatable this program gives rank r the state ``1000 + r``
(what differs is that it differs, not which numbers come out).

Knobs: ``seeded`` (the fix: one seed for every rank), ``guard`` (compare the
ranks' step counts with ``ncclnb.guard.assert_same`` at step 0), ``examples``,
``batch``.
"""

from __future__ import annotations

import random

from ncclnb.repro.job import Job

MAX_LEN = 48  # the preprocessing drops examples longer than this


def make_dataset(n: int) -> list:
    """The same examples on every rank: (id, length in tokens)."""
    rng = random.Random(20250513)
    return [(i, rng.randint(8, 64)) for i in range(n)]


def train_test_split(data: list, test_size: int, seed=None, entropy: int = 0) -> tuple[list, list]:
    """Like ``datasets.Dataset.train_test_split``: a random permutation, the
    first ``test_size`` for test. ``seed=None`` is an unseeded generator."""
    rng = random.Random(seed if seed is not None else entropy)
    order = list(range(len(data)))
    rng.shuffle(order)
    return [data[i] for i in order[test_size:]], [data[i] for i in order[:test_size]]


def rank_batches(job: Job, seeded: bool, n: int, batch: int) -> tuple[list, int]:
    data = make_dataset(n)
    train, _test = train_test_split(data, test_size=n // 10, seed=1234 if seeded else None, entropy=1000 + job.rank)
    train = [ex for ex in train if ex[1] <= MAX_LEN]
    shard = train[job.rank :: job.world_size]
    return shard, -(-len(shard) // batch)


def train(job: Job) -> None:
    import torch
    import torch.distributed as dist

    seeded = bool(job.arg("seeded", False))
    shard, batches = rank_batches(job, seeded, job.arg("examples", 283), job.arg("batch", 8))
    job.say(
        f"rank {job.rank}: {len(shard)} training examples, {batches} batches "
        f"(split {'with seed 1234' if seeded else 'without a seed'})"
    )
    job.init_process_group()
    if job.arg("guard", False):
        from ncclnb.guard import assert_same

        assert_same(steps_per_epoch=batches)  # every rank must run the same number of collectives
    torch.manual_seed(0)
    model = torch.nn.Linear(16, 16).to(job.device)
    for step in range(batches):
        loss = model(torch.randn(4, 16, device=job.device)).pow(2).mean()
        loss.backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
    job.say(f"rank {job.rank}: training done after {batches} steps; saving the model")
    flat = torch.cat([p.detach().flatten() for p in model.parameters()])
    gathered = torch.zeros(flat.numel() * job.world_size, device=job.device)
    dist.all_gather_into_tensor(gathered, flat)  # what FSDP's full state dict does (_ALLGATHER_BASE)
    job.say(f"rank {job.rank}: saved")


if __name__ == "__main__":
    Job.main(train)
