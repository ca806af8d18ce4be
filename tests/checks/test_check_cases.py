"""Each check: a passing and a failing case, starting from the bundled
recorded machines and deriving the failing variant with dataclasses.replace."""

import dataclasses

import pytest

from ncclnb.checks import check
from ncclnb.recorded import load
from ncclnb.model import Nic

from checks_machines import job, machine, renamed, with_env, with_host, with_versions

MIB = 1 << 20


def only(target, rule):
    found = check(target, only=[rule])
    assert all(f.rule == rule for f in found)
    return found


# --- versions ----------------------------------------------------------------


def test_driver_too_old():
    seed001 = machine("seed001-10x-pcie")  # recorded driver 470.63.01
    assert seed001.versions.driver == "470.63.01"
    assert only(with_versions(seed001, torch_cuda="11.4"), "driver_too_old") == []
    bad = only(with_versions(seed001, torch_cuda="12.1"), "driver_too_old")
    assert [f.severity for f in bad] == ["error"]
    assert "525.60.13" in " ".join(e.text for e in bad[0].evidence)
    # newer minor than the driver ships with: runs under minor version compatibility
    l40s = machine("l40s-2socket")  # recorded driver 580.119.02
    assert only(with_versions(l40s, torch_cuda="12.9"), "driver_too_old") == []
    compat = only(with_versions(l40s, driver="550.54.14", torch_cuda="12.6"), "driver_too_old")
    assert [f.severity for f in compat] == ["info"]
    # no driver version, only nvidia-smi's "CUDA Version"
    assert only(with_versions(l40s, driver=None, cuda_driver="11.4", torch_cuda="12.1"), "driver_too_old")


def test_nccl_multiple_libraries():
    seed002 = load("seed002-version-mismatch")
    node_a, node_b = seed002.snapshots
    found = only(node_a, "nccl_multiple_libraries")
    assert len(found) == 1 and found[0].severity == "warning"
    assert "2.14.3" in found[0].title and "2.17.1" in found[0].title
    assert "torch uses NCCL 2.14.3" in found[0].cause and "nccl-tests" in found[0].cause
    assert only(node_b, "nccl_multiple_libraries") == []
    both = with_versions(node_b, nccl_pip={"nvidia-nccl-cu11": "2.14.3", "nvidia-nccl-cu12": "2.19.3"})
    f = only(both, "nccl_multiple_libraries")
    assert f and "overwrote" in f[0].cause and "built for CUDA 11" in f[0].cause
    preload = with_env(node_a, LD_PRELOAD="/opt/nccl/lib/libnccl.so.2")
    assert "LD_PRELOAD" in only(preload, "nccl_multiple_libraries")[0].cause


def test_versions_differ():
    seed002 = load("seed002-version-mismatch")
    found = only(seed002, "versions_differ")
    nccl = [f for f in found if f.title.startswith("NCCL (used by torch)")]
    assert len(nccl) == 1 and nccl[0].severity == "error"
    assert {"2.14.3", "2.19.3"} <= set(nccl[0].title.replace(":", " ").split())
    assert any(f.title.startswith("CUDA (torch build)") for f in found)
    healthy = load("two-node-h100")
    assert only(healthy, "versions_differ") == []
    same = [with_versions(s, torch="2.3.1", torch_cuda="12.1", nccl_torch="2.20.5") for s in healthy.snapshots]
    assert only(dataclasses.replace(healthy, snapshots=tuple(same)), "versions_differ") == []
    # three nodes, one odd: only the odd one is blamed, with its ranks
    third = renamed(same[0], "h100-node2")
    odd = with_versions(third, nccl_torch="2.18.1")
    rep = job([*same, odd], per_node=8)
    f = [x for x in only(rep, "versions_differ") if x.category == "version_mismatch"]
    assert f[0].hosts == ("h100-node2",) and f[0].ranks == tuple(range(16, 24))


# --- rank table --------------------------------------------------------------


