"""The `ncclnb` command end to end, in real subprocesses: the verbs of the foundation."""

import json

import pytest

from ncclnb.model import NodeSnapshot
from tests.conftest import CAPTURES


def one_line_error(proc):
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]


def test_help_lists_every_verb(cli):
    proc = cli("--help")
    assert proc.returncode == 0
    for verb in ("collect", "ingest", "show", "doctor", "check"):
        assert verb in proc.stdout


def test_show_bundled_machine(cli):
    proc = cli("show", "hgx-h100")
    assert proc.returncode == 0, proc.stderr
    assert "GPUs (8)" in proc.stdout and "NV18" in proc.stdout and "NUMA (2 nodes)" in proc.stdout


def test_show_list_names_the_bundled_machines(cli):
    proc = cli("show", "--list")
    assert proc.returncode == 0
    names = [ln.split()[0] for ln in proc.stdout.splitlines() if ln.strip()]
    assert {"hgx-h100", "dgx-a100", "seed001-10x-pcie"} <= set(names)
    assert len(names) >= 6


def test_show_unknown_name_lists_known_ones(cli):
    line = one_line_error(cli("show", "no-such-machine"))
    assert "hgx-h100" in line


def test_collect_here_succeeds_without_a_driver_and_says_why(cli, tmp_path):
    out = tmp_path / "node.json"
    proc = cli("collect", "-o", str(out), "--no-torch")
    assert proc.returncode == 0, proc.stderr
    snap = NodeSnapshot.from_dict(json.loads(out.read_text()))
    assert snap.gpus == ()
    assert any("NVML" in reason or "driver" in reason for reason in snap.missing.values())
    shown = cli("show", str(out))
    assert shown.returncode == 0 and snap.hostname in shown.stdout


def test_ingest_then_show(cli, tmp_path):
    topo = CAPTURES / "topo_m__4x-l40s-pcie-2nic-2socket__kagaho-vllm-l40s.txt"
    smi = CAPTURES / "nvidia_smi__4x-l40s-drv580-cuda13__kagaho-vllm-l40s.txt"
    out = tmp_path / "l40s.json"
    proc = cli("ingest", str(smi), str(topo), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    snap = NodeSnapshot.from_dict(json.loads(out.read_text()))
    assert len(snap.gpus) == 4 and snap.versions.driver == "580.119.02"
    assert snap.links.label(0, 2) == "SYS" and snap.links.label(2, 3) == "NODE"


def test_ingest_reads_stdin(cli):
    topo = (CAPTURES / "topo_m__hgx-h100-8gpu__stas00-ml-engineering.txt").read_bytes()
    proc = cli("ingest", "-", input=topo)
    assert proc.returncode == 0, proc.stderr
    assert len(json.loads(proc.stdout)["gpus"]) == 8


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"\x00\xff\xfe\x89PNG\r\n\x1a\n" * 50,
        b"\tGPU0\tGPU1\tGPU2\tCPU Affinity\tNUMA Affinity\nGPU0\t X \tNV4\tSYS\t0-7\t0\nGPU1\tNV4\t X \n",
        b"\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\nGPU0\t X \tNV4\t0-7\t0\nGPU1\tNV4\t0-7\t0\n",
        b'{"gpus": 3}',
    ],
)
def test_ingest_malformed_input_is_one_line_exit_2(cli, tmp_path, content):
    bad = tmp_path / "bad.txt"
    bad.write_bytes(content)
    one_line_error(cli("ingest", str(bad)))


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"not json",
        b"\x00\x01\x02",
        b"[1, 2]",
        b'{"schema": "ncclnb.node/99", "host": {"hostname": "x"}}',
        b'{"schema": "ncclnb.node/1", "host": {"hostname": "x"}, "gpus": [{"index": "zero"}]}',
    ],
)
def test_show_malformed_json_is_one_line_exit_2(cli, tmp_path, content):
    bad = tmp_path / "bad.json"
    bad.write_bytes(content)
    one_line_error(cli("show", str(bad)))


def test_missing_paths_are_one_line_exit_2(cli, tmp_path):
    one_line_error(cli("ingest", str(tmp_path / "nope.txt")))
    one_line_error(cli("show", str(tmp_path / "nope.json")))
