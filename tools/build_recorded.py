"""Regenerate the bundled machines from the public captures, through ``ingest``.

    .venv/bin/python tools/build_recorded.py [--fixtures tests/data/public_captures] [--check]

Each recipe names fixture files (``tests/data/public_captures`` in the repository, or
``tools/constructed/`` for the one topology written by hand) and the
description stored with the machine. ``--check`` compares a fresh ingest
with the bundled JSON instead of writing, and exits 1 when they differ.
Provenance tiers are those of the captures' PROVENANCE.md: G = byte-exact from a
pinned git commit, F = full text of a public issue/file, I = verbatim
excerpt from an issues corpus (may be cut).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from ncclnb.collectors.ingest import ingest
from ncclnb.model import NodeSnapshot
from ncclnb.model.words import how_many
from ncclnb.recorded import DATA

# a tool of the repository, not of the wheel: its inputs are the repository's
HERE = Path(__file__).resolve().parent
CONSTRUCTED = HERE / "constructed"
DEFAULT_FIXTURES = HERE.parent / "tests" / "data" / "public_captures"


@dataclass(frozen=True)
class Recipe:
    files: tuple[str, ...]  # fixture file names; "constructed/<name>" for ours
    description: str
    hostname: Optional[str] = None  # only when the capture names the host; else the bundled name


RECIPES: dict[str, Recipe] = {
    "hgx-h100": Recipe(
        ("topo_m__hgx-h100-8gpu__stas00-ml-engineering.txt", "p2p__hgx-h100-8gpu-read-all-ok__stas00-ml-engineering.txt"),
        "8-GPU H100 SXM class node: NV18 between all pairs, 2 NUMA nodes, P2P read OK everywhere. "
        "Source: github.com/stas00/ml-engineering (topo -m and topo -p2p r posts, tier G; two posts "
        "of 8x H100 nodes combined); GPU names are not in the captures.",
    ),
    "dgx-a100": Recipe(
        ("topo_m__dgx-a100-12nic__gengwg-cheatsheets.txt",),
        "NVIDIA DGX A100: 8x A100 SXM4, NV12 via NVSwitch, 12 mlx5 NICs (old column names), "
        "8 NUMA nodes. Source: github.com/gengwg/cheatsheets gpu.md, nvidia-smi topo -m (tier G).",
    ),
    "aws-p4d": Recipe(
        ("topo_m__aws-p4d.24xlarge__gnosia93-training-on-eks.txt",),
        "AWS EC2 p4d.24xlarge: 8x A100-SXM4-40GB, NV12, 2 NUMA nodes (EFA NICs not listed by "
        "nvidia-smi). Source: github.com/gnosia93/training-on-eks appendix a2, nvidia-smi topo -m (tier G).",
    ),
    "aws-p5": Recipe(
        ("topo_m__aws-p5.48xlarge__gnosia93-training-on-eks.txt",),
        "AWS EC2 p5.48xlarge as labelled by the poster: 8x H100 SXM, NV18, 2 NUMA nodes (EFA NICs "
        "not listed). Source: github.com/gnosia93/training-on-eks chapter c7, nvidia-smi topo -m (tier G).",
    ),
    "aws-g6e-12xlarge": Recipe(
        ("topo_m__aws-g6e.12xlarge-4x-l40s__gnosia93-training-on-eks.txt",),
        "AWS EC2 g6e.12xlarge as labelled by the poster: 4x L40S PCIe, all NODE, one NUMA node, no "
        "NVLink. Source: github.com/gnosia93/training-on-eks chapter c7, nvidia-smi topo -m (tier G).",
    ),
    "l40s-2socket": Recipe(
        ("topo_m__4x-l40s-pcie-2nic-2socket__kagaho-vllm-l40s.txt", "nvidia_smi__4x-l40s-drv580-cuda13__kagaho-vllm-l40s.txt"),
        "Host 'shockwave': 4x NVIDIA L40S PCIe on two sockets (NODE within, SYS across), 2 mlx5 NICs, "
        "driver 580.119.02. Source: github.com/kagaho/VLLM_Serve_llama3-70b-awq_on_L40S_with_Tensor_"
        "Parallelism_2, nvidia-smi topo -m and nvidia-smi (tier G).",
        hostname="shockwave",
    ),
    "a30-nvlink-pairs": Recipe(
        (
            "topo_m__4x-a30-nvlink-bridge-pairs-1nic__vllm-issue-29070.txt",
            "collect_env__vllm-4x-a30-nvlink-pairs__vllm-issue-29070.txt",
        ),
        "4x NVIDIA A30 PCIe with NVLink bridge pairs (GPU0-1 NV4, GPU2-3 NV4, SYS across sockets), "
        "1 mlx5 NIC, torch 2.8.0+cu128. Source: https://github.com/vllm-project/vllm/issues/29070, "
        "topo -m and vLLM collect_env (tier F).",
    ),
    "rtx4090-8x-sys": Recipe(
        ("topo_m__8x-rtx4090-server-all-sys__go-gpuallocator-issue-17.txt",),
        "8x RTX 4090 server (per the poster): every GPU pair SYS, 2 NUMA nodes, 2 NICs without "
        "names. Source: https://github.com/NVIDIA/go-gpuallocator/issues/17, nvidia-smi topo -m "
        "(tier I: issues-corpus excerpt).",
    ),
    "rtx3090-8x-pix": Recipe(
        ("topo_m__8gpu-pcie-server-pix-pairs__nccl-issue-1439.txt",),
        "8-GPU PCIe server (poster trains on RTX 3090s; names not in the capture): PIX pairs, PHB "
        "within a socket, SYS across, 2 NUMA nodes. Source: https://github.com/NVIDIA/nccl/issues/1439, "
        "nvidia-smi topo -m (tier I: issues-corpus excerpt).",
    ),
    "rtx2080ti-2x": Recipe(
        ("nvidia_smi__2x-rtx2080ti-drv550-cuda12.4__anthony-hoo-autodl.txt",),
        "AutoDL cloud container: 2x RTX 2080 Ti, driver 550.90.07, CUDA 12.4 (no topology in the "
        "capture). Source: github.com/Anthony-Hoo/Anthony-Hoo.github.io, nvidia-smi (tier G).",
    ),
    "seed001-10x-pcie": Recipe(
        ("nvidia_smi__10x-quadro-rtx8000-drv470__gengwg-cheatsheets.txt", "constructed/topo_m__seed001-10x-pcie.txt"),
        "CONSTRUCTED to match seed 001 (a job on GPUs 6,7,8,9 that straddle two NUMA nodes): the "
        "topology (GPUs 0-7 on socket 0, 8-9 on socket 1, SYS across) was written by hand in "
        "tools/constructed/; GPU names, bus ids, memory and driver 470.63.01 are the real "
        "10x Quadro RTX 8000 nvidia-smi from github.com/gengwg/cheatsheets (tier G).",
    ),
    # beyond the required set: edge cases the checks and views should meet
    "rtx5090-2x-gns": Recipe(
        ("topo_m__2x-rtx5090-desktop-phb__club-3090-issue-1140.txt", "p2p__2x-rtx5090-rw-gns__club-3090-issue-1140.txt"),
        "2x RTX 5090 desktop on a Threadripper PRO (per the poster): PHB, one NUMA node, P2P GNS "
        "(GPU not supported) with the stock driver. Source: https://github.com/noonghunna/club-3090/"
        "issues/1140, topo -m and topo -p2p (tier I).",
    ),
    "rtx-a6000-3x-nvlink-pair": Recipe(
        ("topo_m__3x-rtx-a6000-nvlink-bridge-pair__siboehm-bench.txt",),
        "Workstation with 3x RTX A6000 (per the poster): GPU0-GPU1 NVLink bridge (NV4), GPU2 PCIe "
        "only (NODE), one NUMA node. Source: github.com/siboehm/bench, nvidia-smi topo -m (tier G).",
    ),
    "dgx1-pcie-mp": Recipe(
        ("topo_m__dgx1-pcionly-mp-flag__gengwg-cheatsheets.txt",),
        "NVIDIA DGX-1, PCIe-only view (nvidia-smi topo -mp, so no NV# labels): PIX/PHB/SYS, 4 mlx5 "
        "NICs, 2 NUMA nodes. Source: github.com/gengwg/cheatsheets gpu.md (tier G).",
    ),
    "tesla-p4-1x": Recipe(
        ("topo_m__1x-tesla-p4-numa-na__hami-pr-99.txt",),
        "Single Tesla P4 node (per the poster) whose topo -m shows NUMA Affinity N/A. Source: "
        "https://github.com/Project-HAMi/HAMi/pull/99 (tier I).",
    ),
}


def build(name: str, fixtures: Path) -> NodeSnapshot:
    """Ingest one recipe's files into its snapshot."""
    recipe = RECIPES[name]
    paths = []
    for file in recipe.files:
        path = CONSTRUCTED / file.split("/", 1)[1] if file.startswith("constructed/") else fixtures / file
        if not path.is_file():
            raise FileNotFoundError(f"{name}: fixture {path} is missing")
        paths.append(path)
    return ingest(*paths, hostname=recipe.hostname or name, description=recipe.description)


