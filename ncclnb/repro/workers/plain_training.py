"""A plain data-parallel job: join the group, train a few steps, leave.

The scenarios that break the *launch* (ranks that never start, a store host
that is missing, two processes told the same rank) run this program
unchanged: what goes wrong is around it, not in it.

Knobs: ``steps``.
"""
from __future__ import annotations

from ncclnb.repro.job import Job
from ncclnb.repro.workers._train import train_steps


def train(job: Job) -> None:
    job.say(f"rank {job.rank} of {job.world_size}: joining {job.backend} group at "
            f"{__import__('os').environ.get('MASTER_ADDR')}:{__import__('os').environ.get('MASTER_PORT')}")
    job.init_process_group()
    train_steps(job, steps=job.arg("steps", 10))


if __name__ == "__main__":
    Job.main(train)
