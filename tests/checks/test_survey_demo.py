"""The bundled survey demo: `ncclnb check` names every problem its
description says was planted, each blaming the ranks and hosts it was planted
on, and the findings stored in it are what the checks say now."""

from __future__ import annotations

import json

import ncclnb
from ncclnb.model import ClusterReport


def _by_rule(found: list) -> dict:
    out: dict = {}
    for f in found:
        out.setdefault(f["rule"], []).append(f)
    return out


def test_check_names_every_planted_problem(cli):
    proc = cli("check", "--json", "survey-demo")
    assert proc.returncode == 0, proc.stderr
    found = _by_rule(json.loads(proc.stdout)["findings"])

    nccl = [f for f in found["versions_differ"] if f["title"].startswith("NCCL (used by torch)")]
    assert len(nccl) == 1 and nccl[0]["severity"] == "error"  # (1) seed 002
    assert nccl[0]["hosts"] == ["demo-node2"] and nccl[0]["ranks"] == list(range(16, 24))
    assert "2.18.1" in nccl[0]["title"] and "2.21.5" in nccl[0]["title"]

    beyond = found["rank_out_of_range"]  # (2) seed 000
    assert [(f["ranks"], f["hosts"]) for f in beyond] == [([32], ["demo-node3"])]

    device = [f for f in found["local_rank_device"] if "cuda:LOCAL_RANK" in f["title"]]
    assert [(f["ranks"], f["hosts"]) for f in device] == [([11, 12], ["demo-node1"])]  # (3) seed 001

    numa = found["rank_affinity_numa"]  # (3) and (4)
    assert [(f["severity"], f["ranks"]) for f in numa] == [("warning", [5, 11, 12])]
    assert numa[0]["hosts"] == ["demo-node0", "demo-node1"]

    far = found["rank_nic_far"]  # (5)
    assert [(f["ranks"], f["hosts"]) for f in far] == [([28, 29, 30, 31], ["demo-node3"])]

    slow = found["link_slow_pair"]  # (6)
    assert len(slow) == 1 and slow[0]["ranks"] == [8, 16] and "demo-node1" in slow[0]["title"]
    assert "demo-node2" in slow[0]["title"]
    assert len(found["link_busbw_low"]) == 1

    text = cli("check", "survey-demo").stdout  # the same, as a person reads it
    for words in (
        "2.18.1 vs 2.21.5",
        "RANK 32 >= WORLD_SIZE",
        "RANK 11 LOCAL_RANK 3 uses cuda:4",
        "RANK 5 on GPU5 (NUMA 7",
        "RANK 28 on GPU4 (NUMA 7) uses mlx5_4 (SYS)",
        "rank 8 (demo-node1) -> rank 16",
    ):
        assert words in text, words


def test_demo_is_a_survey_report_of_the_recorded_dgx_a100():
    demo = ncclnb.load("survey-demo")
    assert isinstance(demo, ClusterReport) and len(demo.snapshots) == 4 and len(demo.ranks) == 33
    dgx = ncclnb.load("dgx-a100")
    for snap in demo.snapshots:  # the recorded topology, unchanged
        assert snap.links.gpu_gpu == dgx.links.gpu_gpu and snap.links.gpu_nic == dgx.links.gpu_nic
        assert [g.numa_node for g in snap.gpus] == [g.numa_node for g in dgx.gpus]
    placed = [r for r in demo.ranks if r.cuda_index is not None]
    assert all(r.bus_id and r.nic and isinstance(r.numa_node, int) for r in placed) and len(placed) == 32
    (link,) = demo.links
    assert (link.backend, link.world_size, link.nodes) == ("nccl", 32, 4) and len(link.pairs) == 4
    assert "constructed, not measured" in demo.description
    # the stored findings are today's: what the survey would have written
    assert list(demo.findings) == ncclnb.check(demo)
