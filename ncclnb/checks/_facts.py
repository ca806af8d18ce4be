"""Small pure helpers the checks share: parsing env syntax, versions, link
labels, and which GPUs a job uses. Nothing here raises on odd input."""
from __future__ import annotations

import re
from collections import Counter
from typing import Iterable, Optional

from ..model import Gpu, NodeSnapshot, RankEntry, nvlink_count

# nvidia-smi topo -m labels from nearest to farthest (its own legend order).
LINK_ORDER = ("X", "NV", "PIX", "PXB", "PHB", "NODE", "SYS")


def link_distance(label: Optional[str]) -> Optional[int]:
    """Rank of a topo label, 0 = self, 1 = NVLink ... 6 = SYS; None if unknown."""
    if not isinstance(label, str):
        return None
    label = label.strip()
    if nvlink_count(label):
        return 1
    try:
        return LINK_ORDER.index(label)
    except ValueError:
        return None


def parse_version(text: Optional[str]) -> Optional[tuple[int, ...]]:
    """"2.19.3+cuda12.3" -> (2, 19, 3); "535.54.03" -> (535, 54, 3); junk -> None."""
    if not isinstance(text, str):
        return None
    m = re.match(r"\s*v?(\d+(?:\.\d+)*)", text)
    if not m:
        return None
    return tuple(int(p) for p in m.group(1).split("."))


def short_version(text: Optional[str]) -> Optional[str]:
    v = parse_version(text)
    return ".".join(map(str, v)) if v else None


def env_flag(env: dict, name: str) -> bool:
    """NCCL reads integer flags with atoi-like parsing: "1" on, "0"/unset off."""
    value = (env or {}).get(name)
    if not isinstance(value, str):
        return False
    v = value.strip()
    return v.isdigit() and int(v) != 0




def majority(values: Iterable) -> object:
    """Most common value; ties broken by first seen."""
    counts = Counter(values)
    return counts.most_common(1)[0][0] if counts else None


def gpus(snap: NodeSnapshot) -> tuple[Gpu, ...]:
    return tuple(g for g in (snap.gpus or ()) if isinstance(g, Gpu))


def gpu_position(snap: NodeSnapshot, gpu: Gpu) -> Optional[int]:
    """Row of ``gpu`` in the link matrices (snapshot order)."""
    for i, g in enumerate(gpus(snap)):
        if g is gpu:
            return i
    return None


def label_between(snap: NodeSnapshot, a: Gpu, b: Gpu) -> Optional[str]:
    i, j = gpu_position(snap, a), gpu_position(snap, b)
    if i is None or j is None:
        return None
    try:
        row = snap.links.gpu_gpu[i]
        return row[j] if isinstance(row[j], str) else None
    except (IndexError, TypeError, AttributeError):
        return None


def parse_visible_devices(snap: NodeSnapshot) -> tuple[Optional[list[Gpu]], list[str]]:
    """GPUs named by ``CUDA_VISIBLE_DEVICES`` in the snapshot env, in CUDA order.

    Returns ``(gpus, bad_entries)``; ``gpus`` is None when the variable is
    unset (every GPU visible). Integers are taken as NVML indices, which
    CUDA also uses when ``CUDA_DEVICE_ORDER=PCI_BUS_ID`` and, for identical
    GPUs, by default. ``GPU-<uuid>`` entries may be a unique prefix. CUDA
    stops at the first entry it cannot resolve, so later entries are
    invisible too; those are returned in ``bad_entries``."""
    raw = (snap.env or {}).get("CUDA_VISIBLE_DEVICES")
    if not isinstance(raw, str):
        return None, []
    all_gpus = gpus(snap)
    chosen: list[Gpu] = []
    bad: list[str] = []
    entries = [e.strip() for e in raw.split(",")] if raw.strip() else []
    for k, entry in enumerate(entries):
        match = None
        if re.fullmatch(r"\d+", entry):
            match = next((g for g in all_gpus if g.index == int(entry)), None)
        elif entry.startswith("GPU-"):
            hits = [g for g in all_gpus if isinstance(g.uuid, str) and g.uuid.startswith(entry)]
            match = hits[0] if len(hits) == 1 else None
        if match is None or match in chosen:
            bad = entries[k:]
            break
        chosen.append(match)
    return chosen, bad


def visible_gpus(snap: NodeSnapshot) -> list[Gpu]:
    """GPUs a process on this node sees, in CUDA order."""
    chosen, _ = parse_visible_devices(snap)
    return list(gpus(snap)) if chosen is None else chosen


def rank_gpu(snap: Optional[NodeSnapshot], entry: RankEntry) -> Optional[Gpu]:
    """The physical GPU a rank used: by UUID, else by its CUDA index into the
    node's visible GPUs."""
    if snap is None:
        return None
    if isinstance(entry.gpu_uuid, str) and entry.gpu_uuid:
        for g in gpus(snap):
            if g.uuid == entry.gpu_uuid:
                return g
    if isinstance(entry.cuda_index, int):
        vis = visible_gpus(snap)
        if 0 <= entry.cuda_index < len(vis):
            return vis[entry.cuda_index]
    return None


def gpus_in_use(snap: NodeSnapshot, ranks: tuple[RankEntry, ...]) -> tuple[list[Gpu], str]:
    """The GPU set a job uses on this node and how we know it: the rank
    table's GPUs if any resolve, else ``CUDA_VISIBLE_DEVICES``; empty when
    neither says (then the job may use any GPU)."""
    from_ranks = []
    for r in ranks or ():
        g = rank_gpu(snap, r)
        if g is not None and g not in from_ranks:
            from_ranks.append(g)
    if from_ranks:
        return sorted(from_ranks, key=lambda g: g.index), "rank table"
    chosen, _ = parse_visible_devices(snap)
    if chosen:
        return chosen, f"CUDA_VISIBLE_DEVICES={snap.env.get('CUDA_VISIBLE_DEVICES')}"
    return [], ""


def rdma_nics(snap: NodeSnapshot):
    """NICs that NCCL's IB transport would use: InfiniBand or RoCE HCAs whose
    port is not known to be down."""
    out = []
    for n in snap.nics or ():
        kind = (n.kind or "").lower()
        # mlx5_N is the name the mlx5_ib driver gives a ConnectX HCA (IB or RoCE);
        # `nvidia-smi topo -m` lists such NICs with no other facts.
        hca_name = isinstance(n.name, str) and re.fullmatch(r"mlx\d+_\d+", n.name) and kind in ("", "infiniband", "roce")
        if kind in ("infiniband", "roce") or (n.ib_device and kind != "loopback") or hca_name:
            state = (n.ib_port_state or "").upper()
            if state and state != "ACTIVE" and "ACTIVE" not in state:
                continue
            out.append(n)
    return out


_RDMA_NAME = re.compile(r"[a-z]+\d*_\d+")  # mlx5_0, efa_0, bnxt_re0 is not matched but has no netdev use


def socket_interfaces(snap: NodeSnapshot):
    """NICs that are network interfaces (what NCCL_SOCKET_IFNAME selects from),
    leaving out RDMA device names such as ``mlx5_0`` that have no netdev."""
    return [n for n in snap.nics or () if isinstance(n.name, str) and not _RDMA_NAME.fullmatch(n.name)]


def is_loopback(nic) -> bool:
    return (nic.kind or "").lower() == "loopback" or nic.name == "lo"


def is_docker(nic) -> bool:
    return nic.name.startswith("docker")