def to_json(snapshot: NodeSnapshot) -> str:
    """The bundled file text: stable key order, one trailing newline."""
    return json.dumps(snapshot.to_dict(), indent=1, ensure_ascii=False) + "\n"


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="tools/build_recorded.py", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--fixtures",
        type=Path,
        default=DEFAULT_FIXTURES,
        help="folder of the public captures (default: tests/data/public_captures)",
    )
    parser.add_argument("--check", action="store_true", help="compare with the bundled JSON instead of writing")
    args = parser.parse_args(argv)
    if not args.fixtures.is_dir():
        print(f"build: error: fixtures folder {args.fixtures} not found", file=sys.stderr)
        return 2
    stale = []
    for name in RECIPES:
        try:
            text = to_json(build(name, args.fixtures))
        except (OSError, ValueError) as exc:
            print(f"build: error: {name}: {exc}", file=sys.stderr)
            return 2
        target = DATA / f"{name}.json"
        if args.check:
            current = target.read_text(encoding="utf-8") if target.is_file() else None
            if current != text:
                stale.append(name)
                print(f"{name}: {'missing' if current is None else 'differs from a fresh ingest'}")
        else:
            DATA.mkdir(exist_ok=True)
            target.write_text(text, encoding="utf-8")
            print(f"wrote {target.relative_to(HERE.parent)}")
    if args.check:
        if stale:
            print(f"{how_many(len(stale), 'bundled machine')} out of date: run .venv/bin/python tools/build_recorded.py")
            return 1
        print(f"all {len(RECIPES)} bundled machines match the fixtures")
    return 0


if __name__ == "__main__":
    sys.exit(main())