def test_rank_out_of_range_seed000():
    seed000 = load("seed000-2node-a10g")
    found = only(seed000, "rank_out_of_range")
    assert len(found) == 1 and found[0].ranks == (4, 5, 6, 7)
    assert "7/4" in found[0].title
    assert only(load("two-node-h100"), "rank_out_of_range") == []


def test_rank_table_gaps():
    healthy = load("two-node-h100")
    assert only(healthy, "rank_table_gaps") == []
    missing = dataclasses.replace(healthy, ranks=tuple(r for r in healthy.ranks if r.rank != 5))
    f = only(missing, "rank_table_gaps")
    assert len(f) == 1 and f[0].ranks == (5,)
    dup = dataclasses.replace(healthy, ranks=tuple(dataclasses.replace(r, rank=8) if r.rank == 9 else r for r in healthy.ranks))
    titles = [x.title for x in only(dup, "rank_table_gaps")]
    assert any("more than once" in t for t in titles) and any("never started" in t for t in titles)


def test_world_size_vs_nodes():
    found = only(load("seed000-2node-a10g"), "world_size_vs_nodes")
    assert any("2 nodes x 4 ranks per node = 8" in f.title for f in found)
    assert only(load("two-node-h100"), "world_size_vs_nodes") == []
    h = load("two-node-h100")
    mixed = dataclasses.replace(
        h, ranks=tuple(dataclasses.replace(r, world_size=8) if r.host == "h100-node1" else r for r in h.ranks)
    )
    f = only(mixed, "world_size_vs_nodes")
    assert any("different WORLD_SIZE" in x.title for x in f)


def test_ranks_share_gpu():
    h = load("two-node-h100")
    assert only(h, "ranks_share_gpu") == []
    shared = job(h.snapshots, per_node=8, r1={"cuda_index": 0})
    f = only(shared, "ranks_share_gpu")
    assert len(f) == 1 and f[0].severity == "error" and f[0].ranks == (0, 1)


def test_local_rank_device_and_barrier_guess():
    h = load("two-node-h100")
    assert only(h, "local_rank_device") == []
    swapped = job(h.snapshots, per_node=8, r2={"cuda_index": 3}, r3={"cuda_index": 2})
    f = only(swapped, "local_rank_device")
    assert f and f[0].ranks == (2, 3)
    # seed 001-like: no device set, 3 ranks per node on 4-GPU nodes: rank 3 guesses cuda:3, LOCAL_RANK is 0
    g6e = machine("aws-g6e-12xlarge")
    nodes = [renamed(g6e, "n0"), renamed(g6e, "n1")]
    unset = job(nodes, per_node=3, set_device=False)
    bad = [x for x in only(unset, "local_rank_device") if x.severity == "warning"]
    assert bad and 3 in bad[0].ranks and 0 not in bad[0].ranks
    assert "cuda:3 (3 % 4 visible GPUs)" in " ".join(e.text for e in bad[0].evidence)
    # the guess matches when ranks per node == GPUs per node: info only
    lucky = job(nodes, per_node=4, set_device=False)
    assert {x.severity for x in only(lucky, "local_rank_device")} == {"info"}


def test_local_rank_table():
    h = load("two-node-h100")
    assert only(h, "local_rank_table") == []
    twice = job(h.snapshots, per_node=8, r1={"local_rank": 0})  # RANK 0 and 1 both LOCAL_RANK 0
    f = only(twice, "local_rank_table")
    assert [x.severity for x in f] == ["error"] and f[0].ranks == (0, 1) and f[0].category == "device_mapping"
    assert "LOCAL_RANK 0 held by RANK 0-1" in f[0].evidence[0].text
    beyond = job(h.snapshots, per_node=8, r9={"local_rank": 12})  # node 1's second rank says LOCAL_RANK 12
    f = only(beyond, "local_rank_table")
    assert [x.severity for x in f] == ["warning"] and f[0].ranks == (9,)
    # a partial table (ranks missing) cannot tell how many ranks a node has: no warning for the range
    partial = dataclasses.replace(beyond, ranks=tuple(r for r in beyond.ranks if r.rank != 3))
    assert only(partial, "local_rank_table") == []


