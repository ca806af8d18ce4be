"""The model: frozen values that round-trip through JSON and refuse bad input clearly."""

import dataclasses
import json

import pytest

from ncclnb.model import (
    CATEGORIES,
    ClusterReport,
    Diagnosis,
    Evidence,
    Finding,
    Gpu,
    Host,
    Library,
    Links,
    Nic,
    NodeSnapshot,
    NumaNode,
    RankEntry,
    RankStatus,
    SchemaError,
    Versions,
    nvlink_count,
)


def sample_snapshot() -> NodeSnapshot:
    return NodeSnapshot(
        host=Host(
            hostname="node-a",
            numa_nodes=(NumaNode(0, "0-7", 1024), NumaNode(1, "8-15", None)),
            container=("docker",),
            shm_total_bytes=67108864,
            rlimit_nofile_soft=1024,
        ),
        gpus=(Gpu(0, cuda_index=0, name="NVIDIA A30", numa_node=0), Gpu(1, name="NVIDIA A30", numa_node=1)),
        links=Links(
            gpu_gpu=(("X", "NV4"), ("NV4", "X")),
            gpu_nic=(("PIX",), ("SYS",)),
            nic_names=("mlx5_0",),
            p2p={"read": (("X", "OK"), ("OK", "X"))},
        ),
        nics=(Nic("ib0", kind="infiniband", addresses=("10.0.0.1/24",), ib_device="mlx5_0"),),
        versions=Versions(
            driver="535.104.05",
            nccl_pip={"nvidia-nccl-cu12": "2.21.5"},
            nccl_system=(Library("/usr/lib/libnccl.so.2.17.1", "2.17.1", "ldconfig"),),
        ),
        env={"NCCL_DEBUG": "INFO"},
        missing={"gpus[1].memory_total_mib": "not supported by this GPU"},
    )


def test_snapshot_round_trips_through_json_text():
    snap = sample_snapshot()
    text = json.dumps(snap.to_dict())
    again = NodeSnapshot.from_dict(json.loads(text))
    assert again == snap
    assert json.dumps(again.to_dict()) == text


def test_snapshot_json_has_the_contract_keys_schema_first():
    data = sample_snapshot().to_dict()
    assert list(data)[0] == "schema" and data["schema"] == "ncclnb.node/1"
    for key in ("host", "gpus", "links", "nics", "versions", "env", "missing"):
        assert key in data
    assert data["host"]["hostname"] == "node-a"


def test_snapshot_is_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        sample_snapshot().origin = "x"


@pytest.mark.parametrize(
    "bad, field",
    [
        ([], ""),
        ({"host": {"hostname": "a"}}, "schema"),
        ({"schema": "ncclnb.report/1"}, "schema"),
        ({"schema": "ncclnb.node/7", "host": {"hostname": "a"}}, "schema"),
        ({"schema": "ncclnb.node/1"}, "host"),
        ({"schema": "ncclnb.node/1", "host": {"hostname": 5}}, "host.hostname"),
        ({"schema": "ncclnb.node/1", "host": {"hostname": "a"}, "gpus": [{"index": "0"}]}, "gpus[0].index"),
        ({"schema": "ncclnb.node/1", "host": {"hostname": "a"}, "links": {"gpu_gpu": [["X", 3]]}}, "links.gpu_gpu[0][1]"),
        ({"schema": "ncclnb.node/1", "host": {"hostname": "a"}, "env": {"A": 1}}, "env.A"),
        ({"schema": "ncclnb.node/1", "host": {"hostname": "a"}, "gpus": [{"index": True}]}, "gpus[0].index"),
    ],
)
def test_from_dict_names_the_bad_field_in_one_line(bad, field):
    with pytest.raises(SchemaError) as info:
        NodeSnapshot.from_dict(bad)
    assert info.value.path == field
    assert "\n" not in str(info.value)


def test_newer_schema_is_refused_with_an_upgrade_hint():
    with pytest.raises(SchemaError, match="newer ncclnb"):
        NodeSnapshot.from_dict({"schema": "ncclnb.node/2", "host": {"hostname": "a"}})


def test_finding_refuses_unknown_category_and_round_trips():
    with pytest.raises(SchemaError):
        Finding(rule="x", category="nope", severity="error", confidence=0.5, title="t")
    f = Finding(
        rule="x",
        category=CATEGORIES[0],
        severity="error",
        confidence=0.9,
        title="t",
        evidence=(Evidence("rank0.log", 12, "Invalid rank requested : 7/4"),),
        ranks=(7,),
    )
    assert Finding.from_dict(json.loads(json.dumps(f.to_dict()))) == f


def test_report_and_diagnosis_round_trip():
    rep = ClusterReport(snapshots=(sample_snapshot(),), ranks=(RankEntry(0, "node-a", 0, 1),))
    assert ClusterReport.from_dict(json.loads(json.dumps(rep.to_dict()))) == rep
    dia = Diagnosis(ranks=(RankStatus(rank=3, host="h", last_seq=12),), sources=("a.log",), lines_read=3)
    assert Diagnosis.from_dict(json.loads(json.dumps(dia.to_dict()))) == dia
    with pytest.raises(SchemaError, match="not a cluster report"):
        ClusterReport.from_dict(sample_snapshot().to_dict())


def test_nvlink_count():
    assert nvlink_count("NV18") == 18 and nvlink_count("PIX") == 0 and nvlink_count(None) == 0


def test_cpulist_lenient_and_strict():
    from ncclnb.model.cpulist import format_cpulist, parse_cpulist

    assert parse_cpulist("0-3,8, 10-11") == {0, 1, 2, 3, 8, 10, 11}
    assert parse_cpulist("0-3,x,9") == {0, 1, 2, 3, 9}
    assert parse_cpulist(None) == set() and parse_cpulist("0-99999999") == set()
    for bad in ("0-3,x", "5-2", "0-99999999"):
        with pytest.raises(ValueError):
            parse_cpulist(bad, strict=True)
    assert format_cpulist({0, 1, 2, 3, 8, 10, 11}) == "0-3,8,10-11"
