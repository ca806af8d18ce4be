"""Snapshots and reports for the view tests, built from recorded captures.

``l40s_node`` mirrors fixtures/topo_m__4x-l40s-pcie-2nic-2socket__kagaho-vllm-l40s.txt
(host 'shockwave': 4x L40S PCIe, 2 mlx5 NICs, 2 NUMA nodes); ``a10g_report``
mirrors seed 000 (2 nodes x 4 A10G) with a broken rank table and seed 002's
NCCL 2.14.3 / CUDA 11.7 node beside 2.19.3 / CUDA 12.3 ones.
"""

from __future__ import annotations

from ncclnb.model import (
    ClusterReport,
    Gpu,
    Host,
    Library,
    Links,
    Nic,
    NodeSnapshot,
    NumaNode,
    RankEntry,
    Versions,
)

HOSTILE = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">'

L40S_GG = (
    ("X", "NODE", "SYS", "SYS"),
    ("NODE", "X", "SYS", "SYS"),
    ("SYS", "SYS", "X", "NODE"),
    ("SYS", "SYS", "NODE", "X"),
)
L40S_GN = (("SYS", "SYS"), ("SYS", "SYS"), ("NODE", "NODE"), ("NODE", "NODE"))


def l40s_node(hostname: str = "shockwave", env: dict | None = None, gpu_name: str = "NVIDIA L40S") -> NodeSnapshot:
    cpus = {0: "0,2,4,6,8,10", 1: "1,3,5,7,9,11"}
    gpus = tuple(
        Gpu(
            index=i,
            cuda_index=i,
            uuid=f"GPU-l40s-{i}",
            name=gpu_name,
            pci_bus_id=f"00000000:{0x17 + 0x20 * i:02X}:00.0",
            numa_node=i // 2,
            cpu_affinity=cpus[i // 2],
            memory_total_mib=46068,
        )
        for i in range(4)
    )
    p2p = tuple(tuple("X" if i == j else ("OK" if i // 2 == j // 2 else "CNS") for j in range(4)) for i in range(4))
    return NodeSnapshot(
        host=Host(hostname=hostname, cpu_count=12, numa_nodes=(NumaNode(0, cpus[0], 257000), NumaNode(1, cpus[1], 258000))),
        gpus=gpus,
        links=Links(gpu_gpu=L40S_GG, gpu_nic=L40S_GN, nic_names=("mlx5_0", "mlx5_1"), p2p={"read": p2p}),
        nics=(
            Nic("mlx5_0", kind="infiniband", state="up", numa_node=1, speed_mbps=200000),
            Nic("mlx5_1", kind="infiniband", state="up", numa_node=1, speed_mbps=200000),
        ),
        versions=Versions(
            driver="580.119.02", cuda_driver="13.0", torch="2.4.0", torch_cuda="12.1", nccl_torch="2.20.5", python="3.11.9"
        ),
        env=dict(env or {}),
        origin="recorded",
    )


def a10g_node(hostname: str, nccl: str = "2.19.3", cuda: str = "12.3", env: dict | None = None) -> NodeSnapshot:
    gg = tuple(tuple("X" if i == j else "PHB" for j in range(4)) for i in range(4))
    return NodeSnapshot(
        host=Host(hostname=hostname, numa_nodes=(NumaNode(0, "0-47"),)),
        gpus=tuple(
            Gpu(
                index=i,
                cuda_index=i,
                uuid=f"GPU-{hostname}-{i}",
                name="NVIDIA A10G",
                pci_bus_id=f"00000000:{0x16 + i:02X}:00.0",
                numa_node=0,
            )
            for i in range(4)
        ),
        links=Links(gpu_gpu=gg, gpu_nic=(), nic_names=()),
        nics=(Nic("eth0", kind="ethernet", state="up", numa_node=0),),
        versions=Versions(
            driver="535.104.05",
            cuda_driver="12.2",
            torch="2.4.0",
            torch_cuda=cuda,
            nccl_torch=nccl,
            nccl_pip={"nvidia-nccl-cu12": nccl},
            nccl_system=(Library("/usr/local/nccl2/lib/libnccl.so.2.17.1", "2.17.1", "ldconfig"),),
        ),
        env={"NCCL_SOCKET_IFNAME": "eth0", "NCCL_DEBUG": "INFO", **(env or {})},
        origin="recorded",
    )


def a10g_report(broken: bool = True, third_host: str = "node-c") -> ClusterReport:
    """Three nodes x 4 A10G, WORLD_SIZE 12. Broken: node-b runs rank 5 twice,
    a rank 13 (out of range), local rank 3 on cuda:0 (shared with local 0),
    and rank 7 never joins; node-c runs NCCL 2.14.3 / CUDA 11.7."""
    snaps = (
        a10g_node("node-a"),
        a10g_node("node-b"),
        a10g_node(third_host, nccl="2.14.3" if broken else "2.19.3", cuda="11.7" if broken else "12.3"),
    )
    ranks = []
    for n, snap in enumerate(snaps):
        for lr in range(4):
            ranks.append(
                RankEntry(
                    rank=4 * n + lr,
                    host=snap.hostname,
                    local_rank=lr,
                    world_size=12,
                    node_rank=n,
                    pid=1000 * (n + 1) + lr,
                    cuda_index=lr,
                    cpu_affinity="0-47",
                )
            )
    if broken:
        ranks[6] = RankEntry(rank=5, host="node-b", local_rank=2, world_size=12, node_rank=1, pid=2002, cuda_index=2)
        ranks[7] = RankEntry(rank=13, host="node-b", local_rank=3, world_size=12, node_rank=1, pid=2003, cuda_index=0)
    return ClusterReport(snapshots=snaps, ranks=tuple(ranks), description="three A10G nodes")


def l40s_report(cpu_affinity=("0,2,4,6,8,10", "1,3,5,7,9,11", "0-11", "0,2,4")) -> ClusterReport:
    """One L40S node with four ranks: rank 0 local, 1 remote, 2 spans, 3 on node 0 with GPU3 on node 1."""
    snap = l40s_node()
    gpus_for = (0, 2, 1, 3)
    ranks = tuple(
        RankEntry(
            rank=r,
            host=snap.hostname,
            local_rank=r,
            world_size=4,
            node_rank=0,
            pid=500 + r,
            gpu_uuid=f"GPU-l40s-{gpus_for[r]}",
            cuda_index=gpus_for[r],
            cpu_affinity=cpu_affinity[r],
        )
        for r in range(4)
    )
    return ClusterReport(snapshots=(snap,), ranks=ranks)
