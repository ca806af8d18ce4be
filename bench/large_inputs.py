"""Large inputs through the checks, the loader and every view, printed as JSON.

    python bench/large_inputs.py                 # 20,000 GPUs, 50,000 ranks
    python bench/large_inputs.py --gpus 2000 --ranks 5000

Each measurement runs in a child process of its own (``fork`` of this one,
after the inputs are built), so ``peak_rss_mib`` is that child's
``ru_maxrss`` and ``rss_added_mib`` what the measured call added to the
child's resident set at the start (the inputs themselves are already there).
Measured, each against the obvious alternative in the same run:

- ``ncclnb.check`` of one 20,000-GPU node (CUDA_VISIBLE_DEVICES naming all
  but one GPU, P2P and IB disabled, IOMMU on: every topology check walks
  its GPU set) and of that node with a 20,000-rank table, against a bare
  pass over the same GPUs and ranks (the floor any check pays);
- ``ncclnb.load`` of a 50,000-rank report (6,250 nodes x 8 GPUs) written to
  a temporary JSON file, against ``json.load`` of the same file;
- ``ncclnb.check`` of that report;
- every view of that report (``show_topology``, ``show_numa``,
  ``show_ranks``, ``show_versions``, ``dashboard``) and ``show_topology`` of
  the 20,000-GPU node: seconds to build the view and bytes of its static
  HTML (the figure as inline SVG, ``ncclnb/views/static.py``), against the 5 MB
  budget, and the same numbers for the single-figure ``plotly`` alternative
  of the topology (``topology_figure(..., aggregate=False)``) at 500 GPUs,
  the size where it is still affordable to build.

The builders here (``huge_node``, ``huge_report``, ``many_ranks_report``)
are shared with tests/checks/test_linear.py and tests/views/test_large.py.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import resource
import sys
import tempfile
import time
import zlib
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from ncclnb.model import (  # noqa: E402
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

BUDGET_BYTES = 5 * 1024 * 1024
BLOCK = 8  # GPUs joined by NVLink in the synthetic node (one "board")
NUMA_NODES = 8


def _gpu_uuid(host: str, i: int) -> str:
    return f"GPU-{zlib.crc32(host.encode()) & 0xFFFF:04x}{i:08x}-5e1f-4c1a-9d7e-{i:012x}"


def huge_node(
    gpus: int = 20_000, matrix: int = 64, hostname: str = "huge-node", env: dict | None = None, nic_rows: bool = True
) -> NodeSnapshot:
    """One host with ``gpus`` GPUs in ``NUMA_NODES`` NUMA nodes.

    The GPU x GPU link and P2P matrices cover only the first ``matrix`` GPUs
    (what a partial ``topo -m`` capture gives; a full 20,000 x 20,000 matrix
    would be 400 million cells): NVLink (NV18) within a board of ``BLOCK``
    GPUs, SYS between boards on different NUMA nodes, NODE otherwise. Every
    GPU has a GPU x NIC row when ``nic_rows``. The env makes every topology
    check walk its GPU set: CUDA_VISIBLE_DEVICES names all GPUs but the last
    (the first ten by UUID prefix), NCCL_P2P_DISABLE=1, NCCL_IB_DISABLE=1,
    and IOMMU is on."""
    per_numa = max(1, -(-gpus // NUMA_NODES))
    numa_of = [i // per_numa for i in range(gpus)]
    cpus = {n: f"{n * 28}-{n * 28 + 27}" for n in range(NUMA_NODES)}
    gpu_list = tuple(
        Gpu(
            index=i,
            cuda_index=i,
            uuid=_gpu_uuid(hostname, i),
            name="NVIDIA H100 80GB HBM3",
            pci_bus_id=f"{i >> 8:08X}:{i & 0xFF:02X}:00.0",
            numa_node=numa_of[i],
            cpu_affinity=cpus[numa_of[i]],
            memory_total_mib=81559,
        )
        for i in range(gpus)
    )
    m = min(matrix, gpus)

    def label(i: int, j: int) -> str:
        if i == j:
            return "X"
        if i // BLOCK == j // BLOCK:
            return "NV18"
        return "SYS" if numa_of[i] != numa_of[j] else "NODE"

    gg = tuple(tuple(label(i, j) for j in range(m)) for i in range(m))
    p2p = tuple(tuple("X" if i == j else ("OK" if i // BLOCK == j // BLOCK else "CNS") for j in range(m)) for i in range(m))
    nic_names = tuple(f"mlx5_{k}" for k in range(NUMA_NODES // 2))  # NICs on the even NUMA nodes only
    gn = (
        tuple(
            tuple(
                "PIX" if numa_of[i] == 2 * k and i % BLOCK == 0 else ("NODE" if numa_of[i] == 2 * k else "SYS")
                for k in range(len(nic_names))
            )
            for i in range(gpus)
        )
        if nic_rows
        else ()
    )
    nics = tuple(
        Nic(name, kind="infiniband", state="up", numa_node=2 * k, speed_mbps=400_000, ib_port_state="ACTIVE")
        for k, name in enumerate(nic_names)
    )
    nics += (
        Nic("eth0", kind="ethernet", state="up", numa_node=0, speed_mbps=25_000),
        Nic("lo", kind="loopback", state="unknown"),
        Nic("docker0", kind="virtual", state="down"),
    )
    visible = [gpu_list[i].uuid[:16] for i in range(min(10, gpus - 1))] + [str(i) for i in range(min(10, gpus - 1), gpus - 1)]
    base_env = {
        "CUDA_VISIBLE_DEVICES": ",".join(visible),
        "NCCL_P2P_DISABLE": "1",
        "NCCL_IB_DISABLE": "1",
        "NCCL_SOCKET_IFNAME": "eth,lo",
        "WORLD_SIZE": str(gpus),
        "NCCL_DEBUG": "INFO",
    }
    return NodeSnapshot(
        host=Host(
            hostname=hostname,
            cpu_count=28 * NUMA_NODES,
            numa_nodes=tuple(NumaNode(n, cpus[n], 256_000) for n in range(NUMA_NODES)),
            iommu="on",
            shm_total_bytes=64 << 20,
            shm_free_bytes=1 << 20,
            rlimit_nofile_soft=1024,
            rlimit_nofile_hard=4096,
            rlimit_memlock_soft=64 << 10,
            rlimit_memlock_hard=64 << 10,
        ),
        gpus=gpu_list,
        links=Links(gpu_gpu=gg, gpu_nic=gn, nic_names=nic_names, p2p={"read": p2p}),
        nics=nics,
        versions=Versions(
            driver="535.54.03",
            cuda_driver="12.2",
            torch="2.4.0",
            torch_cuda="12.4",
            nccl_torch="2.20.5",
            nccl_pip={"nvidia-nccl-cu12": "2.20.5", "nvidia-nccl-cu11": "2.14.3"},
            nccl_system=(Library("/usr/lib/x86_64-linux-gnu/libnccl.so.2.18.3", "2.18.3", "ldconfig"),),
        ),
        env={**base_env, **(env or {})},
        origin="recorded",
        description=f"synthetic: {gpus} GPUs, link matrices for the first {m} only",
    )


def node_ranks(snap: NodeSnapshot, every: int = 1, duplicate_every: int = 0, unset_every: int = 0, index_only_every: int = 3):
    """A rank table on one host: rank i on GPU i (by UUID) for every
    ``every``-th GPU; every ``duplicate_every``-th rank is started twice,
    every ``unset_every``-th rank never set its device and every
    ``index_only_every``-th one names its GPU by CUDA index only (no UUID)."""
    out = []
    world = len(snap.gpus) // every
    for r in range(world):
        g = snap.gpus[r * every]
        unset = unset_every and r % unset_every == 0
        e = RankEntry(
            rank=r,
            host=snap.hostname,
            local_rank=r,
            world_size=world,
            node_rank=0,
            pid=10_000 + r,
            cuda_index=None if unset else r,
            gpu_uuid=None if unset or (index_only_every and r % index_only_every == 1) else g.uuid,
            cpu_affinity=g.cpu_affinity,
        )
        out.append(e)
        if duplicate_every and r % duplicate_every == 0:
            out.append(dataclasses.replace(e, pid=e.pid + 1_000_000, local_rank=r + 1))
    return tuple(out)


def huge_report(ranks: int = 50_000, per_node: int = 8) -> ClusterReport:
    """``ranks`` ranks on ``ranks // per_node`` nodes of ``per_node`` H100
    (bench/synthetic.py's node), with anomalies planted in proportion, so
    that every report check has something to group at every size: one rank
    in 97 started twice (the copy on the next node), one in 101 with no
    device set, one in 89 on the wrong GPU, one in 1,009 beyond WORLD_SIZE
    (and so missing), one node in 50 on another NCCL and NCCL_ALGO."""
    from synthetic import _node

    nodes = max(1, ranks // per_node)
    snaps = []
    for n in range(nodes):
        snap = _node(f"gpu-node-{n:05d}", per_node, 8, "2.18.1" if n % 50 == 7 else "2.21.5")
        if n % 50 == 7:
            snap = dataclasses.replace(snap, env={**snap.env, "NCCL_ALGO": "Ring"})
        snaps.append(snap)
    world = nodes * per_node
    table = []
    for n, snap in enumerate(snaps):
        for lr in range(per_node):
            r = n * per_node + lr
            e = RankEntry(
                rank=r,
                host=snap.hostname,
                local_rank=lr,
                world_size=world,
                node_rank=n,
                pid=10_000 + lr,
                cuda_index=lr,
                gpu_uuid=snap.gpus[lr].uuid,
                cpu_affinity=snap.gpus[lr].cpu_affinity,
            )
            if r % 1009 == 500:
                e = dataclasses.replace(e, rank=world + r)
            elif r % 101 == 50:
                e = dataclasses.replace(e, cuda_index=None, gpu_uuid=None)
            elif r % 89 == 40:
                e = dataclasses.replace(e, cuda_index=(lr + 1) % per_node, gpu_uuid=None)
            if r % 97 == 60 and n + 1 < nodes:
                table.append(
                    dataclasses.replace(
                        e,
                        host=snaps[n + 1].hostname,
                        node_rank=n + 1,
                        pid=e.pid + 7,
                        gpu_uuid=None,
                        cuda_index=None,
                        local_rank=per_node + lr,
                    )
                )
            table.append(e)
    return ClusterReport(
        snapshots=tuple(snaps),
        ranks=tuple(table),
        description=f"synthetic: {nodes} nodes x {per_node} GPUs, {len(table)} ranks, anomalies planted",
    )


def many_ranks_report(gpus: int = 20_000, duplicate_every: int = 7, unset_every: int = 5) -> ClusterReport:
    """The ``huge_node`` with a rank per GPU, some ranks started twice and
    some without a device: the node checks resolve every rank's GPU."""
    snap = huge_node(gpus)
    return ClusterReport(snapshots=(snap,), ranks=node_ranks(snap, duplicate_every=duplicate_every, unset_every=unset_every))


# --- measuring -----------------------------------------------------------------


def _rss_mib() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def measure(fn, timeout: int = 900) -> dict:
    """Run ``fn()`` in a forked child: wall seconds, the child's peak RSS
    (``ru_maxrss``, which starts at what the parent held when it forked) and
    what the call added to it; ``fn`` may return a dict of more numbers."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        os.close(read)
        code = 0
        try:
            import signal

            signal.alarm(timeout)
            start_rss = _rss_mib()
            t = time.perf_counter()
            extra = fn() or {}
            wall = time.perf_counter() - t
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            out = {
                "wall_s": round(wall, 3),
                "peak_rss_mib": round(peak, 1),
                "rss_added_mib": round(max(0.0, peak - start_rss), 1),
                **extra,
            }
        except BaseException as exc:  # report it, never fall back into the parent's code
            out, code = {"error": f"{type(exc).__name__}: {exc}"[:300]}, 1
        with os.fdopen(write, "w") as fh:
            fh.write(json.dumps(out))
        os._exit(code)
    os.close(write)
    with os.fdopen(read) as fh:
        text = fh.read()
    os.waitpid(pid, 0)
    return json.loads(text) if text else {"error": "the child died without a result"}


def _view_numbers(view) -> dict:
    html = view.static_html()
    return {"static_html_bytes": len(html.encode()), "within_5mb": len(html.encode()) < BUDGET_BYTES}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--gpus", type=int, default=20_000, help="GPUs of the large node (default 20,000)")
    parser.add_argument("--ranks", type=int, default=50_000, help="ranks of the large report (default 50,000)")
    args = parser.parse_args(argv)

    import ncclnb
    from ncclnb.views import dashboard, show_numa, show_ranks, show_topology, show_versions
    from ncclnb.views.widgets import figure_html
    from ncclnb.views.topology import topology_figure

    t = time.perf_counter()
    show_topology(huge_node(16, matrix=16)).static_html()  # first use imports plotly, pandas, ipywidgets
    warm = time.perf_counter() - t

    t = time.perf_counter()
    node = huge_node(args.gpus)
    node_ranks_report = many_ranks_report(args.gpus)
    report = huge_report(args.ranks)
    small_node = huge_node(max(8, args.gpus // 10))
    built = time.perf_counter() - t
    out: dict = {
        "inputs": {
            "node": f"{len(node.gpus)} GPUs, {len(node.links.gpu_gpu)} x {len(node.links.gpu_gpu)} GPU link matrix, "
            f"{len(node.links.nic_names)} NICs",
            "node_with_ranks": f"that node with {len(node_ranks_report.ranks)} ranks",
            "report": f"{len(report.snapshots)} nodes x 8 GPUs, {len(report.ranks)} ranks",
            "build_s": round(built, 2),
            "first_use_imports_s": round(warm, 2),
        },
        "budget_bytes": BUDGET_BYTES,
    }

    # checks: the node, the node with its ranks, a tenth of the node (linear: about a tenth of the time), the report
    out["check"] = {
        "node": measure(lambda: {"findings": len(ncclnb.check(node))}),
        "node_tenth_size": measure(lambda: {"findings": len(ncclnb.check(small_node)), "gpus": len(small_node.gpus)}),
        "node_with_ranks": measure(lambda: {"findings": len(ncclnb.check(node_ranks_report))}),
        "report": measure(lambda: {"findings": len(ncclnb.check(report))}),
        # the floor: one pass over every fact of the node (what serialising it costs)
        "alternative_node_to_dict": measure(lambda: {"keys": len(node.to_dict())}),
    }

    # load: the report as JSON on disk, through ncclnb.load and through json.load alone
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "report.json")
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(report.to_dict(), fh)
        size = os.path.getsize(path)
        out["load"] = {
            "file_bytes": size,
            "ncclnb_load": measure(lambda: {"ranks": len(ncclnb.load(path).ranks)}),
            "alternative_json_load": measure(lambda: {"keys": len(json.load(open(path, encoding="utf-8")))}),
        }

    # views of the report, and the large node's own views
    out["views"] = {
        "report": {
            name: measure(lambda show=show: _view_numbers(show(report)))
            for name, show in (
                ("show_topology", show_topology),
                ("show_numa", show_numa),
                ("show_ranks", show_ranks),
                ("show_versions", show_versions),
                ("dashboard", dashboard),
            )
        },
        "node_with_ranks": {
            name: measure(lambda show=show: _view_numbers(show(node_ranks_report)))
            for name, show in (
                ("show_topology", show_topology),
                ("show_numa", show_numa),
                ("show_ranks", show_ranks),
                ("dashboard", dashboard),
            )
        },
    }
    # the alternative for the topology: every GPU pair as a cell, at 500 GPUs (past that it runs out of memory here)
    five_hundred = huge_node(500, matrix=500)

    def figure_bytes(fig) -> dict:
        html = figure_html(fig)
        return {"static_html_bytes": len(html.encode()), "within_5mb": len(html.encode()) < BUDGET_BYTES}

    out["views"]["topology_500_gpus"] = {
        "blocks": measure(lambda: figure_bytes(topology_figure(five_hundred))),
        "alternative_cells": measure(lambda: figure_bytes(topology_figure(five_hundred, aggregate=False))),
    }
    views = [v for group in out["views"].values() for v in group.values()]
    out["all_views_within_5mb"] = all(
        v.get("within_5mb") for group in out["views"].values() for name, v in group.items() if not name.startswith("alternative")
    )
    print(json.dumps(out, indent=1))
    errors = [v for v in views + list(out["check"].values()) if "error" in v]
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
