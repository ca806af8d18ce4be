"""Synthetic machines at scale, for bench/views.py and the view tests.

``big_report``: 1024 nodes x 8 H100 (NV18, 8 NICs, 2 NUMA nodes), 8192
ranks with a few planted anomalies and two nodes on another NCCL.
``nvl72_node``: one node with 72 GPUs in one NVLink domain (NV18 everywhere).
"""

from __future__ import annotations

import dataclasses

from ncclnb.model import (
    ClusterReport,
    Gpu,
    Host,
    Links,
    Nic,
    NodeSnapshot,
    NumaNode,
    RankEntry,
    Versions,
)


def _node(hostname: str, gpus: int, nics: int, nccl: str = "2.21.5") -> NodeSnapshot:
    half = max(1, gpus // 2)
    gg = tuple(tuple("X" if i == j else "NV18" for j in range(gpus)) for i in range(gpus))
    gn = tuple(
        tuple("PIX" if k * gpus // nics == i else ("NODE" if (i < half) == (k < nics // 2) else "SYS") for k in range(nics))
        for i in range(gpus)
    )
    return NodeSnapshot(
        host=Host(
            hostname=hostname,
            cpu_count=224,
            numa_nodes=(NumaNode(0, "0-55,112-167", 1_031_000), NumaNode(1, "56-111,168-223", 1_032_000)),
        ),
        gpus=tuple(
            Gpu(
                index=i,
                cuda_index=i,
                uuid=f"GPU-{hostname}-{i:03d}",
                name="NVIDIA H100 80GB HBM3",
                pci_bus_id=f"00000000:{(i * 3) % 256:02X}:00.0",
                numa_node=0 if i < half else 1,
                cpu_affinity="0-55,112-167" if i < half else "56-111,168-223",
                memory_total_mib=81559,
            )
            for i in range(gpus)
        ),
        links=Links(gpu_gpu=gg, gpu_nic=gn, nic_names=tuple(f"mlx5_{k}" for k in range(nics))),
        nics=tuple(
            Nic(f"mlx5_{k}", kind="infiniband", state="up", numa_node=0 if k < nics // 2 else 1, speed_mbps=400_000)
            for k in range(nics)
        ),
        versions=Versions(
            driver="550.54.15",
            cuda_driver="12.4",
            torch="2.4.0",
            torch_cuda="12.4",
            nccl_torch=nccl,
            nccl_pip={"nvidia-nccl-cu12": nccl},
            python="3.11.9",
        ),
        env={"NCCL_SOCKET_IFNAME": "ib0", "NCCL_IB_HCA": "mlx5", "NCCL_DEBUG": "WARN"},
        origin="recorded",
    )


def big_report(nodes: int = 1024, per_node: int = 8) -> ClusterReport:
    """``nodes`` x ``per_node`` ranks; node 7 runs rank 63 twice, node 300
    has a rank beyond WORLD_SIZE, node 900 has a rank on the wrong GPU, and
    nodes 500-501 run NCCL 2.18.1."""
    snaps = tuple(_node(f"gpu-node-{n:04d}", per_node, 8, "2.18.1" if n in (500, 501) else "2.21.5") for n in range(nodes))
    world = nodes * per_node
    ranks = []
    for n in range(nodes):
        for lr in range(per_node):
            ranks.append(
                RankEntry(
                    rank=n * per_node + lr,
                    host=snaps[n].hostname,
                    local_rank=lr,
                    world_size=world,
                    node_rank=n,
                    pid=10_000 + lr,
                    cuda_index=lr,
                    cpu_affinity=snaps[n].gpus[lr].cpu_affinity,
                )
            )
    if nodes > 900 and per_node >= 8:  # the planted anomalies need the full size
        ranks[7 * per_node + 6] = dataclasses.replace(ranks[7 * per_node + 6], rank=7 * per_node + 7)
        ranks[300 * per_node + 1] = dataclasses.replace(ranks[300 * per_node + 1], rank=world + 1)
        ranks[900 * per_node + 2] = dataclasses.replace(ranks[900 * per_node + 2], cuda_index=5)
    return ClusterReport(snapshots=snaps, ranks=tuple(ranks), description=f"synthetic {nodes} x {per_node}")


def nvl72_node() -> NodeSnapshot:
    return _node("nvl72-domain", 72, 8)


def nvl72_report() -> ClusterReport:
    node = nvl72_node()
    ranks = tuple(
        RankEntry(
            rank=i,
            host=node.hostname,
            local_rank=i,
            world_size=72,
            node_rank=0,
            pid=20_000 + i,
            cuda_index=i,
            cpu_affinity=node.gpus[i].cpu_affinity,
        )
        for i in range(72)
    )
    return ClusterReport(snapshots=(node,), ranks=ranks, description="synthetic NVL72 domain")
