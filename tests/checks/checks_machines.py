"""Machines for the checks' tests: the bundled recorded machines
(``ncclnb.recorded.load``), and helpers that derive a variant with
``dataclasses.replace`` (a setting, a limit, a version) from one."""

from __future__ import annotations

import dataclasses

from ncclnb.recorded import load
from ncclnb.model import ClusterReport, NodeSnapshot, RankEntry


def machine(name: str) -> NodeSnapshot:
    snap = load(name)
    assert isinstance(snap, NodeSnapshot), name
    return snap


def with_env(snap: NodeSnapshot, **env: str) -> NodeSnapshot:
    return dataclasses.replace(snap, env={**snap.env, **env})


def with_host(snap: NodeSnapshot, **fields) -> NodeSnapshot:
    return dataclasses.replace(snap, host=dataclasses.replace(snap.host, **fields))


def with_versions(snap: NodeSnapshot, **fields) -> NodeSnapshot:
    return dataclasses.replace(snap, versions=dataclasses.replace(snap.versions, **fields))


def renamed(snap: NodeSnapshot, hostname: str) -> NodeSnapshot:
    return with_host(snap, hostname=hostname)


def job(snaps, per_node: int, world_size=None, set_device=True, **overrides) -> ClusterReport:
    """A rank table as torchrun makes it: node i runs ranks i*per_node .. ,
    LOCAL_RANK = cuda index when ``set_device``; ``overrides`` maps a global
    rank to RankEntry fields to change."""
    world = len(snaps) * per_node if world_size is None else world_size
    ranks = []
    for n, s in enumerate(snaps):
        for local in range(per_node):
            r = n * per_node + local
            e = RankEntry(
                rank=r,
                host=s.hostname,
                local_rank=local,
                world_size=world,
                node_rank=n,
                pid=1000 + r,
                cuda_index=local if set_device else None,
            )
            if f"r{r}" in overrides:
                e = dataclasses.replace(e, **overrides[f"r{r}"])
            ranks.append(e)
    return ClusterReport(snapshots=tuple(snaps), ranks=tuple(ranks))


def rules(findings, rule=None, severity=None):
    return [f for f in findings if (rule is None or f.rule == rule) and (severity is None or f.severity == severity)]
