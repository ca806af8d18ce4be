"""`ncclnb check`: text and --json output, --only, --list, exit codes."""

import json

import pytest

from ncclnb.cli import main

from checks_machines import machine, renamed, with_versions

FINDING_KEYS = {"rule", "category", "severity", "confidence", "title", "evidence", "fix", "ranks", "hosts"}


def test_json_shape_on_bundled_report(capsys):
    assert main(["check", "seed000-2node-a10g", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert list(data) == ["schema", "findings"] and data["schema"] == "ncclnb.findings/1" and data["findings"]
    top = data["findings"][0]
    assert FINDING_KEYS <= set(top)
    assert top["severity"] == "error" and top["category"] == "rank_world_size_mismatch"
    assert top["ranks"] == [4, 5, 6, 7]
    assert all(set(e) == {"source", "line", "text"} for f in data["findings"] for e in f["evidence"])


def test_text_output_and_exit_zero_without_findings(capsys):
    assert main(["check", "two-node-h100"]) == 0
    assert "No findings" in capsys.readouterr().out
    assert main(["check", "seed002-version-mismatch"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("ERROR") and "fix:" in out and "> report: 2.14.3: seed002-node-a" in out


def test_several_snapshot_files_are_one_cluster(tmp_path, capsys):
    a = with_versions(machine("hgx-h100"), nccl_torch="2.19.3")
    b = with_versions(renamed(a, "other"), nccl_torch="2.14.3")
    paths = []
    for snap in (a, b):
        p = tmp_path / f"{snap.hostname}.json"
        p.write_text(json.dumps(snap.to_dict()))
        paths.append(str(p))
    assert main(["check", *paths, "--json", "--only", "versions_differ"]) == 0
    findings = json.loads(capsys.readouterr().out)["findings"]
    assert [f["rule"] for f in findings] == ["versions_differ"]
    assert set(findings[0]["hosts"]) == {"hgx-h100", "other"}


def test_list(capsys):
    assert main(["check", "--list"]) == 0
    out = capsys.readouterr().out
    assert "socket_ifname" in out and "rank_out_of_range" in out
    assert main(["check", "--list", "--json"]) == 0
    ids = [c["id"] for c in json.loads(capsys.readouterr().out)["checks"]]
    assert len(ids) == len(set(ids)) >= 19


@pytest.mark.parametrize(
    "argv",
    [
        ["check"],
        ["check", "no-such-machine"],
        ["check", "hgx-h100", "--only", "nope"],
    ],
)
def test_bad_input_exits_2_with_one_line(argv, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("ncclnb check: error:") and err.count("\n") == 1


def test_bad_files_exit_2(tmp_path, capsys):
    junk = tmp_path / "junk.json"
    junk.write_text("{not json")
    foreign = tmp_path / "foreign.json"
    foreign.write_text('{"schema": "something/1"}')
    for path in (junk, foreign, tmp_path / "missing.json"):
        assert main(["check", str(path)]) == 2
        assert capsys.readouterr().err.count("\n") == 1
