"""ingest: sources of every kind, blocks in any order, merging, provenance."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ncclnb.collectors.ingest import ingest
from ncclnb.collectors.parsers import ParseError
from tests.conftest import CAPTURES


L40S_TOPO = "topo_m__4x-l40s-pcie-2nic-2socket__kagaho-vllm-l40s.txt"
L40S_SMI = "nvidia_smi__4x-l40s-drv580-cuda13__kagaho-vllm-l40s.txt"
A30_TOPO = "topo_m__4x-a30-nvlink-bridge-pairs-1nic__vllm-issue-29070.txt"
A30_ENV = "collect_env__vllm-4x-a30-nvlink-pairs__vllm-issue-29070.txt"
H100_TOPO = "topo_m__hgx-h100-8gpu__stas00-ml-engineering.txt"
H100_P2P = "p2p__hgx-h100-8gpu-read-all-ok__stas00-ml-engineering.txt"
NCCL_P4D = "nccl_info__aws-p4d-1node-4rank-p2p-cumem__gnosia93-training-on-eks.txt"

SMALL_TOPO = "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\nGPU0\t X \tPIX\t0-7\t0\nGPU1\tPIX\t X \t0-7\t0\n"


def fixture(name: str) -> Path:
    path = CAPTURES / name
    assert path.is_file(), f"{path} is missing from the repository"
    return path


def facts(snap):
    """The facts of a snapshot, without the provenance that names files."""
    return (snap.host, snap.gpus, snap.links, snap.nics, snap.versions, snap.env)


def test_two_files_merge_into_one_node():
    snap = ingest(fixture(L40S_TOPO), fixture(L40S_SMI), hostname="shockwave")
    assert snap.hostname == "shockwave" and snap.origin == "ingest"
    gpu2 = snap.gpus[2]
    assert (gpu2.name, gpu2.pci_bus_id, gpu2.memory_total_mib, gpu2.numa_node, gpu2.cpu_affinity) == (
        "NVIDIA L40S",
        "00000000:CA:00.0",
        46068,
        1,
        "1,3,5,7,9,11",
    )
    assert snap.versions.driver == "580.119.02" and snap.versions.cuda_driver == "13.0"
    assert snap.sources["links"] == f"nvidia-smi topo -m ({L40S_TOPO})"
    assert snap.sources["gpus.pci_bus_id"] == f"nvidia-smi ({L40S_SMI})"
    assert snap.sources["versions.driver"] == f"nvidia-smi ({L40S_SMI})"
    assert snap.sources["host.hostname"] == "given by the caller"
    # what both lacked is missing, with a reason; what one gave is not
    assert snap.missing["gpus[0].uuid"] == "not in the pasted text"
    assert "gpus[0].name" not in snap.missing and "links.gpu_gpu" not in snap.missing
    assert snap.missing["versions.torch"] == "not in the pasted text"


def test_order_and_concatenation_do_not_change_the_facts():
    topo, smi = fixture(L40S_TOPO).read_text(), fixture(L40S_SMI).read_text()
    separate = ingest(fixture(L40S_TOPO), fixture(L40S_SMI))
    one_file = ingest(smi + "\n$ nvidia-smi topo -m\n" + topo)
    reversed_files = ingest(fixture(L40S_SMI), fixture(L40S_TOPO))
    assert facts(one_file) == facts(separate) == facts(reversed_files)
    assert one_file.missing == separate.missing
    assert one_file.sources["links"] == "nvidia-smi topo -m"  # raw text: no file name


def test_collect_env_and_topo_from_one_paste():
    text = fixture(A30_ENV).read_text() + "\n\n" + fixture(H100_P2P).read_text().replace("GPU4", "GPU9")
    with pytest.raises(ParseError):  # a broken p2p block after a good collect_env still fails, with one line
        ingest(text)
    snap = ingest(fixture(A30_TOPO).read_text() + "\n" + fixture(A30_ENV).read_text())
    assert snap.sources["links"].startswith("nvidia-smi topo -m")
    assert snap.sources["versions.torch"] == "collect_env"
    assert snap.sources["host.numa_nodes"] == "collect_env: lscpu NUMA node lines in collect_env's CPU section"
    assert [n.cpus for n in snap.host.numa_nodes] == ["0-23,48-71", "24-47,72-95"]
    alone = ingest(fixture(A30_ENV))
    assert alone.links == snap.links
    assert alone.sources["links"].endswith("the GPU Topology section (nvidia-smi topo -m)")


def test_p2p_and_topo_together():
    snap = ingest(fixture(H100_TOPO), fixture(H100_P2P))
    assert snap.links.label(0, 7) == "NV18"
    assert snap.links.p2p["read"][0][7] == "OK"
    assert "links.p2p" not in snap.missing


def test_blocks_from_different_machines_are_refused():
    with pytest.raises(ParseError) as info:
        ingest(fixture(H100_TOPO), fixture(L40S_SMI))
    message = str(info.value)
    assert "shows 8 GPUs (GPU0-GPU7)" in message and "shows 4 GPUs (GPU0-GPU3)" in message
    assert "\n" not in message


def test_hostname_from_prompt_beats_argument_and_comments_are_ignored():
    text = "# source: root@header-host:~# nvidia-smi topo -m\n(base) root@gpu-node-7:~# nvidia-smi topo -m\n" + SMALL_TOPO
    snap = ingest(text, hostname="given")
    assert snap.hostname == "gpu-node-7"
    assert snap.sources["host.hostname"] == "shell prompt"
    assert ingest(SMALL_TOPO, hostname="given").hostname == "given"
    assert ingest(SMALL_TOPO).hostname == "unknown-host"
    centos = "[admin@login01 ~]$ nvidia-smi topo -m\n" + SMALL_TOPO
    assert ingest(centos).hostname == "login01"


def test_nccl_lines_add_versions():
    snap = ingest(SMALL_TOPO + "\n" + fixture(NCCL_P4D).read_text())
    assert snap.versions.nccl_loaded == "2.27.7"
    assert "NCCL version 2.27.7+cuda13.0" in snap.sources["versions.nccl_loaded"]
    assert snap.hostname == "ip-172-31-3-153"


def test_sources_of_every_kind(tmp_path):
    path = tmp_path / "topo.txt"
    path.write_text(SMALL_TOPO)
    by_path = ingest(path)
    by_str_path = ingest(str(path))
    by_text = ingest(SMALL_TOPO)
    by_bytes = ingest(SMALL_TOPO.encode())
    assert facts(by_path) == facts(by_str_path) == facts(by_text) == facts(by_bytes)
    assert by_path.sources["links"] == "nvidia-smi topo -m (topo.txt)"
    utf16 = ingest(SMALL_TOPO.replace("\n", "\r\n").encode("utf-16"))
    assert facts(utf16) == facts(by_text)
    ansi = ingest(SMALL_TOPO.replace("GPU1\t", "\x1b[4mGPU1\x1b[0m\t"))
    assert facts(ansi) == facts(by_text)


def test_missing_file_and_no_input_are_one_line_errors(tmp_path):
    with pytest.raises(ParseError, match="no such file"):
        ingest(str(tmp_path / "nope.txt"))
    with pytest.raises(ParseError, match="no input given"):
        ingest()
    with pytest.raises(OSError):
        ingest(tmp_path / "nope.txt")  # a Path is always a path: the OS error says why
    (tmp_path / "junk.bin").write_bytes(b"\x00\x01garbage" * 10)
    with pytest.raises(ParseError, match=r"^junk.bin: input is binary data"):
        ingest(tmp_path / "junk.bin")


def test_p2p_capability_argument_when_the_text_has_none():
    text = "\tGPU0\tGPU1\n GPU0\tX\tCNS\n GPU1\tCNS\tX\n"
    snap = ingest(text, p2p_capability="w")
    assert list(snap.links.p2p) == ["write"]
    assert "given by the caller" in snap.sources["links.p2p.write"]
    snap = ingest("$ nvidia-smi topo -p2p n\n" + text, p2p_capability="w")
    assert list(snap.links.p2p) == ["nvlink"]  # the text wins


def test_environment_values_that_look_secret_are_redacted():
    text = fixture(A30_ENV).read_text() + "\n".join(
        [
            "NCCL_IB_HCA=mlx5_0",
            "NCCL_API_TOKEN=abc123",
            "MASTER_ADDR=https://alice:hunter2@head.example:29500",
            "HF_TOKEN=should-not-be-kept",
            "",
        ]
    )
    snap = ingest(text)
    assert snap.env["NCCL_IB_HCA"] == "mlx5_0"
    assert snap.env["NCCL_API_TOKEN"] == "<redacted>"
    assert snap.env["MASTER_ADDR"] == "https://alice:<redacted>@head.example:29500"
    assert "HF_TOKEN" not in snap.env
    assert "hunter2" not in str(snap.to_dict()) and "abc123" not in str(snap.to_dict())


def test_ingest_imports_nothing_heavy():
    code = (
        "import sys, ncclnb; from ncclnb.collectors.ingest import ingest; "
        f"ingest({SMALL_TOPO!r}); import ncclnb.recorded as m; m.load('aws-p4d'); "
        "print([x for x in ('torch', 'pynvml', 'plotly', 'pandas', 'ipywidgets') if x in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_public_names():
    import ncclnb

    assert ncclnb.ingest is ingest
    assert "hgx-h100" in ncclnb.machines()
