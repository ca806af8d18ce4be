"""Parsers against every real capture in tests/data/public_captures, with expectations
written by reading each file; malformed input; a small fuzz."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from ncclnb.collectors.ingest import ingest
from ncclnb.collectors.parsers import (
    ParseError,
    detect,
    parse_nccl_version,
    parse_nvidia_smi,
    parse_p2p,
    parse_topo_m,
    split_blocks,
)
from tests.conftest import CAPTURES

PREFIXES = ("topo_m__", "p2p__", "nvidia_smi__", "collect_env__")


def fixture(name: str) -> Path:
    path = CAPTURES / name
    assert path.is_file(), f"{path} is missing from the repository"
    return path


def off_diagonal(n: int, label: str) -> list[list[str]]:
    return [["X" if i == j else label for j in range(n)] for i in range(n)]


# Expectations read off each file by hand. Keys:
#   n: GPU count; labels: {(i, j): label}; all: label of every off-diagonal pair;
#   nics: NIC names; gpu_nic: {(gpu, nic): label}; cpu: CPU affinity per GPU;
#   numa: NUMA node per GPU; p2p: (capability, {(i, j): status}); names; bus;
#   mem; versions: {field: value}; host: {field: value}; numa_nodes: {id: cpus}
EXPECT = {
    "topo_m__1x-tesla-p4-numa-na__hami-pr-99.txt": dict(n=1, cpu=["0-7"], numa=[None], nics=[], numa_nodes={}),
    "topo_m__2x-rtx5090-desktop-phb__club-3090-issue-1140.txt": dict(
        n=2, all="PHB", cpu=["0-63"] * 2, numa=[0, 0], nics=[], numa_nodes={0: "0-63"}
    ),
    "topo_m__3x-rtx-a6000-nvlink-bridge-pair__siboehm-bench.txt": dict(
        n=3,
        labels={(0, 1): "NV4", (1, 0): "NV4", (0, 2): "NODE", (2, 1): "NODE"},
        cpu=["0-31,64-95"] * 3,
        numa=[0, 0, 0],
        nics=[],
    ),
    "topo_m__4x-a30-nvlink-bridge-pairs-1nic__vllm-issue-29070.txt": dict(
        n=4,
        labels={(0, 1): "NV4", (2, 3): "NV4", (0, 2): "SYS", (1, 3): "SYS"},
        nics=["mlx5_0"],
        gpu_nic={(0, 0): "SYS", (2, 0): "PXB", (3, 0): "PIX"},
        cpu=["0-23,48-71"] * 2 + ["24-47,72-95"] * 2,
        numa=[0, 0, 1, 1],
    ),
    "topo_m__4x-l40s-pcie-2nic-2socket__kagaho-vllm-l40s.txt": dict(
        n=4,
        labels={(0, 1): "NODE", (0, 2): "SYS", (1, 3): "SYS", (2, 3): "NODE"},
        nics=["mlx5_0", "mlx5_1"],
        gpu_nic={(0, 0): "SYS", (1, 1): "SYS", (2, 0): "NODE", (3, 1): "NODE"},
        cpu=["0,2,4,6,8,10"] * 2 + ["1,3,5,7,9,11"] * 2,
        numa=[0, 0, 1, 1],
        numa_nodes={0: "0,2,4,6,8,10", 1: "1,3,5,7,9,11"},
    ),
    "topo_m__5x-consumer-gpu-epyc-node-phb__aikitoria-ogkm-issue-13.txt": dict(
        n=5, labels={(0, 1): "NODE", (2, 4): "NODE", (3, 4): "PHB", (4, 3): "PHB"}, cpu=["0-63"] * 5, numa=[0] * 5, nics=[]
    ),
    "topo_m__8gpu-pcie-server-pix-pairs__nccl-issue-1439.txt": dict(
        n=8,
        labels={(0, 1): "PIX", (0, 2): "PHB", (0, 4): "SYS", (6, 7): "PIX", (4, 6): "PHB", (3, 7): "SYS"},
        cpu=["0-13,28-41"] * 4 + ["14-27,42-55"] * 4,
        numa=[0] * 4 + [1] * 4,
        nics=[],
        numa_nodes={0: "0-13,28-41", 1: "14-27,42-55"},
    ),
    "topo_m__8x-rtx4090-server-all-sys__go-gpuallocator-issue-17.txt": dict(
        n=8,
        all="SYS",
        nics=["NIC0", "NIC1"],
        gpu_nic={(6, 0): "PHB", (6, 1): "PHB", (0, 0): "SYS", (7, 1): "SYS"},
        cpu=["0-55,112-167"] * 4 + ["56-111,168-223"] * 4,
        numa=[0] * 4 + [1] * 4,
    ),
    "topo_m__aws-g6e.12xlarge-4x-l40s__gnosia93-training-on-eks.txt": dict(
        n=4, all="NODE", cpu=["0-47"] * 4, numa=[0] * 4, nics=[]
    ),
    "topo_m__aws-p4d.24xlarge__gnosia93-training-on-eks.txt": dict(
        n=8, all="NV12", cpu=["0-23,48-71"] * 4 + ["24-47,72-95"] * 4, numa=[0] * 4 + [1] * 4, nics=[]
    ),
    "topo_m__aws-p5.48xlarge__gnosia93-training-on-eks.txt": dict(
        n=8, all="NV18", cpu=["0-47,96-143"] * 4 + ["48-95,144-191"] * 4, numa=[0] * 4 + [1] * 4, nics=[]
    ),
    "topo_m__cloud-4x-h100-sxm-nv18-subset-no-nic__mystous-vllm_hybrid.txt": dict(
        n=4, all="NV18", cpu=["0-103"] * 4, numa=[0] * 4, nics=[]
    ),
    "topo_m__dgx-a100-12nic__gengwg-cheatsheets.txt": dict(
        n=8,
        all="NV12",
        nics=[f"mlx5_{k}" for k in range(12)],
        gpu_nic={(0, 0): "PXB", (0, 1): "PXB", (0, 2): "SYS", (2, 2): "PXB", (6, 8): "PXB", (7, 11): "SYS"},
        cpu=["48-63,176-191"] * 2 + ["16-31,144-159"] * 2 + ["112-127,240-255"] * 2 + ["80-95,208-223"] * 2,
        numa=[3, 3, 1, 1, 7, 7, 5, 5],
        numa_nodes={1: "16-31,144-159", 3: "48-63,176-191", 5: "80-95,208-223", 7: "112-127,240-255"},
    ),
    "topo_m__dgx1-pcionly-mp-flag__gengwg-cheatsheets.txt": dict(
        n=8,
        labels={(0, 1): "PIX", (0, 2): "PHB", (0, 4): "SYS", (6, 7): "PIX", (7, 4): "PHB"},
        nics=["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"],
        gpu_nic={(0, 0): "PIX", (0, 1): "PHB", (0, 2): "SYS", (7, 3): "PIX", (4, 2): "PIX"},
        cpu=["0-19,40-59"] * 4 + ["20-39,60-79"] * 4,
        numa=[0] * 4 + [1] * 4,
    ),
    "topo_m__hgx-h100-8gpu__stas00-ml-engineering.txt": dict(
        n=8, all="NV18", cpu=["0-51,104-155"] * 4 + ["52-103,156-207"] * 4, numa=[0] * 4 + [1] * 4, nics=[]
    ),
    "p2p__2x-l4-read-cns__stas00-ml-engineering.txt": dict(n=2, p2p=("read", {(0, 1): "CNS", (1, 0): "CNS", (0, 0): "X"})),
    "p2p__2x-rtx5090-rw-gns__club-3090-issue-1140.txt": dict(n=2, p2p=("read", {(0, 1): "GNS", (1, 0): "GNS"}), p2p_assumed=True),
    "p2p__5x-consumer-gpu-pcie-all-ok-patched-driver__aikitoria-ogkm-issue-13.txt": dict(
        n=5, p2p=("prop", {(0, 4): "OK", (3, 1): "OK", (2, 2): "X"})
    ),
    "p2p__hgx-h100-8gpu-read-all-ok__stas00-ml-engineering.txt": dict(
        n=8, p2p=("read", {(0, 7): "OK", (7, 0): "OK", (5, 5): "X", (3, 4): "OK"})
    ),
    "nvidia_smi__10x-quadro-rtx8000-drv470__gengwg-cheatsheets.txt": dict(
        n=10,
        names=["Quadro RTX 8000"] * 10,
        bus=[
            "00000000:12:00.0",
            "00000000:13:00.0",
            "00000000:14:00.0",
            "00000000:48:00.0",
            "00000000:49:00.0",
            "00000000:89:00.0",
            "00000000:8A:00.0",
            "00000000:C0:00.0",
            "00000000:C1:00.0",
            "00000000:C2:00.0",
        ],
        mem=[48601] * 10,
        versions={"driver": "470.63.01", "cuda_driver": "11.4"},
        compute="Default",
    ),
    "nvidia_smi__2x-rtx2080ti-drv550-cuda12.4__anthony-hoo-autodl.txt": dict(
        n=2,
        names=["NVIDIA GeForce RTX 2080 Ti"] * 2,
        bus=["00000000:B4:00.0", "00000000:B5:00.0"],
        mem=[11264] * 2,
        versions={"driver": "550.90.07", "cuda_driver": "12.4"},
        compute="Default",
    ),
    "nvidia_smi__4x-l40s-drv580-cuda13__kagaho-vllm-l40s.txt": dict(
        n=4,
        names=["NVIDIA L40S"] * 4,
        bus=["00000000:4A:00.0", "00000000:61:00.0", "00000000:CA:00.0", "00000000:E1:00.0"],
        mem=[46068] * 4,
        versions={"driver": "580.119.02", "cuda_driver": "13.0"},
        compute="Default",
    ),
    "collect_env__onediff-8x-rtx3090-xeon4314__siliconflow-onediff.txt": dict(
        n=8,
        names=["NVIDIA GeForce RTX 3090"] * 8,
        versions={
            "torch": "2.3.1+cu121",
            "torch_cuda": "12.1",
            "driver": "535.104.05",
            "python": "3.10.13",
            "nccl_pip": {},
            "frameworks": {"pytorch-lightning": "1.9.4", "transformers": "4.42.4"},
        },
        host={
            "os": "Ubuntu 20.04.5 LTS",
            "kernel": "5.4.0-182-generic",
            "cpu_count": 64,
            "cpu_model": "Intel(R) Xeon(R) Silver 4314 CPU @ 2.40GHz",
        },
        numa_nodes={0: "0-15,32-47", 1: "16-31,48-63"},
    ),
    "collect_env__onediff-8x-rtx4090-epyc7543-8numa__siliconflow-onediff.txt": dict(
        n=8,
        names=["NVIDIA GeForce RTX 4090"] * 8,
        versions={
            "torch": "2.3.0+cu121",
            "torch_cuda": "12.1",
            "driver": "550.90.07",
            "python": "3.10.14",
            "frameworks": {"pytorch-lightning": "1.9.4", "transformers": "4.30.2"},
        },
        host={
            "os": "Ubuntu 22.04.3 LTS",
            "kernel": "5.15.0-92-generic",
            "cpu_count": 128,
            "cpu_model": "AMD EPYC 7543 32-Core Processor",
        },
        numa_nodes={
            0: "0-7,64-71",
            1: "8-15,72-79",
            2: "16-23,80-87",
            3: "24-31,88-95",
            4: "32-39,96-103",
            5: "40-47,104-111",
            6: "48-55,112-119",
            7: "56-63,120-127",
        },
    ),
    "collect_env__torch-1.12-3x-rtx3090__yanhui-dataset.txt": dict(
        n=3,
        names=["NVIDIA GeForce RTX 3090"] * 3,
        versions={
            "torch": "1.12.1+cu116",
            "torch_cuda": "11.6",
            "driver": "515.65.01",
            "python": "3.9.13",
            "nccl_pip": {},
            "frameworks": {},
        },
        host={"os": "Ubuntu 22.04.1 LTS", "kernel": "5.15.0-48-generic", "cpu_model": None, "cpu_count": None},
        numa_nodes={},
    ),
    "collect_env__vllm-2x-l40s-container__kagaho-vllm-l40s.txt": dict(
        n=2,
        names=["NVIDIA L40S"] * 2,
        labels={(0, 1): "NODE"},
        nics=["mlx5_0", "mlx5_1"],
        gpu_nic={(0, 0): "SYS", (1, 1): "SYS"},
        cpu=["0,2,4,6,8,10"] * 2,
        numa=[0, 0],
        versions={
            "torch": "2.9.1+cu129",
            "torch_cuda": "12.9",
            "driver": "580.119.02",
            "python": "3.12.12",
            "nccl_pip": {"nvidia-nccl-cu12": "2.27.5"},
            "frameworks": {"transformers": "4.57.6", "vllm": "0.16.0"},
        },
        host={
            "os": "Ubuntu 22.04.5 LTS",
            "kernel": "6.18.13-200.fc43.x86_64",
            "cpu_count": 128,
            "cpu_model": "INTEL(R) XEON(R) PLATINUM 8562Y+",
        },
        env={"CUDA_VERSION": "12.9.1", "TORCH_CUDA_ARCH_LIST": "7.0 7.5 8.0 8.9 9.0 10.0 12.0"},
        env_absent=["VLLM_USAGE_SOURCE", "TORCHINDUCTOR_CACHE_DIR", "PYTORCH_NVML_BASED_CUDA_CHECK"],
    ),
    "collect_env__vllm-4x-a30-nvlink-pairs__vllm-issue-29070.txt": dict(
        n=4,
        names=["NVIDIA A30"] * 4,
        labels={(0, 1): "NV4", (2, 3): "NV4", (1, 2): "SYS"},
        nics=["mlx5_0"],
        gpu_nic={(3, 0): "PIX"},
        cpu=["0-23,48-71"] * 2 + ["24-47,72-95"] * 2,
        numa=[0, 0, 1, 1],
        versions={
            "torch": "2.8.0+cu128",
            "torch_cuda": "12.8",
            "driver": "535.274.02",
            "python": "3.12.11",
            "nccl_pip": {"nvidia-nccl-cu12": "2.27.3"},
            "frameworks": {"transformers": "4.57.0", "vllm": "0.11.1.dev12+g5ded9e9aa"},
        },
        host={
            "os": "Ubuntu 22.04.5 LTS",
            "kernel": "5.15.0-160-generic",
            "cpu_count": 96,
            "cpu_model": "Intel(R) Xeon(R) Gold 6342 CPU @ 2.80GHz",
        },
        numa_nodes={0: "0-23,48-71", 1: "24-47,72-95"},
        env={"NCCL_VERSION": "2.25.1-1", "CUDA_HOME": "/usr/local/cuda", "CUDA_MODULE_LOADING": "LAZY"},
    ),
}


def test_every_fixture_of_the_ingestible_kinds_has_an_expectation():
    present = sorted(p.name for p in CAPTURES.iterdir() if p.name.startswith(PREFIXES))
    assert present, "no fixtures found"
    assert [n for n in present if n not in EXPECT] == []
    assert [n for n in EXPECT if n not in present] == []


@pytest.mark.parametrize("name", sorted(EXPECT))
def test_ingest_matches_what_the_fixture_says(name):
    want = EXPECT[name]
    snap = ingest(fixture(name))
    assert snap.origin == "ingest"
    assert len(snap.gpus) == want["n"]
    assert [g.index for g in snap.gpus] == list(range(want["n"]))
    links = snap.links
    if "all" in want:
        assert [list(r) for r in links.gpu_gpu] == off_diagonal(want["n"], want["all"])
    for (i, j), label in want.get("labels", {}).items():
        assert links.label(i, j) == label, (i, j)
    if name.startswith("topo_m__") or "labels" in want:
        assert len(links.gpu_gpu) == want["n"] and all(len(r) == want["n"] for r in links.gpu_gpu)
        assert all(links.gpu_gpu[i][i] == "X" for i in range(want["n"]))
    if "nics" in want:
        assert list(links.nic_names) == want["nics"]
        assert [nic.name for nic in snap.nics] == want["nics"]
        assert all(len(row) == len(want["nics"]) for row in links.gpu_nic)
    for (g, k), label in want.get("gpu_nic", {}).items():
        assert links.gpu_nic[g][k] == label, (g, k)
    if "cpu" in want:
        assert [g.cpu_affinity for g in snap.gpus] == want["cpu"]
    if "numa" in want:
        assert [g.numa_node for g in snap.gpus] == want["numa"]
    if "p2p" in want:
        cap, cells = want["p2p"]
        assert list(links.p2p) == [cap]
        for (i, j), status in cells.items():
            assert links.p2p[cap][i][j] == status
        assumed = "assumed" in snap.sources[f"links.p2p.{cap}"]
        assert assumed == want.get("p2p_assumed", False)
    else:
        assert links.p2p == {}
    if "names" in want:
        assert [g.name for g in snap.gpus] == want["names"]
    if "bus" in want:
        assert [g.pci_bus_id for g in snap.gpus] == want["bus"]
    if "mem" in want:
        assert [g.memory_total_mib for g in snap.gpus] == want["mem"]
    if "compute" in want:
        assert {g.compute_mode for g in snap.gpus} == {want["compute"]}
    for key, value in want.get("versions", {}).items():
        assert getattr(snap.versions, key) == value, key
    for key, value in want.get("host", {}).items():
        assert getattr(snap.host, key) == value, key
    if "numa_nodes" in want:
        assert {n.id: n.cpus for n in snap.host.numa_nodes} == want["numa_nodes"]
    for key, value in want.get("env", {}).items():
        assert snap.env[key] == value
    for key in want.get("env_absent", []):
        assert key not in snap.env
    assert snap.hostname == "unknown-host"  # no capture shows a prompt outside its # header
    # round-trips through JSON unchanged
    assert type(snap).from_dict(json.loads(json.dumps(snap.to_dict()))) == snap


def test_na_and_absent_facts_say_why():
    p4 = ingest(fixture("topo_m__1x-tesla-p4-numa-na__hami-pr-99.txt"))
    assert p4.missing["gpus[0].numa_node"] == "nvidia-smi topo -m shows NUMA Affinity N/A"
    assert p4.missing["versions.driver"] == "not in the pasted text"
    assert "host.numa_nodes" in p4.missing
    smi = ingest(fixture("nvidia_smi__10x-quadro-rtx8000-drv470__gengwg-cheatsheets.txt"))
    assert smi.missing["gpus[9].mig_mode"] == "nvidia-smi shows MIG M. N/A"
    assert smi.missing["links.gpu_gpu"].startswith("not in the pasted text")
    old = ingest(fixture("topo_m__3x-rtx-a6000-nvlink-bridge-pair__siboehm-bench.txt"))
    assert "gpus[0].numa_node" not in old.missing
    torch112 = ingest(fixture("collect_env__torch-1.12-3x-rtx3090__yanhui-dataset.txt"))
    assert torch112.missing["host.cpu_model"] == "not in the pasted text"


def test_detect_names_each_kind():
    for name in EXPECT:
        kind = detect(fixture(name).read_text(encoding="utf-8"))
        assert kind == name.split("__")[0], name
    nccl = fixture("nccl_info__aws-p4d-1node-4rank-p2p-cumem__gnosia93-training-on-eks.txt").read_text()
    assert detect(nccl) == "nccl_version"


def test_nccl_log_lines_give_version_driver_and_host():
    text = fixture("nccl_info__aws-p4d-1node-4rank-p2p-cumem__gnosia93-training-on-eks.txt").read_text()
    part = parse_nccl_version(text)
    assert part.versions == {"nccl_loaded": "2.27.7", "cuda_driver": "13.0"}
    assert part.host == {"hostname": "ip-172-31-3-153"}
    two_hosts = fixture("nccl_info__dgx-h100-2node-1rank-each-roce-init-excerpt__nccl-tests-issue-185.txt")
    snap = ingest(two_hosts)
    assert snap.versions.nccl_loaded == "2.19.3" and snap.versions.cuda_driver == "12.0"
    assert snap.hostname == "unknown-host"  # two hosts in one log: not guessed


# ---------------------------------------------------------------- malformed


def _hgx_topo() -> str:
    return fixture("topo_m__hgx-h100-8gpu__stas00-ml-engineering.txt").read_text()


def _one_line_error(call, *args, **kwargs) -> str:
    with pytest.raises(ParseError) as info:
        call(*args, **kwargs)
    message = str(info.value)
    assert "\n" not in message and message
    return message


def test_truncated_topo_is_refused():
    lines = _hgx_topo().splitlines()
    cut = "\n".join(lines[: lines.index(next(ln for ln in lines if ln.startswith("GPU4")))])
    assert "no row for GPU4" in _one_line_error(ingest, cut)
    header_only = "\n".join(ln for ln in lines if not ln.startswith("GPU"))
    assert "no rows follow" in _one_line_error(ingest, header_only)


def test_topo_with_a_missing_column_is_refused():
    lines = _hgx_topo().splitlines()
    row = next(i for i, ln in enumerate(lines) if ln.startswith("GPU3"))
    cells = lines[row].split()
    lines[row] = "\t".join(cells[:3] + cells[4:])
    msg = _one_line_error(parse_topo_m, "\n".join(lines))
    assert msg == "topo -m: row GPU3 has 9 cells, header has 10 columns"
    # a column missing from the header instead: every row is one too long
    lines = _hgx_topo().splitlines()
    head = next(i for i, ln in enumerate(lines) if ln.split()[:1] == ["GPU0"] and "Affinity" in ln)
    lines[head] = lines[head].replace("GPU7", "")
    assert "has 10 cells, header has 9 columns" in _one_line_error(parse_topo_m, "\n".join(lines))


def test_topo_cell_errors_name_row_and_column():
    text = "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\nGPU0\t X \tNV4\t0-7\t0\nGPU1\tFOO\t X \t0-7\t0\n"
    assert _one_line_error(parse_topo_m, text) == "topo -m: row GPU1, column GPU0: 'FOO' is not a link label"
    text = "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\nGPU0\t X \tNV4\t0-7\t0\nGPU1\tNV4\tPIX\t0-7\t0\n"
    assert "row GPU1, column GPU1" in _one_line_error(parse_topo_m, text)
    text = "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\nGPU0\t X \tNV4\t0-7\tzero\nGPU1\tNV4\t X \t0-7\t0\n"
    assert "NUMA Affinity 'zero' is not valid" in _one_line_error(parse_topo_m, text)


def test_topo_row_with_trailing_cells_left_empty_is_read():
    text = "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\nGPU0\t X \tSYS\t0-7\nGPU1\tSYS\t X \t8-15\t1\t\tN/A\n"
    part = parse_topo_m(text)
    assert part.gpus[0] == {"cpu_affinity": "0-7", "numa_node": None}
    assert part.missing["gpus[0].numa_node"] == "the NUMA Affinity cell of GPU0 is empty in the text"
    assert part.gpus[1] == {"cpu_affinity": "8-15", "numa_node": 1}


def test_p2p_errors_and_capability():
    base = "        GPU0    GPU1\n GPU0   X       OK\n GPU1   OK      X\n"
    assert parse_p2p(base).links["p2p"] == {"read": (("X", "OK"), ("OK", "X"))}
    assert "assumed read" in parse_p2p(base).notes["links.p2p.read"]
    assert list(parse_p2p("$ nvidia-smi topo -p2p w\n" + base).links["p2p"]) == ["write"]
    assert list(parse_p2p("nvidia-smi topo -p2p n\n" + base).links["p2p"]) == ["nvlink"]
    given = parse_p2p(base, capability="a")
    assert list(given.links["p2p"]) == ["atomics"] and "given by the caller" in given.notes["links.p2p.atomics"]
    assert "'MAYBE' is not a P2P status" in _one_line_error(parse_p2p, base.replace("OK      X", "MAYBE   X"))
    assert "row GPU1 has 1 cells, header has 2 columns" in _one_line_error(parse_p2p, base.replace("OK      X", "X"))
    assert "no row for GPU1" in _one_line_error(parse_p2p, base.rsplit("\n", 2)[0])
    assert "unknown capability" in _one_line_error(parse_p2p, base, capability="z")


def test_truncated_nvidia_smi_is_refused():
    text = fixture("nvidia_smi__2x-rtx2080ti-drv550-cuda12.4__anthony-hoo-autodl.txt").read_text()
    lines = text.splitlines()
    cut = "\n".join(lines[: next(i for i, ln in enumerate(lines) if "00000000:B4:00.0" in ln) + 1])
    assert "GPU 0 is cut short" in _one_line_error(parse_nvidia_smi, cut)
    head_only = "\n".join(lines[: next(i for i, ln in enumerate(lines) if "Driver Version" in ln) + 1])
    assert "no GPU entries" in _one_line_error(parse_nvidia_smi, head_only)


def test_failed_nvidia_smi_is_a_missing_reason():
    text = (
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
        "Make sure that the latest NVIDIA driver is installed and running.\n"
    )
    snap = ingest(text)
    assert snap.gpus == ()
    assert snap.missing["gpus"].startswith("nvidia-smi: NVIDIA-SMI has failed")


@pytest.mark.parametrize(
    "data, expected",
    [
        ("", "empty input"),
        (b"", "empty input"),
        ("  \n\t\n", "empty input"),
        (bytes(range(256)) * 8, "binary data"),
        (b"\x89PNG\r\n\x1a\n" + b"\xff\xd8" * 50, "not UTF-8"),
        ('{"gpus": [1, 2]}', "this is JSON (object with keys gpus)"),
        ("[1, 2, 3]", "this is JSON (list)"),
        ('{"schema": "ncclnb.node/1", "host": {}}', "open it with ncclnb.load"),
        ("hello\nworld\n", "no nvidia-smi, nvidia-smi topo -m / -p2p, collect_env or NCCL version output found"),
        ("# only a comment\n", "only # comment lines"),
    ],
)
def test_bad_input_is_one_clear_line(data, expected):
    assert expected in _one_line_error(ingest, data)


# ---------------------------------------------------------------- fuzz


def _fixture_texts() -> list[str]:
    return [p.read_text(encoding="utf-8") for p in sorted(CAPTURES.iterdir()) if p.name.startswith(PREFIXES)]


TEXTS = _fixture_texts()


def _ingest_or_parse_error(data) -> None:
    try:
        snap = ingest(data)
    except ParseError as exc:
        assert "\n" not in str(exc)
        return
    assert type(snap).from_dict(snap.to_dict()) == snap


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.text(max_size=400), st.binary(max_size=400)))
def test_random_input_gives_a_snapshot_or_parse_error(data):
    if isinstance(data, str) and "\n" not in data:
        data += "\n"  # keep a one-line str from being taken as a path
    _ingest_or_parse_error(data)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_mutated_fixture_gives_a_snapshot_or_parse_error(data):
    text = data.draw(st.sampled_from(TEXTS))
    lines = text.splitlines()
    op = data.draw(st.sampled_from(["drop_line", "drop_token", "swap_token", "truncate", "dup_line", "insert"]))
    i = data.draw(st.integers(0, len(lines) - 1))
    if op == "drop_line":
        del lines[i]
    elif op == "dup_line":
        lines.insert(i, lines[i])
    elif op in ("drop_token", "swap_token") and lines[i].split():
        tokens = lines[i].split()
        k = data.draw(st.integers(0, len(tokens) - 1))
        if op == "drop_token":
            del tokens[k]
        else:
            tokens[k] = data.draw(st.sampled_from(["X", "NV4", "SYS", "OK", "N/A", "GPU0", "NIC0", "0-7", "", "|", "#"]))
        lines[i] = "\t".join(tokens)
    elif op == "insert":
        lines.insert(i, data.draw(st.text(max_size=40)))
    mutated = "\n".join(lines)
    if op == "truncate":
        mutated = text[: data.draw(st.integers(0, len(text)))]
    _ingest_or_parse_error(mutated + "\n")


def test_split_blocks_on_concatenated_text():
    topo = "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\nGPU0\t X \tNV4\t0-7\t0\nGPU1\tNV4\t X \t0-7\t0\n"
    p2p = "$ nvidia-smi topo -p2p w\n\tGPU0\tGPU1\n GPU0\tX\tOK\n GPU1\tOK\tX\n"
    blocks = split_blocks("some prose\n" + topo + "\nmore prose\n" + p2p + "NCCL version 2.21.5+cuda12.4\n")
    assert [b.kind for b in blocks] == ["topo_m", "p2p", "nccl_version"]
    assert blocks[0].line == 2
    assert "-p2p w" in blocks[1].text


def test_plain_collect_env_one_gpu_and_pip_over_conda():
    from ncclnb.collectors.parsers import parse_collect_env

    text = "\n".join(
        [
            "Collecting environment information...",
            "PyTorch version: 2.1.0+cu121",
            "CUDA used to build PyTorch: 12.1",
            "OS: Rocky Linux 8.8 (Green Obsidian) (x86_64)",
            "Python platform: Linux-4.18.0-477.10.1.el8_8.x86_64-x86_64-with-glibc2.28",
            "GPU models and configuration: GPU 0: NVIDIA A100-SXM4-80GB",
            "Nvidia driver version: Could not collect",
            "[pip3] nvidia-nccl-cu12==2.18.1",
            "[pip3] deepspeed==0.12.3",
            "[conda] nvidia-nccl-cu12          2.19.3                   pypi_0    pypi",
            "[conda] accelerate                0.25.0                   pypi_0    pypi",
            "",
        ]
    )
    part = parse_collect_env(text)
    assert part.gpus == {0: {"name": "NVIDIA A100-SXM4-80GB"}}
    assert part.versions["nccl_pip"] == {"nvidia-nccl-cu12": "2.18.1"}  # pip's line, not conda's
    assert part.versions["frameworks"] == {"deepspeed": "0.12.3", "accelerate": "0.25.0"}
    assert part.host["os"] == "Rocky Linux 8.8 (Green Obsidian)"
    assert part.host["kernel"] == "4.18.0-477.10.1.el8_8.x86_64"
    assert "driver" not in part.versions
    assert part.missing["versions.driver"] == "collect_env shows Nvidia driver version: Could not collect"
