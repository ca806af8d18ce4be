"""Seed 000: two nodes of 4 ranks, and a world size that says 4.

PyTorch Lightning computes the world size as ``num_nodes x devices``; left at
``num_nodes=1`` on a two-node launch, node 1's ranks 4..7 ask for a place in
a group of 4 (gloo: ``rank < size. 7 vs 4``; NCCL: ``Invalid rank requested :
7/4``). The environment classes below do what Lightning's do, and the fix is
the seed's own ``CustomEnvironment``, which reads what the launcher says.

Knobs: ``environment`` ("lightning" or "custom"), ``num_nodes``, ``preflight``
(run ``ncclnb.guard.preflight`` with the rank and world size the environment
computed, before joining).
"""

from __future__ import annotations

import os

from ncclnb.repro.job import Job
from ncclnb.repro.workers._train import train_steps


class LightningLikeEnvironment:
    """How Lightning's launcher numbers ranks: from the node rank, the local
    rank and *its own* idea of the job's size (``num_nodes x devices``)."""

    def __init__(self, num_nodes: int, devices: int):
        self.num_nodes, self.devices = num_nodes, devices

    def world_size(self) -> int:
        return self.num_nodes * self.devices

    def global_rank(self) -> int:
        return self.node_rank() * self.devices + self.local_rank()

    def node_rank(self) -> int:
        return int(os.environ.get("NODE_RANK", os.environ.get("GROUP_RANK", "0")))

    def local_rank(self) -> int:
        return int(os.environ.get("LOCAL_RANK", "0"))


class CustomEnvironment:
    """The seed's fix: every number comes from what the launcher exported."""

    def global_rank(self) -> int:
        return int(os.getenv("RANK", 0))

    def world_size(self) -> int:
        return int(os.getenv("WORLD_SIZE", 1))

    def node_rank(self) -> int:
        return int(os.getenv("NODE_RANK", os.getenv("GROUP_RANK", "0")))

    def local_rank(self) -> int:
        return int(os.getenv("LOCAL_RANK", "0"))


def train(job: Job) -> None:
    if job.arg("environment", "lightning") == "custom":
        env = CustomEnvironment()
    else:
        env = LightningLikeEnvironment(num_nodes=job.arg("num_nodes", 1), devices=job.local_world_size)
    rank, world = env.global_rank(), env.world_size()
    # Lightning's own banner, so the log reads as the seed's did
    job.say(f"Initializing distributed: GLOBAL_RANK: {rank}, MEMBER: {rank + 1}/{world}")
    if job.arg("preflight", False):
        from ncclnb.guard import preflight

        preflight(rank=rank, world_size=world, backend=job.backend, deadline_s=2.0)
    job.init_process_group(rank=rank, world_size=world)
    train_steps(job, steps=job.arg("steps", 20))


if __name__ == "__main__":
    Job.main(train)