def test_cuda_visible_devices_invalid():
    seed001 = machine("seed001-10x-pcie")
    assert only(with_env(seed001, CUDA_VISIBLE_DEVICES="6,7,8,9"), "cuda_visible_devices_invalid") == []
    f = only(with_env(seed001, CUDA_VISIBLE_DEVICES="6,7,8,10"), "cuda_visible_devices_invalid")
    assert f and "10" in f[0].title and f[0].severity == "warning"
    assert only(with_env(seed001, CUDA_VISIBLE_DEVICES="12"), "cuda_visible_devices_invalid")[0].severity == "error"


# --- topology ----------------------------------------------------------------


def test_gpu_set_numa_seed001():
    seed001 = machine("seed001-10x-pcie")
    f = only(with_env(seed001, CUDA_VISIBLE_DEVICES="6,7,8,9"), "gpu_set_numa")
    assert len(f) == 1 and f[0].severity == "warning"
    assert "GPU6 NUMA 0, GPU8 NUMA 1: SYS" in [e.text for e in f[0].evidence]
    assert "CUDA_VISIBLE_DEVICES=0,1,2,3" in f[0].fix
    assert only(with_env(seed001, CUDA_VISIBLE_DEVICES="0,1,2,3"), "gpu_set_numa") == []
    assert only(seed001, "gpu_set_numa") == []  # no GPU set chosen


def test_nic_far_from_gpu():
    f = only(machine("a30-nvlink-pairs"), "nic_far_from_gpu")
    assert f and {"GPU0", "GPU1"} <= {e.text.split()[0] for e in f[0].evidence}
    assert only(machine("dgx-a100"), "nic_far_from_gpu") == []  # every GPU has a PXB NIC
    assert only(with_env(machine("a30-nvlink-pairs"), CUDA_VISIBLE_DEVICES="2,3"), "nic_far_from_gpu") == []


def test_p2p_disabled_on_nvlink():
    h100 = machine("hgx-h100")
    assert only(h100, "p2p_disabled_on_nvlink") == []
    f = only(with_env(h100, NCCL_P2P_DISABLE="1"), "p2p_disabled_on_nvlink")
    assert len(f) == 1 and f[0].severity == "warning"
    text = " ".join(e.text for e in f[0].evidence)
    assert "4.00 GB/s" in text and "nccl_tests__2x-rtx2080ti" in text
    assert only(with_env(machine("rtx4090-8x-sys"), NCCL_P2P_DISABLE="1"), "p2p_disabled_on_nvlink") == []
    assert only(with_env(h100, NCCL_P2P_DISABLE="0"), "p2p_disabled_on_nvlink") == []


def test_iommu_with_pcie_p2p():
    pix = machine("rtx3090-8x-pix")
    assert only(with_host(pix, iommu="on"), "iommu_with_pcie_p2p")
    assert only(with_host(pix, iommu="passthrough"), "iommu_with_pcie_p2p") == []
    assert only(with_host(machine("hgx-h100"), iommu="on"), "iommu_with_pcie_p2p") == []  # NVLink only


# --- network -----------------------------------------------------------------


def _with_netdevs(snap, eth_state="up"):
    # interfaces as in the recorded g6e NCCL log (bootstrap on eth0), plus loopback and docker0
    nics = (
        Nic(name="lo", kind="loopback", state="unknown"),
        Nic(name="eth0", kind="ethernet", state=eth_state, speed_mbps=100000),
        Nic(name="docker0", kind="virtual", state="down"),
    )
    return dataclasses.replace(snap, nics=nics)


@pytest.mark.parametrize(
    "value,severity",
    [
        ("eth0", None),
        ("eth", None),
        ("^docker0,lo", None),
        ("ens34", "error"),
        ("=eth", "error"),
        ("lo", "error"),
        ("docker0", "error"),
        ("eth0,lo", "warning"),
        ("eth0,ens34", "info"),
        ("^eth", "error"),
    ],
)
def test_socket_ifname(value, severity):
    g6e = _with_netdevs(machine("aws-g6e-12xlarge"))
    found = only(with_env(g6e, NCCL_SOCKET_IFNAME=value), "socket_ifname")
    assert [f.severity for f in found] == ([severity] if severity else [])


