"""Seed 002: two nodes that run different NCCL versions.

A version mismatch cannot be produced honestly on one machine without GPUs,
so each torchrun "node" takes its facts from a recorded snapshot (the
``NCCLNB_REPRO_FACTS`` variable names it: ``report-name#node-index``). The
ranks run a real gloo job, report their node's facts and their place in the
job over gloo (JSON bytes in tensors), and rank 0 writes the cluster report
that ncclnb's version check reads. On a cluster the same facts make NCCL fail
at init (``ncclSocketInit: connecting to address with family 0 ...``,
``internal error``).

Knob ``guard``: right after init, ``ncclnb.guard.compare_across_ranks`` with
this node's recorded versions (``versions=``): it stops every rank of both
nodes, naming the versions each side runs.
"""

from __future__ import annotations

import dataclasses
import os

from ncclnb.repro.job import Job
from ncclnb.repro.workers._facts import gather_json, write_report
from ncclnb.repro.workers._train import train_steps


def node_facts():
    from ncclnb.recorded import load_facts

    spec, _, host = os.environ.get("NCCLNB_REPRO_FACTS", "seed002-version-mismatch#1").partition("@")
    name, _, index = spec.partition("#")
    facts = load_facts(name)
    snap = facts.snapshots[int(index or 0)] if hasattr(facts, "snapshots") else facts
    # "...@host": the same recorded facts installed on another node
    return dataclasses.replace(snap, host=dataclasses.replace(snap.host, hostname=host)) if host else snap


def train(job: Job) -> None:
    snap = node_facts()
    v = snap.versions
    job.say(
        f"rank {job.rank} on node {job.node_rank} ({snap.hostname}, recorded facts): torch {v.torch}, "
        f"NCCL {v.nccl_torch or v.nccl_loaded}, CUDA {v.torch_cuda}"
    )
    job.init_process_group()
    if job.arg("guard", False):
        from ncclnb.guard import compare_across_ranks

        compare_across_ranks(versions={"torch": v.torch, "cuda": v.torch_cuda, "nccl": v.nccl_torch or v.nccl_loaded})
    entry = dict(
        rank=job.rank,
        host=snap.hostname,
        local_rank=job.local_rank,
        world_size=job.world_size,
        node_rank=job.node_rank,
        pid=os.getpid(),
        cuda_index=job.local_rank,
    )
    entries = gather_json(job, {"entry": entry, "snapshot": snap.to_dict() if job.local_rank == 0 else None})
    if job.rank == 0:
        from ncclnb.model import NodeSnapshot

        snapshots = [NodeSnapshot.from_dict(e["snapshot"]) for e in entries if e["snapshot"]]
        write_report(
            job,
            snapshots,
            [e["entry"] for e in entries],
            "Written by the seed-002 reproduction: live ranks of a two-node torchrun job on loopback; "
            "each node's facts are a recorded snapshot (NCCLNB_REPRO_FACTS).",
        )
    train_steps(job, steps=job.arg("steps", 5))


if __name__ == "__main__":
    Job.main(train)
