"""Helpers shared by the figure builders: escaping, link classes, cpulists,
and turning "a snapshot, a report, a bundled name or a path" into a value.

Nothing here imports plotly, pandas or ipywidgets.
"""
from __future__ import annotations

import html
import json
import os
from typing import Iterable, Optional, Union

from ..model import ClusterReport, NodeSnapshot, RankEntry, SchemaError, nvlink_count

Target = Union[NodeSnapshot, ClusterReport]


def esc(value: object) -> str:
    """HTML-escape anything that came from a machine, a log or a user, for
    text (not attribute) positions: ``& < >`` become entities.

    Plotly's hover, title and tick labels accept a subset of HTML and show
    ``&lt;`` as ``<`` (but ``&quot;`` literally), so quotes are left as
    they are: harmless outside a tag."""
    return html.escape("" if value is None else str(value), quote=False)


def esc_attr(value: object) -> str:
    """HTML-escape for an attribute value (quotes too)."""
    return html.escape("" if value is None else str(value), quote=True)


def shorten(text: str, limit: int = 80) -> str:
    text = str(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


# Link classes from best to worst, as ``nvidia-smi topo -m`` names them.
LINK_CLASSES = ("NV#", "PIX", "PXB", "PHB", "NODE", "SYS")
LINK_MEANING = {
    "X": "the GPU itself",
    "NV#": "a bonded set of NVLinks",
    "PIX": "at most one PCIe bridge",
    "PXB": "several PCIe bridges, no host bridge",
    "PHB": "PCIe and a PCIe host bridge (the CPU)",
    "NODE": "PCIe and the interconnect between host bridges of one NUMA node",
    "SYS": "PCIe and the SMP interconnect between NUMA nodes (QPI/UPI/xGMI)",
    "?": "not known",
}
# One colour per class, green (fast) to red (slow); "X" is the diagonal.
LINK_COLOURS = {
    "NV#": "#1a9850",
    "PIX": "#91cf60",
    "PXB": "#d9ef8b",
    "PHB": "#fee08b",
    "NODE": "#fc8d59",
    "SYS": "#d73027",
    "X": "#bdbdbd",
    "?": "#f0f0f0",
}
LINK_ORDER = ("NV#", "PIX", "PXB", "PHB", "NODE", "SYS", "X", "?")


def link_class(label: Optional[str]) -> str:
    """"NV12" -> "NV#", " X " -> "X", unknown text -> "?"."""
    text = (label or "").strip().upper()
    if nvlink_count(text):
        return "NV#"
    if text in LINK_CLASSES or text == "X":
        return text
    return "?"






def resolve(target: object) -> Target:
    """A NodeSnapshot, ClusterReport, bundled machine name or JSON path -> value."""
    if isinstance(target, (NodeSnapshot, ClusterReport)):
        return target
    if isinstance(target, dict):
        return _from_json(target, "<dict>")
    if isinstance(target, (str, os.PathLike)):
        text = os.fspath(target)
        try:
            from ..recorded import load_facts as load  # the bundled machines and their loader
        except ImportError:
            load = None
        if load is not None:
            return load(text)
        if os.path.exists(text):
            with open(text, encoding="utf-8") as fh:
                return _from_json(json.load(fh), text)
        raise ValueError(f"no such file or bundled machine: {text!r}")
    raise TypeError(
        f"expected a NodeSnapshot, ClusterReport, bundled name or path, got {type(target).__name__}"
    )


def _from_json(data: object, where: str) -> Target:
    tag = data.get("schema", "") if isinstance(data, dict) else ""
    if isinstance(tag, str) and tag.startswith("ncclnb.report/"):
        return ClusterReport.from_dict(data)
    if isinstance(tag, str) and tag.startswith("ncclnb.node/"):
        return NodeSnapshot.from_dict(data)
    raise SchemaError("schema", f"{where}: not a node snapshot or cluster report")


def snapshots_of(target: Target) -> tuple[NodeSnapshot, ...]:
    return (target,) if isinstance(target, NodeSnapshot) else tuple(target.snapshots)


def ranks_of(target: Target) -> tuple[RankEntry, ...]:
    return tuple(target.ranks) if isinstance(target, ClusterReport) else ()


def pick_snapshot(target: Target, host: Optional[str] = None) -> NodeSnapshot:
    snaps = snapshots_of(target)
    if not snaps:
        raise ValueError("the report holds no node snapshot to draw")
    if host is None:
        return snaps[0]
    for snap in snaps:
        if snap.hostname == host:
            return snap
    raise ValueError(f"no snapshot of host {host!r} in the report")


def _visible_tokens(snapshot: NodeSnapshot) -> Optional[list[str]]:
    value = snapshot.env.get("CUDA_VISIBLE_DEVICES")
    if value is None:
        return None
    return [t.strip() for t in value.split(",") if t.strip()]


def gpus_in_use(snapshot: NodeSnapshot, ranks: Iterable[RankEntry] = ()) -> Optional[list[int]]:
    """Positions (in ``snapshot.gpus`` order) of the GPUs the job uses.

    From the rank table where ranks on this host name their GPU, else from
    ``CUDA_VISIBLE_DEVICES`` in the snapshot's env (indices or UUIDs);
    ``None`` when nothing says, meaning "all of them"."""
    by_uuid = {g.uuid: pos for pos, g in enumerate(snapshot.gpus) if g.uuid}
    by_index = {g.index: pos for pos, g in enumerate(snapshot.gpus)}
    by_cuda = {g.cuda_index: pos for pos, g in enumerate(snapshot.gpus) if g.cuda_index is not None}
    used: list[int] = []
    for r in ranks:
        if r.host != snapshot.hostname:
            continue
        pos = by_uuid.get(r.gpu_uuid) if r.gpu_uuid else None
        if pos is None and r.cuda_index is not None:
            pos = by_cuda.get(r.cuda_index)
            if pos is None:
                pos = _cuda_to_position(snapshot, r.cuda_index)
        if pos is not None and pos not in used:
            used.append(pos)
    if used:
        return sorted(used)
    tokens = _visible_tokens(snapshot)
    if tokens is None:
        return None
    for tok in tokens:
        if tok.isdigit() and int(tok) in by_index:
            used.append(by_index[int(tok)])
        else:
            match = next((p for u, p in by_uuid.items() if u.startswith(tok) or tok in u), None)
            if match is not None:
                used.append(match)
    return sorted(set(used))


def _cuda_to_position(snapshot: NodeSnapshot, cuda_index: int) -> Optional[int]:
    """CUDA index under CUDA_VISIBLE_DEVICES -> snapshot position."""
    tokens = _visible_tokens(snapshot)
    if tokens is None:
        return cuda_index if 0 <= cuda_index < len(snapshot.gpus) else None
    if 0 <= cuda_index < len(tokens) and tokens[cuda_index].isdigit():
        phys = int(tokens[cuda_index])
        return next((p for p, g in enumerate(snapshot.gpus) if g.index == phys), None)
    return None


def gpu_label(snapshot: NodeSnapshot, pos: int) -> str:
    return f"GPU{snapshot.gpus[pos].index}"


def gpu_hover(snapshot: NodeSnapshot, pos: int) -> str:
    """Escaped one-block description of a GPU for hover text."""
    g = snapshot.gpus[pos]
    bits = [f"<b>GPU{g.index}</b> {esc(shorten(g.name or 'unknown model', 40))}"]
    bits.append(f"bus {esc(g.pci_bus_id or '?')} · NUMA {esc(_num(g.numa_node))}")
    if g.cuda_index is not None:
        bits.append(f"CUDA index {g.cuda_index}")
    return "<br>".join(bits)


def _num(value: object) -> str:
    return "?" if value is None else str(value)


def nic_label(snapshot: NodeSnapshot, k: int) -> str:
    return f"NIC{k}"


def nic_info(snapshot: NodeSnapshot, name: str):
    return next((n for n in snapshot.nics if n.name == name or n.ib_device == name), None)
