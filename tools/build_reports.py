"""Build the bundled cluster reports from the bundled recorded snapshots.

    .venv/bin/python tools/build_reports.py [--check]

Each report is *constructed*: real recorded machines (``ncclnb/recorded/data/<name>.json``,
built by ``tools/build_recorded.py`` from public captures) placed side by side, with the
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
from typing import Callable, Optional

from ncclnb.model import (
    ClusterReport,
    Library,
    LinkMeasurement,
    LinkTest,
    Nic,
    NodeSnapshot,
    PairMeasurement,
    PeerTransport,
    RankEntry,
)

from ncclnb.recorded import DATA


def _snapshot(name: str) -> NodeSnapshot:
    from ncclnb.recorded import load

    snap = load(name)
    if not isinstance(snap, NodeSnapshot):
        raise ValueError(f"{name}: expected a bundled node snapshot")
    return snap


def _node(base: NodeSnapshot, hostname: str, env: Optional[dict] = None, **versions) -> NodeSnapshot:
    host = dataclasses.replace(base.host, hostname=hostname)
    v = dataclasses.replace(base.versions, **versions) if versions else base.versions
    missing = {k: m for k, m in base.missing.items() if not (k == "env" and env)}
    return dataclasses.replace(
        base, host=host, env={**base.env, **(env or {})}, versions=v, missing=missing, origin="recorded", captured_at=None
    )


def _torchrun_ranks(snaps, per_node: int, world_size: int, set_device: bool = True) -> tuple[RankEntry, ...]:
    """Ranks as torchrun numbers them: node n runs n*per_node .. n*per_node+per_node-1."""
    out = []
    for n, s in enumerate(snaps):
        for local in range(per_node):
            gpu = s.gpus[local] if local < len(s.gpus) else None
            out.append(
                RankEntry(
                    rank=n * per_node + local,
                    host=s.hostname,
                    local_rank=local,
                    world_size=world_size,
                    node_rank=n,
                    pid=None,
                    cuda_index=local if set_device else None,
                    gpu_uuid=gpu.uuid if gpu else None,
                    cpu_affinity=gpu.cpu_affinity if gpu else None,
                )
            )
    return tuple(out)


def seed000() -> ClusterReport:
    base = _snapshot("aws-g6e-12xlarge")
    env = {  # the seed's own exports, plus what its launcher set
        "NCCL_SOCKET_IFNAME": "eth0",
        "NCCL_DEBUG": "INFO",
        "NCCL_NSOCKS_PERTHREAD": "4",
        "NCCL_SOCKET_NTHREADS": "4",
        "WORLD_SIZE": "4",
        "MASTER_PORT": "29500",
    }
    nodes = [
        _node(base, f"seed000-node{n}", {**env, "NODE_RANK": str(n)}, torch="2.4.0", frameworks={"pytorch_lightning": "1.9.5"})
        for n in range(2)
    ]
    # node 0 runs ranks 0..3, node 1 ranks 4..7, and every rank was told WORLD_SIZE=4:
    # NCCL's "Invalid rank requested : 7/4".
    ranks = _torchrun_ranks(nodes, per_node=4, world_size=4)
    return ClusterReport(
        snapshots=tuple(nodes),
        ranks=ranks,
        description=(
            "Seed 000 (PyTorch Lightning 1.9.5, torch 2.4.0, 2 nodes x 4 A10G): node 1's ranks 4..7 run with "
            "WORLD_SIZE=4. Constructed from recorded snapshots to match the seed: there is no recorded A10G "
            "machine, so both nodes are the recorded AWS PCIe machine aws-g6e-12xlarge (4x L40S, all NODE); the "
            "rank table, NCCL_* exports and versions are the seed's."
        ),
    )


def seed002() -> ClusterReport:
    base = _snapshot("dgx-a100")
    env = {"NCCL_DEBUG": "INFO"}
    bad = _node(
        base,
        "seed002-node-a",
        env,
        torch="1.13.1+cu117",
        torch_cuda="11.7",
        nccl_torch="2.14.3",
        nccl_pip={"nvidia-nccl-cu11": "2.14.3"},
        nccl_system=(Library(path="/usr/local/nccl2/lib/libnccl.so.2.17.1", version="2.17.1", source="dir"),),
    )
    good = _node(
        base,
        "seed002-node-b",
        env,
        torch="2.2.0",
        torch_cuda="12.3",
        nccl_torch="2.19.3",
        nccl_system=(Library(path="/usr/lib/x86_64-linux-gnu/libnccl.so.2.19.3", version="2.19.3", source="ldconfig"),),
    )
    nodes = [bad, good]
    return ClusterReport(
        snapshots=tuple(nodes),
        ranks=_torchrun_ranks(nodes, per_node=8, world_size=16),
        description=(
            "Seed 002 (NCCL version mismatch): one node runs NCCL 2.14.3 + CUDA 11.7 from the nvidia-nccl-cu11 "
            "wheel with a system NCCL 2.17.1 in /usr/local/nccl2, the other NCCL 2.19.3 + CUDA 12.3; the job "
            "fails with 'connecting to address with family 0 is neither AF_INET(2) nor AF_INET6(10)'. "
            "Constructed from recorded snapshots to match the seed: both nodes are the recorded DGX A100 "
            "(dgx-a100); the torch versions are the releases that shipped those NCCL/CUDA versions "
            "(1.13.1+cu117, and 2.2.0 as in a CUDA 12.3 container), the rest are the seed's numbers."
        ),
    )


def two_node_h100() -> ClusterReport:
    base = _snapshot("hgx-h100")
    nodes = [_node(base, f"h100-node{n}") for n in range(2)]
    return ClusterReport(
        snapshots=tuple(nodes),
        ranks=_torchrun_ranks(nodes, per_node=8, world_size=16),
        description=(
            "A healthy two-node job: 2 x the recorded 8x H100 SXM node (hgx-h100, NV18, 2 NUMA nodes), 16 ranks "
            "numbered as torchrun does, each on cuda:LOCAL_RANK and bound to its GPU's CPUs. Constructed from "
            "recorded snapshots; versions are not in the capture and are left unknown."
        ),
    )


# --- the survey's demo report ---------------------------------------------------------

# DGX A100's PCI layout as its nvidia-smi shows it (GPU0..7); the recorded topo -m has no bus ids
DGX_A100_BUS_IDS = (
    "00000000:07:00.0",
    "00000000:0F:00.0",
    "00000000:47:00.0",
    "00000000:4E:00.0",
    "00000000:87:00.0",
    "00000000:90:00.0",
    "00000000:B7:00.0",
    "00000000:BD:00.0",
)
COMPUTE_HCAS = ("mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3", "mlx5_6", "mlx5_7", "mlx5_8", "mlx5_9")  # PXB to a GPU pair
DEMO_NODES, DEMO_PER_NODE = 4, 8
SLOW_PAIR = (1, 2)  # node 1 -> node 2: the one degraded link
NIC_GBPS, SLOW_GBPS = 23.4, 5.9  # a healthy HDR port in nccl-tests terms (25 GB/s line rate), and the slow one


def _demo_node(base: NodeSnapshot, n: int, env: dict, **versions) -> NodeSnapshot:
    node = _node(base, f"demo-node{n}", env, **versions)
    gpus = tuple(dataclasses.replace(g, name="NVIDIA A100-SXM4-80GB", pci_bus_id=DGX_A100_BUS_IDS[g.index]) for g in node.gpus)
    numa_of_nic = {}  # an HCA sits on the NUMA node of the GPUs it is PXB to
    for g, row in zip(node.gpus, node.links.gpu_nic):
        for name, label in zip(node.links.nic_names, row):
            if label == "PXB":
                numa_of_nic[name] = g.numa_node
    nics = tuple(
        Nic(
            name=x.name,
            kind="infiniband" if x.name in COMPUTE_HCAS else "roce",
            state="up",
            speed_mbps=200_000,
            numa_node=numa_of_nic.get(x.name),
            ib_device=x.name,
            ib_port_state="ACTIVE",
            ib_link_layer="InfiniBand" if x.name in COMPUTE_HCAS else "Ethernet",
        )
        for x in node.nics
    )
    missing = {k: v for k, v in node.missing.items() if not k.endswith((".name", ".pci_bus_id"))}
    return dataclasses.replace(node, gpus=gpus, nics=nics, missing=missing)


def _nearest(snap: NodeSnapshot, gpu: int, hcas) -> str:
    """The HCA of ``hcas`` nearest GPU ``gpu`` (the first among equals), as
    ncclnb.survey.rankfacts reads NCCL_IB_HCA for a rank that knows its GPU."""
    from ncclnb.checks._facts import link_distance

    row = dict(zip(snap.links.nic_names, snap.links.gpu_nic[gpu]))
    return min(hcas, key=lambda h: (link_distance(row[h]), hcas.index(h)))


def _demo_ranks(nodes) -> tuple[RankEntry, ...]:
    world = DEMO_NODES * DEMO_PER_NODE
    device_of = {11: 4, 12: 3}  # demo-node1's device table swaps LOCAL_RANK 3 and 4
    bound_to = {5: "16-31,144-159"}  # demo-node0's rank 5 bound to NUMA 1 (its GPU5 is on NUMA 7)
    out = []
    for n, snap in enumerate(nodes):
        cpus = {g.index: g.cpu_affinity for g in snap.gpus}
        for local in range(DEMO_PER_NODE):
            rank = n * DEMO_PER_NODE + local
            gpu = device_of.get(rank, local)
            hca = f"mlx5_{local}" if n == 3 else _nearest(snap, gpu, COMPUTE_HCAS)  # demo-node3's wrapper
            out.append(
                RankEntry(
                    rank=rank,
                    host=snap.hostname,
                    local_rank=local,
                    world_size=world,
                    node_rank=n,
                    pid=52100 + rank,
                    cuda_index=gpu,
                    bus_id=snap.gpus[gpu].pci_bus_id,
                    numa_node=snap.gpus[gpu].numa_node,
                    cpu_affinity=bound_to.get(rank, cpus[local]),
                    nic=hca,
                )
            )  # the launcher binds by LOCAL_RANK
    stray = nodes[3]
    out.append(
        RankEntry(
            rank=world,
            host=stray.hostname,
            local_rank=8,
            world_size=world,
            node_rank=3,
            pid=52100 + world,
            cpu_affinity="0-255",
            nic="mlx5_8",
        )
    )
    return tuple(out)


def _time_us(size: int, busbw: float, factor: float, latency_us: float) -> float:
    """Latency plus the bytes at the plateau's algbw (busbw / factor)."""
    return latency_us + size / (busbw / factor * 1e9) * 1e6


