"""The bundled recorded machines and ``load``."""

from __future__ import annotations

import json

import pytest

import ncclnb.recorded as machines_pkg
from ncclnb.recorded import DATA, load, machines
from tests._tools import load_tool

from ncclnb.model import ClusterReport, NodeSnapshot, SchemaError, nvlink_count
from tests.conftest import CAPTURES

build_recorded = load_tool("build_recorded")
RECIPES, build_main, to_json = build_recorded.RECIPES, build_recorded.main, build_recorded.to_json

REQUIRED = [
    "hgx-h100",
    "dgx-a100",
    "aws-p4d",
    "aws-p5",
    "aws-g6e-12xlarge",
    "l40s-2socket",
    "a30-nvlink-pairs",
    "rtx4090-8x-sys",
    "rtx3090-8x-pix",
    "rtx2080ti-2x",
    "seed001-10x-pcie",
]


def test_required_machines_are_bundled_with_a_one_line_description():
    listed = machines()
    assert set(REQUIRED) <= set(listed)
    for name, text in listed.items():
        assert text and "\n" not in text, name
    for name in RECIPES:
        assert "Source" in listed[name] or "CONSTRUCTED" in listed[name], name


@pytest.mark.parametrize("name", sorted(p.stem for p in DATA.glob("*.json")))
def test_every_bundled_machine_round_trips_unchanged(name):
    value = load(name)
    assert isinstance(value, (NodeSnapshot, ClusterReport))
    assert type(value).from_dict(value.to_dict()) == value
    text = (DATA / f"{name}.json").read_text(encoding="utf-8")
    assert type(value).from_dict(json.loads(text)) == value
    if name in RECIPES:
        assert to_json(value) == text  # the JSON text is stable too
        assert value.origin == "ingest" and value.description == RECIPES[name].description


def test_build_check_matches_a_fresh_ingest_of_the_fixtures(capsys):
    assert build_main(["--check", "--fixtures", str(CAPTURES)]) == 0
    assert f"all {len(RECIPES)} bundled machines match" in capsys.readouterr().out


def test_build_check_notices_a_stale_file(tmp_path, monkeypatch, capsys):
    stale = tmp_path / "data"
    stale.mkdir()
    for path in DATA.glob("*.json"):
        (stale / path.name).write_text(path.read_text())
    (stale / "aws-p5.json").write_text((stale / "aws-p5.json").read_text().replace('"NV18"', '"NV12"', 1))
    monkeypatch.setattr(build_recorded, "DATA", stale)
    assert build_main(["--check", "--fixtures", str(CAPTURES)]) == 1
    assert "aws-p5: differs from a fresh ingest" in capsys.readouterr().out


def test_seed001_straddles_the_sockets_where_the_seed_says():
    snap = load("seed001-10x-pcie")
    assert len(snap.gpus) == 10
    assert [snap.gpus[i].numa_node for i in (6, 7, 8, 9)] == [0, 0, 1, 1]
    assert snap.links.label(6, 7) == "PIX" and snap.links.label(8, 9) == "PIX"
    assert {snap.links.label(i, j) for i in (6, 7) for j in (8, 9)} == {"SYS"}
    assert {g.name for g in snap.gpus} == {"Quadro RTX 8000"}
    assert snap.versions.driver == "470.63.01"
    assert "CONSTRUCTED" in snap.description and "seed 001" in snap.description
    assert [n.cpus for n in snap.host.numa_nodes] == ["0-19,40-59", "20-39,60-79"]


def test_a_few_bundled_facts():
    assert nvlink_count(load("hgx-h100").links.label(0, 5)) == 18
    assert load("hgx-h100").links.p2p["read"][2][6] == "OK"
    dgx = load("dgx-a100")
    assert len(dgx.nics) == 12 and dgx.links.gpu_nic[4][6] == "PXB"
    assert load("l40s-2socket").hostname == "shockwave"
    assert load("a30-nvlink-pairs").versions.nccl_pip == {"nvidia-nccl-cu12": "2.27.3"}
    assert load("rtx2080ti-2x").links.gpu_gpu == ()
    assert "links.gpu_gpu" in load("rtx2080ti-2x").missing
    assert load("tesla-p4-1x").gpus[0].numa_node is None


def test_load_by_path_and_cluster_reports(tmp_path):
    snap = load("aws-p4d")
    path = tmp_path / "node.json"
    path.write_text(json.dumps(snap.to_dict()))
    assert load(path) == snap and load(str(path)) == snap
    report = ClusterReport(snapshots=(snap, load("aws-p5")), description="two nodes")
    rpath = tmp_path / "report.json"
    rpath.write_text(json.dumps(report.to_dict()))
    assert load(rpath) == report


def test_bundled_cluster_reports_are_discovered(tmp_path, monkeypatch):
    data = tmp_path / "data"
    data.mkdir()
    report = ClusterReport(snapshots=(load("aws-p4d"),), description="a one-node cluster")
    (data / "my-cluster.json").write_text(json.dumps(report.to_dict()))
    monkeypatch.setattr(machines_pkg, "DATA", data)
    assert machines() == {"my-cluster": "a one-node cluster"}
    assert load("my-cluster") == report


def _error(call, *args) -> str:
    with pytest.raises(ValueError) as info:
        call(*args)
    message = str(info.value)
    assert message and "\n" not in message
    return message


def test_unknown_name_lists_the_known_ones():
    message = _error(load, "hgx-h200")
    assert message.startswith("unknown machine 'hgx-h200'")
    for name in REQUIRED:
        assert name in message


@pytest.mark.parametrize(
    "content, expected, schema_error",
    [
        (b"{not json", "bad.json: not valid JSON (Expecting property name", False),
        (b"\x00\x01\x02binary", "bad.json: binary data", False),
        (b"\xff\xfe\xfa\xfb", "bad.json: not a JSON file", False),
        (b"[1, 2]", "bad.json: not a node snapshot: expected a JSON object, got list", True),
        (b'{"gpus": []}', "bad.json: schema: not a node snapshot: no 'schema' tag", True),
        (b'{"schema": "other.tool/1"}', "bad.json: schema: not an ncclnb snapshot, report, diagnosis or repro result", True),
        (b'{"schema": "ncclnb.node/99", "host": {"hostname": "h"}}', "written by a newer ncclnb", True),
        (b'{"schema": "ncclnb.node/1"}', "bad.json: host: required field is missing", True),
        (
            b'{"schema": "ncclnb.node/1", "host": {"hostname": "h"}, "gpus": [{"index": "x"}]}',
            "bad.json: gpus[0].index: expected an integer",
            True,
        ),
        (b"[" * 100000, "bad.json: JSON nested too deeply", False),
    ],
)
def test_malformed_files_are_one_clear_line(tmp_path, content, expected, schema_error):
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    with pytest.raises(ValueError) as info:
        load(path)
    assert expected in str(info.value) and "\n" not in str(info.value)
    assert isinstance(info.value, SchemaError) == schema_error


def test_missing_path_is_one_line(tmp_path):
    assert "no such file" in _error(load, str(tmp_path / "gone.json"))
