"""The registry and check()'s guarantees: unique ids, known categories,
ordering, --only, and that no input and no broken check can make it raise."""

import dataclasses

import pytest

import ncclnb
from ncclnb.checks import _registry, check, registry
from ncclnb.model import CATEGORIES, ClusterReport, Gpu, Host, Links, Nic, NodeSnapshot, RankEntry, Versions

from checks_machines import machine, renamed, rules, with_env, with_versions


def test_registry_ids_categories_and_kinds():
    reg = registry()
    assert len(reg) >= 19
    for check_id, info in reg.items():
        assert check_id == info.id
        assert info.category in CATEGORIES
        assert info.takes in ("node", "report")
        assert info.summary, f"{check_id}: its card says nothing it detects"


def test_register_refuses_duplicates_and_unknown_categories():
    with pytest.raises(ValueError):
        _registry.register("socket_ifname", "socket_ifname", "node")(lambda s, r: [])
    with pytest.raises(ValueError):
        _registry.register("new_one", "not_a_category", "node")


def test_public_api_is_the_same_function():
    assert ncclnb.check is check


def test_broken_check_becomes_info_finding(monkeypatch, tolerant):
    def boom(snap, ranks):
        raise RuntimeError("kaboom")

    info = _registry.CheckInfo("test_boom", "unknown", "node", "always fails", boom)
    monkeypatch.setitem(_registry.REGISTRY, "test_boom", info)
    snap = with_env(machine("hgx-h100"), NCCL_P2P_DISABLE="1")
    found = check(snap)
    crashed = rules(found, "test_boom")
    assert len(crashed) == 1
    assert crashed[0].severity == "info" and "test_boom" in crashed[0].title
    assert "kaboom" in crashed[0].evidence[0].text
    assert rules(found, "p2p_disabled_on_nvlink"), "the other checks still ran"


def test_broken_report_check_becomes_info_finding(monkeypatch, tolerant):
    info = _registry.CheckInfo("test_boom_report", "unknown", "report", "fails", lambda rep: 1 / 0)
    monkeypatch.setitem(_registry.REGISTRY, "test_boom_report", info)
    found = check(ClusterReport(), only=["test_boom_report"])
    assert [f.rule for f in found] == ["test_boom_report"]
    assert "ZeroDivisionError" in found[0].evidence[0].text


def test_a_broken_check_raises_under_strict_mode(monkeypatch):
    """The tests run with NCCLNB_STRICT=1: a check's bug fails them instead of becoming a finding."""
    info = _registry.CheckInfo("test_boom_report", "unknown", "report", "fails", lambda rep: 1 / 0)
    monkeypatch.setitem(_registry.REGISTRY, "test_boom_report", info)
    with pytest.raises(ZeroDivisionError):
        check(ClusterReport(), only=["test_boom_report"])


def test_sorted_by_severity_then_confidence():
    snap = with_env(machine("hgx-h100"), NCCL_P2P_DISABLE="1", CUDA_VISIBLE_DEVICES="9,0")
    snap = dataclasses.replace(snap, host=dataclasses.replace(snap.host, shm_total_bytes=64 << 20))
    found = check(snap)
    order = {"error": 0, "warning": 1, "info": 2}
    keys = [(order[f.severity], -f.confidence) for f in found]
    assert len({f.severity for f in found}) >= 2
    assert keys == sorted(keys)


def test_only_selects_and_rejects_unknown_ids():
    snap = with_env(machine("hgx-h100"), NCCL_P2P_DISABLE="1")
    assert {f.rule for f in check(snap, only="p2p_disabled_on_nvlink")} == {"p2p_disabled_on_nvlink"}
    assert check(snap, only=["shm_too_small"]) == []
    with pytest.raises(ValueError, match="no_such_check"):
        check(snap, only="no_such_check")


def test_iterable_of_snapshots_is_a_cluster():
    a = with_versions(machine("hgx-h100"), nccl_torch="2.19.3")
    b = with_versions(renamed(a, "other"), nccl_torch="2.14.3")
    assert rules(check([a, b]), "versions_differ")
    assert rules(check(iter([a, b])), "versions_differ")


ODD_SNAPSHOTS = [
    NodeSnapshot(host=Host(hostname="empty")),
    NodeSnapshot(
        host=Host(hostname="nones", shm_total_bytes=None, rlimit_nofile_soft=None),
        gpus=(Gpu(index=0),),
        env={"CUDA_VISIBLE_DEVICES": "", "NCCL_SOCKET_IFNAME": "", "NCCL_P2P_DISABLE": "yes"},
    ),
    # matrix sizes that do not match the GPU count, NIC names without a matrix
    NodeSnapshot(
        host=Host(hostname="ragged", iommu="on", shm_total_bytes=1, rlimit_nofile_soft=3, rlimit_memlock_soft=0),
        gpus=tuple(Gpu(index=i, numa_node=i) for i in range(3)),
        links=Links(gpu_gpu=(("X", "NV4"), ("SYS",)), gpu_nic=(("SYS", "PIX", "bogus"),), nic_names=("mlx5_0",)),
        nics=(Nic(name="mlx5_0", kind="infiniband"), Nic(name="lo", kind="loopback")),
        env={
            "CUDA_VISIBLE_DEVICES": "2,0,GPU-zz,1",
            "NCCL_SOCKET_IFNAME": "^=,,:",
            "NCCL_IB_DISABLE": "1",
            "WORLD_SIZE": "-3",
            "NCCL_NSOCKS_PERTHREAD": "x",
            "LD_PRELOAD": "libnccl.so.2",
        },
        versions=Versions(driver="garbage", torch_cuda="12", nccl_torch="?", nccl_pip={"nvidia-nccl-cu": ""}),
    ),
    NodeSnapshot(
        host=Host(hostname="weird-versions"),
        gpus=(Gpu(index=5, cuda_index=-1),),
        versions=Versions(driver="1", torch_cuda="99.9", cuda_driver="x"),
    ),
]


@pytest.mark.parametrize("snap", ODD_SNAPSHOTS, ids=lambda s: s.hostname)
def test_odd_snapshots_never_crash_a_check(snap):
    found = check(snap)
    assert not [f for f in found if f.category == "unknown"], [f.evidence for f in found if f.category == "unknown"]


def test_odd_reports_never_crash_a_check():
    ranks = (
        RankEntry(rank=-1, host="ghost", world_size=0),
        RankEntry(rank=3, host="empty", local_rank=7, cuda_index=9),
        RankEntry(rank=3, host="empty"),
        RankEntry(rank=10**9, host="nones", world_size=10**9),
    )
    report = ClusterReport(snapshots=tuple(ODD_SNAPSHOTS), ranks=ranks)
    found = check(report)
    assert not [f for f in found if f.category == "unknown"], [f.evidence for f in found if f.category == "unknown"]
    assert rules(found, "rank_table_gaps")  # the duplicate rank 3 is still seen


def test_checks_do_not_print(capsys):
    check(ClusterReport(snapshots=tuple(ODD_SNAPSHOTS)))
    check(with_env(machine("hgx-h100"), NCCL_P2P_DISABLE="1"))
    out = capsys.readouterr()
    assert out.out == "" and out.err == ""