def _demo_links(nodes) -> LinkTest:
    """nccl-tests-shaped figures for 4 x 8 A100 over 8 HDR ports per node, with
    one degraded inter-node link. Every ring channel carries an equal share,
    so the collectives run at the slow link's pace: 8 channels x 5.9 GB/s."""
    n = DEMO_NODES * DEMO_PER_NODE
    ring_gbps = 8 * SLOW_GBPS
    curves = {  # collective -> (busbw factor, plateau busbw GB/s, latency us)
        "all_reduce": (2 * (n - 1) / n, ring_gbps, 38.0),
        "all_gather": ((n - 1) / n, ring_gbps * 1.02, 27.0),
        "reduce_scatter": ((n - 1) / n, ring_gbps * 1.01, 29.0),
        "all_to_all": ((n - 1) / n, 8 * NIC_GBPS * 0.55, 64.0),  # all_to_all uses every link: less held back
    }
    results = []
    for collective, (factor, plateau, latency) in curves.items():
        size = 8
        while size <= 1 << 30:
            t = _time_us(size, plateau, factor, latency)
            algbw = size / t / 1e3
            results.append(LinkMeasurement(collective, size, round(t, 3), round(algbw, 4), round(algbw * factor, 4)))
            size *= 2
    pairs = []
    size = 64 << 20
    heads = [k * DEMO_PER_NODE for k in range(DEMO_NODES)]
    for k in range(DEMO_NODES):
        nxt = (k + 1) % DEMO_NODES
        gbps = SLOW_GBPS if (k, nxt) == SLOW_PAIR else NIC_GBPS - 0.1 * k
        t = round(12.0 + size / (gbps * 1e9) * 1e6, 3)
        pairs.append(
            PairMeasurement(heads[k], heads[nxt], nodes[k].hostname, nodes[nxt].hostname, size, t, round(size / t / 1e3, 4))
        )
    lines = (
        ("P2P/IPC/read", 0, 1, 0, 1),
        ("P2P/IPC/read", 8, 9, 0, 1),
        ("NET/IB/0/GDRDMA", 7, 8, 7, 0),
        ("NET/IB/0/GDRDMA", 15, 16, 7, 0),
        ("NET/IB/0/GDRDMA", 23, 24, 7, 0),
        ("NET/IB/0/GDRDMA", 31, 0, 7, 0),
    )
    transports = tuple(
        PeerTransport(
            rank=a,
            peer=b,
            transport=t.rsplit("/", 2)[0] if t.startswith("NET") else "P2P/IPC",
            channels=8 if t.startswith("NET") else 24,
            line=f"NCCL INFO Channel 00/0 : {a}[{ga}] -> {b}[{gb}] {'[send] ' if t.startswith('NET') else ''}via {t}",
        )
        for t, a, b, ga, gb in lines
    )
    return LinkTest(
        backend="nccl",
        device="cuda",
        world_size=n,
        nodes=DEMO_NODES,
        iterations=20,
        results=tuple(results),
        pairs=tuple(pairs),
        transports=transports,
        env={"NCCL_DEBUG": "INFO", "NCCL_IB_HCA": "=" + ",".join(COMPUTE_HCAS)},
    )


