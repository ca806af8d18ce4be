"""What large-message busbw to expect: the "is this normal?" table, and the
one reading of which row applies to a link test.

busbw is nccl-tests' bus bandwidth (https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md):
algbw = size / time, and busbw = algbw x 2(n-1)/n for all_reduce, so that it
can be compared with the hardware's link speed whatever the rank count.

Every row says where its numbers come from (``basis``):

- ``measured``: read from a public nccl-tests output that ncclnb keeps in
  ``ncclnb/recorded/links/`` (named in ``source``; tests re-read it);
- ``derived``: from the link's line rate (a 400 Gb/s NIC moves at most
  50 GB/s; nccl-tests over one such NIC reaches about 96% of it);
- ``reported``: a figure from public write-ups that this offline machine
  could not re-check against a log.

A band applies from ``min_size_bytes`` up: smaller messages are latency
bound and say nothing about the links. 1 GiB is where the bundled logs
reach their plateau (8x A100: 228 GB/s at 1 GiB, 232 at 4 GiB; 8x H100
NVLS: 465 at 1 GiB, 474 at 4 GiB, but only 383 at 128 MiB).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Optional, Sequence

from .cluster import LinkTest
from .derive import rdma_nics
from .node import NodeSnapshot
from .words import how_many

GiB = 1 << 30
LINKS_DIR = "ncclnb/recorded/links"


def size_text(size: float) -> str:
    """A message size as nccl-tests users read it: 8 -> "8 B", 65536 ->
    "64 KiB", 1.5 MiB -> "1.5 MiB" (the one spelling of the link test's
    sizes in checks, the survey's summary and the views)."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:.4g} {unit}"
    return f"{size:g} B"


@dataclass(frozen=True)
class BusbwReference:
    """One row of the table: the large-message busbw band of ``collective``
    on ``hardware``, in GB/s (1e9 bytes per second, as nccl-tests prints)."""

    id: str
    hardware: str  # "8x H100 SXM, NVSwitch"
    scope: str  # "intra-node" | "inter-node per NIC"
    collective: str  # "all_reduce"
    algo: str  # "ring" | "nvls" | "any": the NCCL algorithm the band was measured with
    low_gbps: float
    high_gbps: float
    min_size_bytes: int  # smallest message (bytes per rank, nccl-tests' "size") the band applies to
    source: str
    basis: str  # "measured" | "derived" | "reported"
    note: str = ""


_PERF = "https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md"

REFERENCES: tuple[BusbwReference, ...] = (
    BusbwReference(
        id="a100-sxm-8x-ring",
        hardware="8x A100 SXM4, NVSwitch",
        scope="intra-node",
        collective="all_reduce",
        algo="ring",
        low_gbps=220.0,
        high_gbps=240.0,
        min_size_bytes=GiB,
        source=f"{LINKS_DIR}/nccl_tests__hgx-a100-8x-sxm4-80gb-single-node__unidentified-repo-thanos.txt: a public "
        "all_reduce_perf -g 8 run on one 8x A100-SXM4-80GB node (busbw 227.8 GB/s at 1 GiB, 232.4 at 4 GiB); "
        "the text is exact but the repository that published it could not be identified",
        basis="measured",
        note="A100 has no NVLS: NCCL runs ring (or tree) inside the node; the band is its plateau.",
    ),
    BusbwReference(
        id="h100-sxm-8x-ring",
        hardware="8x H100 SXM, NVSwitch",
        scope="intra-node",
        collective="all_reduce",
        algo="ring",
        low_gbps=350.0,
        high_gbps=390.0,
        min_size_bytes=GiB,
        source="about 370 GB/s: the figure public nccl-tests discussions give for 8x H100 SXM with NVLS off "
        "(NCCL_ALGO=Ring or NCCL_NVLS_ENABLE=0); no such log is bundled",
        basis="reported",
        note="Not re-checked from this offline machine. NVLink 4 moves 450 GB/s per direction per GPU; ring "
        "all_reduce reaches about 80% of it.",
    ),
    BusbwReference(
        id="h100-sxm-8x-nvls",
        hardware="8x H100 SXM, NVSwitch",
        scope="intra-node",
        collective="all_reduce",
        algo="nvls",
        low_gbps=455.0,
        high_gbps=490.0,
        min_size_bytes=GiB,
        source=f"https://github.com/NVIDIA/nccl-tests/issues/290 (kept as {LINKS_DIR}/"
        "nccl_tests__hgx-h100-1node-8gpu-nvls__nccl-tests-issue-290.txt): all_reduce_perf -g 8 on one "
        "8x H100 80GB HBM3 node, busbw 465.3 GB/s at 1 GiB and 473.6-476.5 at 4 GiB; the maintainer "
        "answers that about 476 GB/s is what NVLS gives",
        basis="measured",
        note="NVLS (NVLink SHARP) is NCCL's default for all_reduce on 8 H100s when NVSwitch multicast works; "
        "without it NCCL falls back to ring, about 370 GB/s.",
    ),
    BusbwReference(
        id="h200-sxm-8x-ring",
        hardware="8x H200 SXM, NVSwitch",
        scope="intra-node",
        collective="all_reduce",
        algo="ring",
        low_gbps=350.0,
        high_gbps=390.0,
        min_size_bytes=GiB,
        source="the 8x H100 ring row: H200 SXM has the same NVLink 4 (18 links, 450 GB/s per direction) and NVSwitch as H100 SXM",
        basis="derived",
        note="Same fabric as H100 SXM; not measured on H200 here.",
    ),
    BusbwReference(
        id="h200-sxm-8x-nvls",
        hardware="8x H200 SXM, NVSwitch",
        scope="intra-node",
        collective="all_reduce",
        algo="nvls",
        low_gbps=460.0,
        high_gbps=490.0,
        min_size_bytes=GiB,
        source="about 475-480 GB/s: the figure public nccl-tests write-ups give for 8x H200 SXM all_reduce with "
        "NCCL's default (NVLS); no such log is bundled",
        basis="reported",
        note="Not re-checked from this offline machine; consistent with the measured 8x H100 NVLS row (same NVLink 4 fabric).",
    ),
    BusbwReference(
        id="b200-8x-nvls",
        hardware="8x B200, NVSwitch (NVLink 5)",
        scope="intra-node",
        collective="all_reduce",
        algo="nvls",
        low_gbps=800.0,
        high_gbps=860.0,
        min_size_bytes=GiB,
        source="about 830-845 GB/s: the figure public nccl-tests write-ups give for 8x B200 all_reduce with "
        "NCCL's default; no such log is bundled",
        basis="reported",
        note="Not re-checked from this offline machine. NVLink 5 moves 900 GB/s per direction per GPU.",
    ),
    BusbwReference(
        id="ib-hdr-200g-per-nic",
        hardware="InfiniBand HDR 200 Gb/s (or RoCE at 200 Gb/s)",
        scope="inter-node per NIC",
        collective="all_reduce",
        algo="ring",
        low_gbps=22.0,
        high_gbps=25.0,
        min_size_bytes=GiB,
        source=f"line rate: 200 Gb/s = 25 GB/s per direction; nccl-tests over one HDR NIC reaches about 24 GB/s "
        f"busbw (busbw as {_PERF} defines it)",
        basis="derived",
        note="Per NIC: the band for a job is this times the NICs each node uses (one per GPU at most).",
    ),
    BusbwReference(
        id="ib-ndr-400g-per-nic",
        hardware="InfiniBand NDR 400 Gb/s (or RoCE at 400 Gb/s)",
        scope="inter-node per NIC",
        collective="all_reduce",
        algo="ring",
        low_gbps=45.0,
        high_gbps=50.0,
        min_size_bytes=GiB,
        source=f"line rate: 400 Gb/s = 50 GB/s per direction; nccl-tests over one NDR NIC reaches about "
        f"48-49 GB/s busbw (busbw as {_PERF} defines it)",
        basis="derived",
        note="Per NIC: the band for a job is this times the NICs each node uses (one per GPU at most).",
    ),
)

# GPU name (as NVML / nvidia-smi / nccl-tests print it) -> the table's GPU family. PCIe and NVL parts have no
# NVSwitch board: they match nothing.
_FAMILIES = (
    ("b200", re.compile(r"\bB200\b")),
    ("h200", re.compile(r"\bH200\b(?!.*\b(?:NVL|PCIe)\b)")),
    ("h100", re.compile(r"\bH100\b(?!.*\b(?:NVL|PCIe)\b)")),
    ("a100", re.compile(r"\bA100-SXM")),
)
_ROW_PREFIX = {"a100": "a100-sxm-8x-", "h100": "h100-sxm-8x-", "h200": "h200-sxm-8x-", "b200": "b200-8x-"}
_NIC_ROWS = {200_000: "ib-hdr-200g-per-nic", 400_000: "ib-ndr-400g-per-nic"}


def gpu_family(name: Optional[str]) -> Optional[str]:
    """ "a100" / "h100" / "h200" / "b200" for the SXM/NVSwitch parts the table
    covers, None for any other GPU name."""
    for family, pattern in _FAMILIES:
        if name and pattern.search(name):
            return family
    return None


def wanted_algo(env: dict) -> str:
    """What NCCL_ALGO asks of all_reduce: "default" (unset, or not about
    all_reduce), "nvls", "ring" (ring allowed, NVLS not), or "other" (tree,
    collnet, ... only). Reads "Ring,Tree", "^NVLS" and the per-collective
    "allreduce:ring;allgather:nvls" forms."""
    value = (env or {}).get("NCCL_ALGO", "").strip().lower()
    if ":" in value:
        parts = dict(p.split(":", 1) for p in value.split(";") if ":" in p)
        value = parts.get("allreduce", "").strip()
    if not value:
        return "default"
    if value.startswith("^"):  # an exclusion list: NCCL picks among the rest
        excluded = {p.strip() for p in value[1:].split(",")}
        return "ring" if "nvls" in excluded and "ring" not in excluded else "default"
    algos = {p.strip() for p in value.split(",")}
    if algos & {"nvls", "nvlstree"}:
        return "nvls"
    return "ring" if "ring" in algos else "other"


def match_reference(
    link: LinkTest, snapshots: Sequence[NodeSnapshot], collective: str = "all_reduce"
) -> tuple[Optional[BusbwReference], str]:
    """The row that applies to ``link`` (see :func:`reference_for`) and a
    plain sentence saying why it applies, or why none does."""
    if link.backend != "nccl" or link.device != "cuda":
        return None, f"{link.backend} on {link.device}: the table has rows for NCCL on GPUs only"
    if collective != "all_reduce":
        return None, f"the table has all_reduce rows only, not {collective}"
    nodes = max(1, int(link.nodes or 1))
    if link.world_size % nodes:
        return None, f"{link.world_size} ranks do not split evenly over {nodes} nodes"
    per_node = link.world_size // nodes
    snaps = [s for s in snapshots if isinstance(s, NodeSnapshot)]
    if not snaps:
        return None, "no node snapshots: the GPU model is unknown"
    algo = wanted_algo(link.env)
    if nodes == 1:
        names = {g.name for s in snaps for g in s.gpus}
        families = {gpu_family(n) for n in names}
        if not names or None in names:
            return None, "the snapshots do not name the GPU model"
        if len(families) != 1 or None in families:
            return None, f"no row for {', '.join(sorted(names))}"
        family = families.pop()
        if per_node != 8:
            return None, f"the {family.upper()} rows are for 8 GPUs on one NVSwitch board; this test ran {per_node}"
        by_id = {r.id: r for r in REFERENCES}
        if algo == "other":
            return None, f"NCCL_ALGO={link.env.get('NCCL_ALGO')}: the table has ring and NVLS rows only"
        order = {"default": ("nvls", "ring"), "nvls": ("nvls",), "ring": ("ring",)}[algo]
        for kind in order:
            row = by_id.get(_ROW_PREFIX[family] + kind)
            if row is not None:
                how = "NCCL_ALGO unset: NCCL's default" if algo == "default" else f"NCCL_ALGO={link.env['NCCL_ALGO']}"
                return row, f"one node of 8 {family.upper()}s, {how} ({row.algo})"
        return None, f"no {algo} row for 8x {family.upper()}"
    # several nodes: the network is the bottleneck; count each node's fastest RDMA NICs that are up
    counts, speeds = [], set()
    for s in snaps:
        rdma = [n for n in rdma_nics(s) if n.speed_mbps and (n.state or "").lower() != "down"]
        if not s.nics:
            return None, f"{s.hostname}: its snapshot records no NICs, so the network's speed is unknown"
        if not rdma:
            return None, f"{s.hostname}: no InfiniBand/RoCE NIC that is up with a known speed"
        top = max(n.speed_mbps for n in rdma)
        speeds.add(top)
        counts.append(sum(n.speed_mbps == top for n in rdma))
    if len(speeds) != 1:
        return None, f"the nodes' fastest NICs differ ({', '.join(f'{s // 1000} Gb/s' for s in sorted(speeds))})"
    speed = speeds.pop()
    row_id = _NIC_ROWS.get(speed)
    if row_id is None:
        return None, f"no row for {speed // 1000} Gb/s NICs (the table has 200 and 400 Gb/s)"
    if algo == "other":
        return None, f"NCCL_ALGO={link.env.get('NCCL_ALGO')}: measure the network with NCCL_ALGO=Ring"
    row = next(r for r in REFERENCES if r.id == row_id)
    nics = min(min(counts), per_node)
    scaled = dataclasses.replace(
        row,
        scope="inter-node",
        low_gbps=round(row.low_gbps * nics, 3),
        high_gbps=round(row.high_gbps * nics, 3),
        hardware=f"{row.hardware} x {nics} per node",
        note=f"{row.note} Here: {row.low_gbps:g}-{row.high_gbps:g} GB/s per NIC x {how_many(nics, 'NIC')} "
        f"per node ({how_many(per_node, 'rank')} per node, {min(counts)} such "
        f"NIC{'s' if min(counts) != 1 else ''} on the poorest node).",
    )
    return scaled, (f"{nodes} nodes, {nics} x {speed // 1000} Gb/s RDMA NIC{'s' if nics != 1 else ''} per node in use")


def reference_for(link: LinkTest, snapshots: Sequence[NodeSnapshot], collective: str = "all_reduce") -> Optional[BusbwReference]:
    """The reference row that applies to ``link``, or None (unknown hardware,
    gloo, CPUs, a collective or NCCL_ALGO the table has no row for).

    One node: the GPU model from the snapshots' GPU names (all the same;
    8x A100 SXM4, H100/H200 SXM, B200) and 8 ranks on it; NCCL_ALGO in
    ``link.env`` picks the ring or NVLS row (unset: NCCL's default, NVLS
    where the hardware has it). Several nodes: the per-NIC row of the
    nodes' fastest InfiniBand/RoCE NICs that are up (200 or 400 Gb/s), as
    a copy whose band is multiplied by the NICs each node uses (at most one
    per rank on it) and whose ``scope`` reads "inter-node"."""
    return match_reference(link, snapshots, collective)[0]
