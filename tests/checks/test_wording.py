"""Text a user reads speaks of the user's job: the numbers of the job being
checked (never a bundled seed's), the GPUs actually flagged, and counts as a
reader says them ("1 rank", "4 ranks"), never "rank(s)"."""

from __future__ import annotations

import dataclasses
import re

from ncclnb.checks import check
from ncclnb.model import ClusterReport, RankEntry
from ncclnb.recorded import load

from checks_machines import machine, with_env

ARTEFACTS = re.compile(r"\(s\)|\bseed \d{3}\b|\bpid \?|\bbus \?")


def _texts(findings):
    for f in findings:
        yield f.title
        yield f.cause
        yield f.fix
        yield from (e.text for e in f.evidence)


def _job(nodes: int, per_node: int, world: int) -> ClusterReport:
    snap = load("l40s-2socket")
    snaps = tuple(dataclasses.replace(snap, host=dataclasses.replace(snap.host, hostname=f"job-node{n}")) for n in range(nodes))
    ranks = tuple(
        RankEntry(rank=n * per_node + i, host=f"job-node{n}", local_rank=i, world_size=world, node_rank=n)
        for n in range(nodes)
        for i in range(per_node)
    )
    return ClusterReport(snapshots=snaps, ranks=ranks, description="a user's job")


def test_world_size_vs_nodes_uses_the_jobs_own_numbers():
    (f,) = [x for x in check(_job(3, 2, 2)) if x.rule == "world_size_vs_nodes"]
    assert f.title == "WORLD_SIZE=2 but 3 nodes x 2 ranks per node = 6"
    assert "3 nodes x 2 ranks per node, WORLD_SIZE must be 6, not 2" in f.cause
    assert "seed" not in f.cause and "8, not 4" not in f.cause
    (f,) = [x for x in check(_job(2, 4, 4)) if x.rule == "world_size_vs_nodes"]
    assert "2 nodes x 4 ranks per node, WORLD_SIZE must be 8, not 4" in f.cause
    one = [x for x in check(_job(2, 1, 1)) if x.rule == "rank_out_of_range"]
    assert one and one[0].title.startswith("1 rank outside the world")


def test_all_gpus_of_the_node_only_when_all_are_flagged():
    (f,) = [x for x in check(machine("a30-nvlink-pairs")) if x.rule == "nic_far_from_gpu"]
    assert f.title == "GPU 0,1 (2 of the node's 4) have no NIC on their own socket"
    assert "all GPUs" not in f.title.lower()
    (f,) = [x for x in check(with_env(machine("a30-nvlink-pairs"), CUDA_VISIBLE_DEVICES="0,1,2")) if x.rule == "nic_far_from_gpu"]
    assert f.title.startswith("GPU 0,1 (2 of the 3 in use, CUDA_VISIBLE_DEVICES=0,1,2)")
    (f,) = [x for x in check(with_env(machine("a30-nvlink-pairs"), CUDA_VISIBLE_DEVICES="0,1")) if x.rule == "nic_far_from_gpu"]
    assert f.title.startswith("All 2 GPUs in use (CUDA_VISIBLE_DEVICES=0,1) have")


def test_no_artefacts_in_the_findings_of_the_bundled_machines_and_reports():
    from ncclnb.recorded import machines

    for name in machines():
        for text in _texts(check(load(name))):
            assert not ARTEFACTS.search(text), (name, text)
    for text in _texts(check(_job(3, 2, 2))):
        assert not ARTEFACTS.search(text), text
