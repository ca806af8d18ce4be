"""rank_affinity_numa and rank_nic_far on recorded machines: each planted
rank must hit (naming the rank and its host), its neighbours must not."""

from __future__ import annotations

import dataclasses

import ncclnb
from ncclnb.checks import check
from ncclnb.model import Nic, RankEntry

from checks_machines import job, machine, renamed, rules, with_env

H100 = machine("hgx-h100")  # NUMA 0: CPUs 0-51,104-155 (GPU0-3); NUMA 1: 52-103,156-207 (GPU4-7)
NUMA0, NUMA1 = "0-51,104-155", "52-103,156-207"


def _pinned(snaps, per_node, **overrides):
    """A torchrun job with each rank bound to its own GPU's CPUs, then ``overrides``."""
    base = job(snaps, per_node)
    ranks = []
    for r in base.ranks:
        snap = next(s for s in snaps if s.hostname == r.host)
        e = dataclasses.replace(r, cpu_affinity=snap.gpus[r.local_rank].cpu_affinity)
        ranks.append(dataclasses.replace(e, **overrides.get(f"r{r.rank}", {})))
    return dataclasses.replace(base, ranks=tuple(ranks))


def test_rank_affinity_numa_off_partly_and_unpinned():
    a, b = renamed(H100, "node-a"), renamed(H100, "node-b")
    report = _pinned(
        [a, b],
        8,
        r3={"cpu_affinity": NUMA1},  # GPU3 is on NUMA 0: pinned to the other socket
        r13={"cpu_affinity": "40-60"},  # GPU5 (NUMA 1) pinned across both
        r6={"cpu_affinity": "0-207"},
    )  # not pinned at all: the default, not flagged
    found = rules(check(report, only="rank_affinity_numa"))
    off = rules(found, severity="warning")
    assert len(off) == 1 and off[0].ranks == (3,) and off[0].hosts == ("node-a",)
    assert "node-a: RANK 3 on GPU3 (NUMA 0" in off[0].evidence[0].text and NUMA1 in off[0].evidence[0].text
    partly = rules(found, severity="info")
    assert len(partly) == 1 and partly[0].ranks == (13,) and partly[0].hosts == ("node-b",)
    assert off[0].category == "p2p_topology" and "numactl --cpunodebind" in off[0].fix


def test_rank_affinity_numa_does_not_hit_a_bound_job():
    assert rules(check(ncclnb.load("two-node-h100")), "rank_affinity_numa") == []
    assert rules(check(_pinned([H100], 8)), "rank_affinity_numa") == []


def test_rank_affinity_numa_by_bus_id_and_by_the_ranks_own_numa():
    """A rank that knows only its bus id (no CUDA index, sysfs form) is placed on the snapshot's GPU;
    a rank on a node whose snapshot has no bus ids still has its own NUMA reading."""
    l40s = machine("l40s-2socket")  # GPU2 at CA:00.0 on NUMA 1 (odd CPUs)
    on_gpu2 = RankEntry(rank=0, host=l40s.hostname, world_size=1, bus_id="0000:ca:00.0", cpu_affinity="0,2,4")
    found = rules(check(dataclasses.replace(job([l40s], 0), ranks=(on_gpu2,)), "rank_affinity_numa"))
    assert [f.ranks for f in found] == [(0,)] and "GPU2 (NUMA 1" in found[0].evidence[0].text
    fine = dataclasses.replace(on_gpu2, cpu_affinity="1,3,5")
    assert rules(check(dataclasses.replace(job([l40s], 0), ranks=(fine,))), "rank_affinity_numa") == []
    own = RankEntry(rank=0, host=H100.hostname, world_size=1, bus_id="00000000:1B:00.0", numa_node=1, cpu_affinity="0-3")
    found = rules(check(dataclasses.replace(job([H100], 0), ranks=(own,))), "rank_affinity_numa")
    assert [f.ranks for f in found] == [(0,)]
    # no device known at all: its numa_node is its CPUs', nothing to compare with
    cpu_only = RankEntry(rank=0, host=H100.hostname, world_size=1, numa_node=0, cpu_affinity="0-3")
    assert rules(check(dataclasses.replace(job([H100], 0), ranks=(cpu_only,))), "rank_affinity_numa") == []


DGX = machine("dgx-a100")  # GPU0/1: PXB to mlx5_0, mlx5_1, SYS to the other ten HCAs


def test_rank_nic_far_hca_forced_across_sockets():
    a, b = renamed(DGX, "dgx-a"), renamed(DGX, "dgx-b")
    report = job([a, b], 8, r0={"nic": "mlx5_6"}, r1={"nic": "mlx5_1"}, r9={"nic": "mlx5_8"})
    found = rules(check(report, only="rank_nic_far"))
    assert len(found) == 1 and found[0].severity == "warning"
    assert found[0].ranks == (0, 9) and found[0].hosts == ("dgx-a", "dgx-b")
    text = [e.text for e in found[0].evidence]
    assert text[0] == "dgx-a: RANK 0 on GPU0 (NUMA 3) uses mlx5_6 (SYS); mlx5_0 is PXB", text
    # the same HCAs near their GPUs: nothing
    near = job([a, b], 8, **{f"r{r}": {"nic": "mlx5_0" if r % 8 < 2 else "mlx5_2"} for r in (0, 1, 2, 3)})
    assert rules(check(near), "rank_nic_far") == []


def test_rank_nic_far_not_judged_where_it_cannot_be():
    l40s = machine("l40s-2socket")  # both HCAs on NUMA 1: GPU0's NIC is SYS, but no nearer one exists
    assert rules(check(job([l40s], 2, r0={"nic": "mlx5_0"}, r1={"nic": "mlx5_1"})), "rank_nic_far") == []
    # a socket interface on a node where NCCL's IB transport picks the HCA per GPU
    assert rules(check(job([DGX], 8, r0={"nic": "eth0"})), "rank_nic_far") == []


def test_rank_nic_far_by_numa_without_a_matrix():
    """Two socket interfaces, one per socket (no GPU x NIC matrix): a rank on GPU5 (NUMA 1) sending over eth0."""
    snap = dataclasses.replace(
        H100,
        nics=(
            Nic("eth0", kind="ethernet", state="up", numa_node=0),
            Nic("eth1", kind="ethernet", state="up", numa_node=1),
            Nic("lo", kind="loopback"),
        ),
    )
    one = job([snap], 8, r5={"nic": "eth0"}, r1={"nic": "eth0"}, r6={"nic": "eth1"})
    found = rules(check(one), "rank_nic_far")
    assert [f.ranks for f in found] == [(5,)] and found[0].severity == "info"  # one node: no inter-node traffic
    assert "uses eth0 (NUMA 0); eth1 is on NUMA 1" in found[0].evidence[0].text
    ib_off = with_env(DGX, NCCL_IB_DISABLE="1")
    assert rules(check(job([ib_off], 8, r0={"nic": "eth0"})), "rank_nic_far") == []  # eth0 not in this snapshot
