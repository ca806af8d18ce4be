"""Beyond the seeds: one rank that is late, or one rank that dies first.

- ``slow_rank``: rank ``who`` "saves a checkpoint" for longer than the
  process-group timeout while the others go on to the next all_reduce and
  time out waiting for it.
- ``crash``: rank ``who`` fails at step ``at`` (it asks for a tensor no
  machine can hold: a real allocation error), and the others then fail in
  the collective it never joins. The first failure is the cause; the
  timeouts after it are consequences.

Knobs: ``mode`` ("slow_rank", "crash" or "none"), ``who``, ``at``, ``save_s``.
"""

from __future__ import annotations

import time

from ncclnb.repro.job import Job


def train(job: Job) -> None:
    import torch
    import torch.distributed as dist

    mode, who, at = job.arg("mode", "none"), job.arg("who", 0), job.arg("at", 3)
    job.init_process_group()
    model = torch.nn.Linear(16, 16).to(job.device)
    for step in range(job.arg("steps", 6)):
        if step == at and job.rank == who:
            if mode == "crash":
                job.say(f"rank {job.rank}: step {step}: building a batch")
                torch.empty(1 << 60, dtype=torch.uint8)  # fails: no machine has an exabyte
            if mode == "slow_rank":
                save_s = job.arg("save_s", job.timeout_s + 3)
                job.say(f"rank {job.rank}: step {step}: saving a checkpoint ({save_s:g} s)")
                time.sleep(save_s)
                job.say(f"rank {job.rank}: checkpoint saved")
        loss = model(torch.randn(4, 16, device=job.device)).pow(2).mean()
        loss.backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
    job.say(f"rank {job.rank}: done")


if __name__ == "__main__":
    Job.main(train)
