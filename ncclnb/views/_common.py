"""Helpers shared by the figure builders: escaping, the link palette,
and turning "a snapshot, a report, a bundled name or a path" into a value.

What the facts mean (which GPUs CUDA sees, the GPU a rank runs on, the GPUs
a job uses, a link's class) is :mod:`ncclnb.model.derive`'s reading, the
checks' too; the views only draw it. Nothing here imports plotly, pandas or
ipywidgets.
"""

from __future__ import annotations

import html
import os
from typing import Iterable, Optional, Union

from ..errors import InputError
from ..model import ClusterReport, Finding, NodeSnapshot, RankEntry, SchemaError
from ..model.derive import LINK_CLASSES, RankGpus
from ..model.words import span_parts

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


# Link classes from best to worst (``LINK_CLASSES``, as ``nvidia-smi topo -m``
# names them) are ``model.derive``'s, and so is the class of a label
# (``derive.link_class``); the views give each a meaning and a colour.
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
# The one link palette (the live figure, its static SVG and its legend all
# read it): a sequential ramp sampled from viridis, darkest for the fastest
# class and lighter with every slower one, monotone in lightness so that the
# speed order survives any colour-vision deficiency (tests/views/test_palette.py
# checks it under simulated protanopia, deuteranopia and tritanopia).
# "X" (the GPU itself) and "?" (not known) are neutral greys outside the ramp.
LINK_COLOURS = {
    "NV#": "#440154",
    "PIX": "#414487",
    "PXB": "#2a788e",
    "PHB": "#22a884",
    "NODE": "#7ad151",
    "SYS": "#fde725",
    "X": "#bdbdbd",
    "?": "#f0f0f0",
}
# Legend names of the classes that are not a ``topo -m`` label.
LINK_NAMES = {"NV#": "NV# (NVLink)", "X": "self", "?": "not known"}
LINK_ORDER = LINK_CLASSES + ("X", "?")  # the palette's order: the classes best first, then self and unknown


# The narrowest figure a view is laid out for, in px (a notebook beside its
# side bar): the topology and NUMA views size their labels, margins and
# marker rows so that nothing overlaps at this width; a wider figure (they set
# no width: each takes its container's) only adds room.
NARROW = 700


def step_colorscale(colours: Iterable[str]) -> list:
    """A plotly colorscale giving each of n categories its own flat band, for
    a heatmap of category indices 0..n-1 drawn with zmin=-0.5, zmax=n-0.5."""
    colours = list(colours)
    n = len(colours)
    scale: list = []
    for idx, colour in enumerate(colours):
        scale += [[idx / n, colour], [(idx + 1) / n, colour]]
    return scale


def resolve(target: object) -> Target:
    """A NodeSnapshot, ClusterReport, bundled machine name or JSON path -> value."""
    if isinstance(target, (NodeSnapshot, ClusterReport)):
        return target
    if isinstance(target, dict):
        return _from_json(target, "<dict>")
    if isinstance(target, (str, os.PathLike)):
        from ..recorded import load_facts  # the bundled machines and any ncclnb JSON file

        return load_facts(os.fspath(target))
    raise TypeError(f"expected a NodeSnapshot, ClusterReport, bundled name or path, got {type(target).__name__}")


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
        raise InputError("the report holds no node snapshot to draw")
    if host is None:
        return snaps[0]
    for snap in snaps:
        if snap.hostname == host:
            return snap
    raise InputError(f"no snapshot of host {host!r} in the report")


class GpuPositions(RankGpus):
    """:class:`ncclnb.model.derive.RankGpus` (the GPU each rank runs on, the
    GPUs CUDA enumerates) under the name the job map still uses;
    ``rank_position`` is its ``position``."""

    def rank_position(self, r: RankEntry) -> Optional[int]:
        return self.position(r)


def gpus_in_use(
    snapshot: NodeSnapshot, ranks: Iterable[RankEntry] = (), positions: Optional[RankGpus] = None
) -> Optional[list[int]]:
    """Positions (in ``snapshot.gpus`` order) of the GPUs the job uses:
    :meth:`ncclnb.model.derive.RankGpus.in_use` (the rank table's GPUs on this
    host, else what ``CUDA_VISIBLE_DEVICES`` leaves visible), sorted for
    drawing; ``None`` when neither says, meaning "all of them"."""
    seen = (positions or RankGpus(snapshot)).in_use(ranks)
    return None if seen.positions is None else sorted(seen.positions)


def index_span(numbers: Iterable[int], limit: int = 24) -> str:
    """[0,1,2,3,7] -> "0-3,7"; at most ``limit`` ranges, then " … (N)"."""
    parts, count, cut = span_parts(numbers, limit)
    return ",".join(parts) + (f" … ({count})" if cut else "")


def gpu_label(snapshot: NodeSnapshot, pos: int) -> str:
    return f"GPU{snapshot.gpus[pos].index}"


def gpu_hover(snapshot: NodeSnapshot, pos: int) -> str:
    """Escaped one-block description of a GPU for hover text."""
    g = snapshot.gpus[pos]
    bits = [f"<b>GPU{g.index}</b> {esc(shorten(g.name or 'unknown model', 40))}"]
    bits.append(f"{bus_text(g.pci_bus_id)} · {numa_text(g.numa_node)}")
    if g.cuda_index is not None:
        bits.append(f"CUDA index {g.cuda_index}")
    return "<br>".join(bits)


def numa_text(node: object) -> str:
    """Escaped "NUMA 1", or "NUMA node not known": an unknown said in words."""
    return "NUMA node not known" if node is None or node == "" else f"NUMA {esc(node)}"


def bus_text(bus_id: Optional[str]) -> str:
    """Escaped "bus 0000:17:00.0", or "bus not known"."""
    return f"bus {esc(bus_id)}" if bus_id else "bus not known"


def nic_traits(nic, place=None) -> str:
    """Escaped "infiniband, up, 200 Gb/s, NUMA 1" of what is known about a NIC
    (an unknown kind or state is left out; an unknown NUMA node is said).
    ``place`` is the NIC's :class:`ncclnb.model.derive.NicNuma` (its NUMA node
    as recorded or read off the topo -m links); None: the recorded node alone."""
    bits = [esc(x) for x in (nic.kind, nic.state) if x]
    if nic.speed_mbps:
        bits.append(f"{nic.speed_mbps // 1000} Gb/s")
    node = place.node if place is not None else nic.numa_node
    bits.append(numa_text(node) + (" read off nvidia-smi topo -m" if place is not None and place.source == "topo -m" else ""))
    return ", ".join(bits)


def nic_label(snapshot: NodeSnapshot, k: int) -> str:
    return f"NIC{k}"


def nic_info(snapshot: NodeSnapshot, name: str):
    return next((n for n in snapshot.nics if n.name == name or n.ib_device == name), None)


def run_checks(target) -> tuple[list[Finding], Optional[str]]:
    """Findings of ``ncclnb.checks.check`` or, when the checks fail, no
    findings and the reason."""
    from ..checks import check

    try:
        return list(check(target)), None
    except Exception as exc:  # a broken check must not take the dashboard down
        return [], f"checks failed: {type(exc).__name__}: {exc}"


def report_findings(report: ClusterReport) -> tuple[list[Finding], Optional[str]]:
    """The findings a view of ``report`` marks: the report's own (what the
    survey's checks said when it wrote it) when it carries any, else
    :func:`run_checks` (then with its problem, if any)."""
    if report.findings:
        return list(report.findings), None
    return run_checks(report)
