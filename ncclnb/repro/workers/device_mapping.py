"""Seed 001: ``CUDA_VISIBLE_DEVICES=6,7,8,9`` and a process that never said
which GPU it uses.

Under ``CUDA_VISIBLE_DEVICES=6,7,8,9`` the process sees four GPUs numbered
0-3 (physical 6-9). A process starts on its device 0; unless it calls
``torch.cuda.set_device(local_rank)`` (or passes ``device_id=`` to
``init_process_group``) every rank puts its tensors on logical GPU 0, the
same physical GPU 6 (NCCL: ``Duplicate GPU detected``), and torch's barrier
guesses a device from the rank (``using GPU 3 to perform barrier as devices
used by this process are currently unknown``).

On NCCL this runs for real. On CPU the mapping is computed by ncclnb's own
``CUDA_VISIBLE_DEVICES`` reading against the recorded seed-001 machine (ten
GPUs; 6,7 on one socket, 8,9 on the other), every rank reports the GPU it
would use over gloo, and rank 0 writes the cluster report the checks read.

Knobs: ``visible`` (the CUDA_VISIBLE_DEVICES value), ``set_device``, ``machine``,
``guard`` (right after init, ``ncclnb.guard.check_devices``: on gloo with the
physical GPU this rank would use on the recorded machine, on NCCL with the
GPU it really uses).
"""

from __future__ import annotations

import dataclasses
import os

from ncclnb.model.derive import split_visible
from ncclnb.repro.job import Job
from ncclnb.repro.workers._facts import gather_json, write_report
from ncclnb.repro.workers._train import train_steps


def train(job: Job) -> None:
    from ncclnb.recorded import load_facts

    visible = job.arg("visible", "6,7,8,9")
    set_device = bool(job.arg("set_device", False))
    machine = load_facts(job.arg("machine", "seed001-10x-pcie"))
    machine = dataclasses.replace(machine, env={**machine.env, "CUDA_VISIBLE_DEVICES": visible})
    physical = list(split_visible(visible) or ())  # entries as CUDA reads them (model.derive)
    if job.backend == "nccl":
        import torch

        if set_device:
            torch.cuda.set_device(job.local_rank)
        logical = torch.cuda.current_device()
    else:
        logical = job.local_rank if set_device else 0  # CUDA's current device until set_device
    job.device = f"cuda:{logical}" if job.backend == "nccl" else "cpu"
    gpu = physical[logical] if logical < len(physical) else "?"
    guess = job.rank % max(1, len(physical))  # ProcessGroupNCCL's barrier guess with no device known
    job.say(
        f"rank {job.rank} (LOCAL_RANK {job.local_rank}) under CUDA_VISIBLE_DEVICES={visible}: "
        f"tensors on cuda:{logical} = physical GPU {gpu}"
        + (
            ""
            if set_device
            else f" (torch.cuda.set_device was never called; barrier() would guess cuda:{guess} = physical GPU {physical[guess]})"
        )
    )
    job.init_process_group()
    if job.arg("guard", False):
        from ncclnb.checks._facts import NodeFacts
        from ncclnb.guard import check_devices

        if job.backend == "nccl":
            check_devices()  # the GPU this process really uses
        else:  # the recorded machine's GPU behind cuda:<logical>, as ncclnb reads CUDA_VISIBLE_DEVICES
            seen = NodeFacts(machine).visible()
            gpu_facts = seen[logical] if logical < len(seen) else None
            check_devices(
                device={
                    "host": machine.hostname,
                    "logical": logical,
                    "index": gpu_facts.index if gpu_facts else gpu,
                    "uuid": gpu_facts.uuid if gpu_facts else None,
                    "bus_id": gpu_facts.pci_bus_id if gpu_facts else None,
                }
            )
    entry = dict(
        rank=job.rank,
        host=machine.hostname,
        local_rank=job.local_rank,
        world_size=job.world_size,
        node_rank=job.node_rank,
        pid=os.getpid(),
        cuda_index=logical,
    )
    entries = gather_json(job, entry)
    if job.rank == 0:
        write_report(
            job,
            [machine],
            entries,
            "Written by the seed-001 reproduction: the ranks' devices as each "
            "rank reported them; the node is the recorded seed001-10x-pcie machine.",
        )
    train_steps(job, steps=job.arg("steps", 5))


if __name__ == "__main__":
    Job.main(train)