def test_socket_ifname_interface_down():
    g6e = _with_netdevs(machine("aws-g6e-12xlarge"), eth_state="down")
    assert [f.severity for f in only(with_env(g6e, NCCL_SOCKET_IFNAME="eth0"), "socket_ifname")] == ["error"]


def test_ib_disabled():
    dgx = machine("dgx-a100")  # 12 mlx5 HCAs in its topo -m
    assert only(dgx, "ib_disabled") == []
    f = only(with_env(dgx, NCCL_IB_DISABLE="1"), "ib_disabled")
    assert len(f) == 1 and "12 active" in f[0].title
    assert only(with_env(machine("rtx4090-8x-sys"), NCCL_IB_DISABLE="1"), "ib_disabled") == []


# --- resources ---------------------------------------------------------------


def test_shm_too_small():
    h100 = machine("hgx-h100")
    f = only(with_host(h100, shm_total_bytes=64 * MIB), "shm_too_small")
    assert f and f[0].severity == "error" and "Docker's default" in f[0].title
    assert only(with_host(h100, shm_total_bytes=1024 * MIB), "shm_too_small") == []
    assert only(with_host(machine("rtx2080ti-2x"), shm_total_bytes=64 * MIB), "shm_too_small") == []
    full = only(with_host(h100, shm_total_bytes=1024 * MIB, shm_free_bytes=10 * MIB), "shm_too_small")
    assert [x.severity for x in full] == ["warning"]


def test_nofile_low():
    h = load("two-node-h100")
    seed000_env = {"NCCL_NSOCKS_PERTHREAD": "4", "NCCL_SOCKET_NTHREADS": "4"}  # seed 000's exports
    low = [with_env(with_host(s, rlimit_nofile_soft=1024, rlimit_nofile_hard=1048576), **seed000_env) for s in h.snapshots]
    f = only(dataclasses.replace(h, snapshots=tuple(low)), "nofile_low")
    assert len(f) == 2 and "1024" in f[0].title and "1048576" in f[0].fix
    high = [with_host(s, rlimit_nofile_soft=1048576) for s in low]
    assert only(dataclasses.replace(h, snapshots=tuple(high)), "nofile_low") == []
    # with InfiniBand carrying the data, few sockets are needed
    dgx = with_host(machine("dgx-a100"), rlimit_nofile_soft=1024)
    assert only(job([renamed(dgx, "a"), renamed(dgx, "b")], per_node=8), "nofile_low") == []


def test_memlock_low_with_ib():
    dgx = machine("dgx-a100")
    f = only(with_host(dgx, rlimit_memlock_soft=64 * 1024), "memlock_low_with_ib")
    assert [x.severity for x in f] == ["error"]
    assert only(with_host(dgx, rlimit_memlock_soft=-1), "memlock_low_with_ib") == []
    assert only(with_host(machine("hgx-h100"), rlimit_memlock_soft=64 * 1024), "memlock_low_with_ib") == []


# --- environment ---------------------------------------------------------------


def test_nccl_env_differs():
    h = load("two-node-h100")
    assert only(h, "nccl_env_differs") == []
    a, b = h.snapshots
    rep = dataclasses.replace(
        h, snapshots=(with_env(a, NCCL_P2P_DISABLE="1", NCCL_SOCKET_IFNAME="eth0"), with_env(b, NCCL_SOCKET_IFNAME="ens5"))
    )
    f = only(rep, "nccl_env_differs")
    assert {x.severity for x in f} == {"warning", "info"}
    warn = [x for x in f if x.severity == "warning"][0]
    assert "NCCL_P2P_DISABLE" in warn.title and "NCCL_SOCKET_IFNAME" not in warn.title
