"""The "is this normal?" table (ncclnb.model.bandwidth): its rows are honest
about their sources, and reference_for picks the row a person would."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ncclnb.model import Gpu, Host, LinkTest, Nic, NodeSnapshot
from ncclnb.model.bandwidth import REFERENCES, gpu_family, match_reference, reference_for, wanted_algo

REPO = Path(__file__).resolve().parents[1]


def _node(host: str, gpu: str = "NVIDIA H100 80GB HBM3", count: int = 8, nics=()) -> NodeSnapshot:
    return NodeSnapshot(host=Host(hostname=host), gpus=tuple(Gpu(index=i, name=gpu) for i in range(count)), nics=tuple(nics))


def _link(world: int = 8, nodes: int = 1, backend: str = "nccl", device: str = "cuda", **env) -> LinkTest:
    return LinkTest(backend=backend, device=device, world_size=world, nodes=nodes, iterations=20, env=env)


def test_rows_are_sound_and_sourced():
    ids = [r.id for r in REFERENCES]
    assert len(ids) == len(set(ids))
    for r in REFERENCES:
        assert 0 < r.low_gbps < r.high_gbps, r.id
        assert r.basis in ("measured", "derived", "reported") and r.source and r.min_size_bytes >= 1 << 20
        assert r.scope in ("intra-node", "inter-node per NIC") and r.algo in ("ring", "nvls", "any")
        if r.basis == "measured":  # the log it was read from is bundled and holds a busbw inside the band
            kept = re.search(r"ncclnb/recorded/links/(\S+\.txt)", r.source)
            assert kept, r.id
            text = (REPO / "ncclnb" / "recorded" / "links" / kept.group(1)).read_text(encoding="utf-8")
            assert text.startswith("# source:")
            rows = [line.split() for line in text.splitlines() if re.match(r"\s+\d+\s+\d+\s+float", line)]
            big = [float(cells[7]) for cells in rows if int(cells[0]) >= r.min_size_bytes]
            assert big and all(r.low_gbps <= b <= r.high_gbps for b in big), (r.id, big)
        if r.basis == "reported":
            assert "not re-checked" in r.note.lower() or "no such log" in r.source


def test_gpu_family_reads_the_names_the_tools_print():
    assert gpu_family("NVIDIA H100 80GB HBM3") == "h100"
    assert gpu_family("NVIDIA A100-SXM4-80GB") == "a100"
    assert gpu_family("NVIDIA H200") == "h200" and gpu_family("NVIDIA B200") == "b200"
    for other in (
        "NVIDIA H100 PCIe",
        "NVIDIA H100 NVL",
        "NVIDIA H200 NVL",
        "NVIDIA A100 80GB PCIe",
        "NVIDIA GeForce RTX 2080 Ti",
        None,
        "",
    ):
        assert gpu_family(other) is None, other


@pytest.mark.parametrize(
    "algo,wanted",
    [
        ("", "default"),
        ("Ring", "ring"),
        ("^NVLS", "ring"),
        ("NVLS", "nvls"),
        ("Tree", "other"),
        ("allreduce:ring;allgather:nvls", "ring"),
        ("allgather:ring", "default"),
        ("^Tree", "default"),
    ],
)
def test_wanted_algo(algo, wanted):
    assert wanted_algo({"NCCL_ALGO": algo}) == wanted


def test_one_node_rows_follow_gpu_and_algo():
    h100 = [_node("a")]
    assert reference_for(_link(), h100).id == "h100-sxm-8x-nvls"  # NCCL's default on 8 H100s
    assert reference_for(_link(NCCL_ALGO="Ring"), h100).id == "h100-sxm-8x-ring"
    assert reference_for(_link(NCCL_ALGO="Tree"), h100) is None
    a100 = [_node("a", "NVIDIA A100-SXM4-80GB")]
    assert reference_for(_link(), a100).id == "a100-sxm-8x-ring"  # A100 has no NVLS row
    assert reference_for(_link(NCCL_ALGO="NVLS"), a100) is None
    assert reference_for(_link(), [_node("a", "NVIDIA B200")]).id == "b200-8x-nvls"
    assert reference_for(_link(), [_node("a", "NVIDIA H200")]).id == "h200-sxm-8x-nvls"


def test_no_row_and_why():
    h100 = [_node("a")]
    for link, snaps, why in [
        (_link(backend="gloo", device="cpu"), h100, "gloo on cpu"),
        (_link(world=4), [_node("a", count=4)], "ran 4"),
        (_link(), [_node("a", "NVIDIA GeForce RTX 2080 Ti")], "no row for NVIDIA GeForce RTX 2080 Ti"),
        (_link(), [_node("a", "NVIDIA H100 PCIe")], "no row"),
        (_link(), [NodeSnapshot(host=Host(hostname="a"))], "do not name the GPU"),
        (_link(), [], "no node snapshots"),
    ]:
        row, reason = match_reference(link, snaps)
        assert row is None and why in reason, reason
    assert match_reference(_link(), h100, "all_gather")[0] is None


def test_several_nodes_use_the_nics_times_their_count():
    def ib(name, speed, state="ACTIVE"):
        return Nic(name=name, kind="infiniband", speed_mbps=speed, ib_port_state=state)

    ndr = [ib(f"mlx5_{i}", 400_000) for i in range(8)]
    two = [_node("a", nics=ndr), _node("b", nics=ndr)]
    row = reference_for(_link(world=16, nodes=2), two)
    assert row.id == "ib-ndr-400g-per-nic" and row.scope == "inter-node"
    assert (row.low_gbps, row.high_gbps) == (45.0 * 8, 50.0 * 8)
    # one GPU per node uses one NIC; a node with a port down counts what is up
    assert reference_for(_link(world=2, nodes=2), two).high_gbps == 50.0
    down = [_node("a", nics=ndr), _node("b", nics=ndr[:6] + [ib("mlx5_6", 400_000, "DOWN")])]
    assert reference_for(_link(world=16, nodes=2), down).low_gbps == 45.0 * 6
    hdr = [_node(h, nics=[ib("mlx5_0", 200_000)]) for h in "ab"]
    assert reference_for(_link(world=2, nodes=2), hdr).id == "ib-hdr-200g-per-nic"
    eth = [_node(h, nics=[Nic(name="eth0", kind="ethernet", speed_mbps=100_000)]) for h in "ab"]
    row, why = match_reference(_link(world=16, nodes=2), eth)
    assert row is None and "no InfiniBand/RoCE NIC" in why
    mixed = [_node("a", nics=ndr), _node("b", nics=[ib("mlx5_0", 200_000)])]
    assert match_reference(_link(world=2, nodes=2), mixed)[0] is None
    assert reference_for(_link(world=16, nodes=2, NCCL_ALGO="Tree"), two) is None