def survey_demo() -> ClusterReport:
    base = _snapshot("dgx-a100")
    hca_list = {"NCCL_IB_HCA": "=" + ",".join(COMPUTE_HCAS)}
    current = dict(
        torch="2.5.1+cu124",
        torch_cuda="12.4",
        nccl_torch="2.21.5",
        nccl_pip={"nvidia-nccl-cu12": "2.21.5"},
        driver="550.90.07",
        cuda_driver="12.4",
    )
    old = dict(
        torch="2.1.2+cu121",
        torch_cuda="12.1",
        nccl_torch="2.18.1",
        nccl_pip={"nvidia-nccl-cu12": "2.18.1"},
        driver="550.90.07",
        cuda_driver="12.4",
    )
    nodes = [
        _demo_node(base, 0, hca_list, **current),
        _demo_node(base, 1, hca_list, **current),
        _demo_node(base, 2, hca_list, **old),
        _demo_node(base, 3, {"NCCL_IB_HCA": "mlx5_0"}, **current),
    ]
    world = DEMO_NODES * DEMO_PER_NODE
    report = ClusterReport(
        snapshots=tuple(nodes),
        ranks=_demo_ranks(nodes),
        links=(_demo_links(nodes),),
        captured_at="2025-01-15T09:30:00+00:00",
        description=(
            f"Survey demo: what `ncclnb survey` would write for a job of {DEMO_NODES} DGX A100 nodes x "
            f"{DEMO_PER_NODE} GPUs (WORLD_SIZE {world}), with problems planted. Constructed from recorded "
            "snapshots: every node is the recorded DGX A100 (dgx-a100: topology, NUMA, 12 mlx5 HCAs); the GPU "
            "model and bus ids are DGX A100's, the HCAs are made 200 Gb/s HDR ports that are up (mlx5_4/5/10/11 "
            "as RoCE storage ports), and versions, rank table and link figures are written for this demo. "
            "Planted: (1) demo-node2 runs an older image, torch 2.1.2 with NCCL 2.18.1, where the others run "
            "torch 2.5.1 with NCCL 2.21.5 (seed 002); (2) a stray 9th process on demo-node3 has RANK 32 with "
            "WORLD_SIZE 32 (seed 000): it registered with the survey, and gloo refused it; (3) on demo-node1 a "
            "device table swaps LOCAL_RANK 3 and 4, so ranks 11 and 12 run on cuda:4 and cuda:3 (seed 001), "
            "while the launcher binds their CPUs by LOCAL_RANK, to the other GPU's NUMA node; (4) rank 5 on "
            "demo-node0 is bound to NUMA node 1's CPUs while its GPU5 is on NUMA node 7; (5) a wrapper on "
            "demo-node3 sets NCCL_IB_HCA=mlx5_$LOCAL_RANK, which fits boards whose HCA k sits by GPU k, but on a "
            "DGX A100 mlx5_4/5 are storage ports and mlx5_6/7 sit by GPU4/5, so ranks 28-31 send across the "
            "sockets; (6) the link from demo-node1 to demo-node2 is degraded. The link test's figures are "
            "constructed, not measured: 5.9 GB/s on the slow pair against 23-23.4 GB/s on the others (an HDR "
            "port's 25 GB/s line rate), and collectives at the slow link's pace (every ring channel waits for "
            "it: all_reduce busbw about 47 GB/s at 1 GiB, where 8 HDR ports per node give about 176-200). In a "
            "real survey some of these would not sit together: two NCCL versions often cannot connect at all "
            "(seed 002's job failed at connect), and then the NCCL link test stops with what it had. Its "
            "findings are what `ncclnb check` says of it, stored as the survey stores them."
        ),
    )
    # as the survey writes a report: with the findings of every check (a check's change shows here as a stale file)
    from ncclnb.checks import check

    return dataclasses.replace(report, findings=tuple(check(report)))


REPORTS: dict[str, Callable[[], ClusterReport]] = {
    "seed000-2node-a10g": seed000,
    "seed002-version-mismatch": seed002,
    "two-node-h100": two_node_h100,
    "survey-demo": survey_demo,
}


def render(report: ClusterReport) -> str:
    return json.dumps(report.to_dict(), indent=1, ensure_ascii=False) + "\n"


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="tools/build_reports.py", description=__doc__.strip().splitlines()[0])
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
        print("out of date (run .venv/bin/python tools/build_reports.py): " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
