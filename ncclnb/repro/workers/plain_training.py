"""A plain data-parallel job: join the group, train a few steps, leave.

The scenarios that break the *launch* (ranks that never start, a store host
that is missing, two processes told the same rank) run this program
unchanged: what goes wrong is around it, not in it.

Knobs: ``steps``; ``preflight`` (run ``ncclnb.guard.preflight`` before
joining, with ``preflight_deadline_s``); ``ncclnb_init`` (join with the
drop-in ``ncclnb.guard.init_process_group``: launch check, then versions and
NCCL_* settings compared across ranks).
"""

from __future__ import annotations

from ncclnb.repro.job import Job
from ncclnb.repro.workers._train import train_steps


def train(job: Job) -> None:
    job.say(
        f"rank {job.rank} of {job.world_size}: joining {job.backend} group at "
        f"{__import__('os').environ.get('MASTER_ADDR')}:{__import__('os').environ.get('MASTER_PORT')}"
    )
    if job.arg("preflight", False):
        from ncclnb.guard import preflight

        preflight(backend=job.backend, deadline_s=job.arg("preflight_deadline_s", 2.0))
    if job.arg("ncclnb_init", False):
        from ncclnb.guard import init_process_group

        init_process_group(job.backend, timeout=job.timeout, preflight_deadline_s=2.0)
    else:
        job.init_process_group()
    train_steps(job, steps=job.arg("steps", 10))


if __name__ == "__main__":
    Job.main(train)
