"""Build the bundled cluster reports from the bundled recorded snapshots.

    python -m ncclnb.recorded.build_reports [--check]

Each report is *constructed*: real recorded machines (``data/<name>.json``,
built by ``build.py`` from public captures) placed side by side, with the
rank table, environment and versions that a seed incident describes. The
``description`` of each says so. ``--check`` rebuilds them in memory and
exits 1 if a bundled file differs (run by the tests, so the JSON cannot
drift from this script or from the snapshots it is made from).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from typing import Callable, Optional

from ..model import ClusterReport, Library, NodeSnapshot, RankEntry

DATA = Path(__file__).resolve().parent / "data"


def _snapshot(name: str) -> NodeSnapshot:
    from . import load

    snap = load(name)
    if not isinstance(snap, NodeSnapshot):
        raise ValueError(f"{name}: expected a bundled node snapshot")
    return snap


def _node(base: NodeSnapshot, hostname: str, env: Optional[dict] = None, **versions) -> NodeSnapshot:
    host = dataclasses.replace(base.host, hostname=hostname)
    v = dataclasses.replace(base.versions, **versions) if versions else base.versions
    missing = {k: m for k, m in base.missing.items() if not (k == "env" and env)}
    return dataclasses.replace(base, host=host, env={**base.env, **(env or {})}, versions=v, missing=missing,
                               origin="recorded", captured_at=None)


def _torchrun_ranks(snaps, per_node: int, world_size: int, set_device: bool = True) -> tuple[RankEntry, ...]:
    """Ranks as torchrun numbers them: node n runs n*per_node .. n*per_node+per_node-1."""
    out = []
    for n, s in enumerate(snaps):
        for local in range(per_node):
            gpu = s.gpus[local] if local < len(s.gpus) else None
            out.append(RankEntry(
                rank=n * per_node + local, host=s.hostname, local_rank=local, world_size=world_size,
                node_rank=n, pid=None, cuda_index=local if set_device else None,
                gpu_uuid=gpu.uuid if gpu else None, cpu_affinity=gpu.cpu_affinity if gpu else None))
    return tuple(out)


def seed000() -> ClusterReport:
    base = _snapshot("aws-g6e-12xlarge")
    env = {  # the seed's own exports, plus what its launcher set
        "NCCL_SOCKET_IFNAME": "eth0", "NCCL_DEBUG": "INFO", "NCCL_NSOCKS_PERTHREAD": "4",
        "NCCL_SOCKET_NTHREADS": "4", "WORLD_SIZE": "4", "MASTER_PORT": "29500",
    }
    nodes = [_node(base, f"seed000-node{n}", {**env, "NODE_RANK": str(n)}, torch="2.4.0",
                   frameworks={"pytorch_lightning": "1.9.5"}) for n in range(2)]
    # node 0 runs ranks 0..3, node 1 ranks 4..7, and every rank was told WORLD_SIZE=4:
    # NCCL's "Invalid rank requested : 7/4".
    ranks = _torchrun_ranks(nodes, per_node=4, world_size=4)
    return ClusterReport(
        snapshots=tuple(nodes), ranks=ranks,
        description=(
            "Seed 000 (PyTorch Lightning 1.9.5, torch 2.4.0, 2 nodes x 4 A10G): node 1's ranks 4..7 run with "
            "WORLD_SIZE=4. Constructed from recorded snapshots to match the seed: there is no recorded A10G "
            "machine, so both nodes are the recorded AWS PCIe machine aws-g6e-12xlarge (4x L40S, all NODE); the "
            "rank table, NCCL_* exports and versions are the seed's."))


def seed002() -> ClusterReport:
    base = _snapshot("dgx-a100")
    env = {"NCCL_DEBUG": "INFO"}
    bad = _node(base, "seed002-node-a", env, torch="1.13.1+cu117", torch_cuda="11.7", nccl_torch="2.14.3",
                nccl_pip={"nvidia-nccl-cu11": "2.14.3"},
                nccl_system=(Library(path="/usr/local/nccl2/lib/libnccl.so.2.17.1", version="2.17.1", source="dir"),))
    good = _node(base, "seed002-node-b", env, torch="2.2.0", torch_cuda="12.3", nccl_torch="2.19.3",
                 nccl_system=(Library(path="/usr/lib/x86_64-linux-gnu/libnccl.so.2.19.3", version="2.19.3",
                                      source="ldconfig"),))
    nodes = [bad, good]
    return ClusterReport(
        snapshots=tuple(nodes), ranks=_torchrun_ranks(nodes, per_node=8, world_size=16),
        description=(
            "Seed 002 (NCCL version mismatch): one node runs NCCL 2.14.3 + CUDA 11.7 from the nvidia-nccl-cu11 "
            "wheel with a system NCCL 2.17.1 in /usr/local/nccl2, the other NCCL 2.19.3 + CUDA 12.3; the job "
            "fails with 'connecting to address with family 0 is neither AF_INET(2) nor AF_INET6(10)'. "
            "Constructed from recorded snapshots to match the seed: both nodes are the recorded DGX A100 "
            "(dgx-a100); the torch versions are the releases that shipped those NCCL/CUDA versions "
            "(1.13.1+cu117, and 2.2.0 as in a CUDA 12.3 container), the rest are the seed's numbers."))


def two_node_h100() -> ClusterReport:
    base = _snapshot("hgx-h100")
    nodes = [_node(base, f"h100-node{n}") for n in range(2)]
    return ClusterReport(
        snapshots=tuple(nodes), ranks=_torchrun_ranks(nodes, per_node=8, world_size=16),
        description=(
            "A healthy two-node job: 2 x the recorded 8x H100 SXM node (hgx-h100, NV18, 2 NUMA nodes), 16 ranks "
            "numbered as torchrun does, each on cuda:LOCAL_RANK and bound to its GPU's CPUs. Constructed from "
            "recorded snapshots; versions are not in the capture and are left unknown."))


REPORTS: dict[str, Callable[[], ClusterReport]] = {
    "seed000-2node-a10g": seed000,
    "seed002-version-mismatch": seed002,
    "two-node-h100": two_node_h100,
}


def render(report: ClusterReport) -> str:
    return json.dumps(report.to_dict(), indent=1, ensure_ascii=False) + "\n"


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ncclnb.recorded.build_reports",
                                     description=__doc__.strip().splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the bundled JSON instead of writing")
    args = parser.parse_args(argv)
    stale = []
    for name, build in REPORTS.items():
        text = render(build())
        path = DATA / f"{name}.json"
        if args.check:
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                stale.append(name)
        else:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path}")
    if stale:
        print("out of date (run python -m ncclnb.recorded.build_reports): " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
