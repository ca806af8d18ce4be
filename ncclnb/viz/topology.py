"""The topology view: GPU x (GPU + NIC) matrix coloured by link class."""
from __future__ import annotations

from typing import Iterable, Optional

from ..model import NodeSnapshot, nvlink_count
from ._common import (
    LINK_COLOURS,
    LINK_MEANING,
    LINK_ORDER,
    esc,
    gpu_hover,
    gpus_in_use,
    link_class,
    nic_info,
    shorten,
)

# Past this many columns cell text is unreadable: colour and hover carry it.
TEXT_LIMIT = 24
P2P_PRIMARY = ("read", "write", "nvlink", "atomics", "prop")


def _p2p_status(snapshot: NodeSnapshot, i: int, j: int) -> dict[str, str]:
    out = {}
    for cap, matrix in snapshot.links.p2p.items():
        try:
            out[cap] = matrix[i][j]
        except IndexError:
            continue
    return out


def _primary_p2p(statuses: dict[str, str]) -> Optional[tuple[str, str]]:
    for cap in P2P_PRIMARY:
        if cap in statuses:
            return cap, statuses[cap]
    return next(iter(statuses.items()), None)


def topology_matrix(snapshot: NodeSnapshot):
    """Rows (GPU positions) and columns ("GPUk" / "NICk") with their labels.

    Returns ``(columns, labels)`` where ``labels[i][c]`` is the raw
    ``topo -m`` label between GPU i and column c ("?" when not known)."""
    n = len(snapshot.gpus)
    nics = snapshot.links.nic_names
    columns = [f"GPU{g.index}" for g in snapshot.gpus] + [f"NIC{k}" for k in range(len(nics))]
    labels = []
    for i in range(n):
        row = []
        for j in range(n):
            row.append("X" if i == j else (snapshot.links.label(i, j) or "?").strip())
        for k in range(len(nics)):
            try:
                row.append(snapshot.links.gpu_nic[i][k].strip())
            except IndexError:
                row.append("?")
        labels.append(row)
    return columns, labels


def topology_figure(snapshot: NodeSnapshot, highlight: Optional[Iterable[int]] = None, ranks=()):
    """Pure: a plotly Figure of the node's GPU x GPU and GPU x NIC links.

    Cells are coloured by link class (NV# > PIX > PXB > PHB > NODE > SYS),
    show the label (NVLink count included) and a P2P status that is not OK;
    hover gives bus ids and NUMA nodes. ``highlight`` lists GPU positions in
    use; by default they come from the rank table (``ranks``) or the
    snapshot's ``CUDA_VISIBLE_DEVICES``. GPUs not in use are dimmed."""
    import plotly.graph_objects as go

    n = len(snapshot.gpus)
    nic_names = snapshot.links.nic_names
    columns, labels = topology_matrix(snapshot)
    in_use = sorted(set(highlight)) if highlight is not None else gpus_in_use(snapshot, ranks)
    in_use_set = set(range(n)) if in_use is None else set(in_use)

    show_text = len(columns) <= TEXT_LIMIT
    # big matrices: a shorter hover (the colour bar names each class) keeps the JSON small
    row_desc = [gpu_hover(snapshot, p) if show_text else f"<b>GPU{g.index}</b> bus {esc(g.pci_bus_id or '?')} · NUMA {esc('?' if g.numa_node is None else g.numa_node)}"
                for p, g in enumerate(snapshot.gpus)]
    z, text, hover = [], [], []
    for i in range(n):
        zr, tr, hr = [], [], []
        for c, label in enumerate(labels[i]):
            cls = link_class(label)
            zr.append(LINK_ORDER.index(cls))
            cell = esc(label) if cls != "X" else "·"
            extra = ""
            if c < n and c != i:
                statuses = _p2p_status(snapshot, i, c)
                primary = _primary_p2p(statuses)
                if primary and primary[1].strip().upper() not in ("OK", "X"):
                    cell += f"<br>✗{esc(primary[1].strip())}"
                if statuses:
                    extra = "<br>P2P " + ", ".join(f"{esc(k)} {esc(v)}" for k, v in statuses.items())
                other = row_desc[c]
            elif c >= n:
                other = _nic_hover(snapshot, nic_names[c - n], c - n)
            else:
                other = "itself"
            tr.append(cell)
            meaning = f": {esc(LINK_MEANING[cls])}" if show_text else ""
            hr.append(f"{row_desc[i]}<br>↔ {other}<br><b>{esc(label)}</b>{meaning}{extra}")
        z.append(zr)
        text.append(tr)
        hover.append(hr)

    # a discrete colour scale: one flat band per class
    k = len(LINK_ORDER)
    scale = []
    for idx, cls in enumerate(LINK_ORDER):
        scale.append([idx / k, LINK_COLOURS[cls]])
        scale.append([(idx + 1) / k, LINK_COLOURS[cls]])
    rows = [f"GPU{g.index}" for g in snapshot.gpus]
    heat = go.Heatmap(
        z=z,
        x=columns,
        y=rows,
        zmin=-0.5,
        zmax=k - 0.5,
        colorscale=scale,
        text=text,
        texttemplate="%{text}" if show_text else None,
        hovertext=hover,
        hovertemplate="%{hovertext}<extra></extra>",
        xgap=1,
        ygap=1,
        name="links",
        colorbar=dict(
            title=dict(text="link"),
            tickvals=list(range(k)),
            ticktext=[f"{c}" for c in LINK_ORDER[:-2]] + ["self", "unknown"],
            len=0.9,
        ),
    )
    fig = go.Figure(heat)

    def tick(label: str, used: bool) -> str:
        return f"<b>{label} ●</b>" if used else label

    row_ticks = [tick(r, p in in_use_set and in_use is not None) for p, r in enumerate(rows)]
    col_ticks = row_ticks + [f"{c}<br>{esc(shorten(nic_names[k2], 14))}" for k2, c in enumerate(columns[n:])]
    shapes = []
    if in_use is not None:
        # dim what the job does not use, so the GPUs in use stand out
        for p in range(n):
            if p in in_use_set:
                continue
            shapes.append(dict(type="rect", xref="x", yref="y", x0=-0.5, x1=len(columns) - 0.5,
                               y0=p - 0.5, y1=p + 0.5, fillcolor="white", opacity=0.6, line_width=0, layer="above"))
            shapes.append(dict(type="rect", xref="x", yref="y", x0=p - 0.5, x1=p + 0.5,
                               y0=-0.5, y1=n - 0.5, fillcolor="white", opacity=0.6, line_width=0, layer="above"))
    if nic_names:
        shapes.append(dict(type="line", xref="x", yref="y", x0=n - 0.5, x1=n - 0.5, y0=-0.5, y1=n - 0.5,
                           line=dict(color="black", width=2)))
    used_text = (
        "all GPUs" if in_use is None
        else ("GPUs in use: " + ", ".join(rows[p] for p in in_use) if in_use else "no GPU in use matches")
    )
    title = (f"Topology of {esc(shorten(snapshot.hostname, 100))}<br>"
             f"<span style='font-size:12px'>{n} GPUs, {len(nic_names)} NICs · {used_text}</span>")
    cell_px = 44 if show_text else max(8, min(22, 900 // max(1, len(columns))))
    fig.update_layout(
        title=dict(text=title, font=dict(size=14)),
        xaxis=dict(side="top", tickmode="array", tickvals=columns, ticktext=col_ticks, showgrid=False),
        yaxis=dict(autorange="reversed", tickmode="array", tickvals=rows, ticktext=row_ticks, showgrid=False),
        shapes=shapes,
        height=min(1100, 160 + cell_px * max(1, n)),
        margin=dict(l=70, r=20, t=110, b=20),
        plot_bgcolor="white",
        clickmode="event",
    )
    return fig


def _nic_hover(snapshot: NodeSnapshot, name: str, k: int) -> str:
    nic = nic_info(snapshot, name)
    text = f"<b>NIC{k}</b> {esc(name)}"
    if nic is not None:
        text += f" ({esc(nic.kind or '?')}, {esc(nic.state or '?')}"
        if nic.speed_mbps:
            text += f", {nic.speed_mbps // 1000} Gb/s"
        text += f", NUMA {esc('?' if nic.numa_node is None else nic.numa_node)})"
    return text


def topology_details(snapshot: NodeSnapshot, row: int, column: int) -> str:
    """Escaped HTML about one cell (GPU position ``row`` x column index)."""
    columns, labels = topology_matrix(snapshot)
    if not (0 <= row < len(snapshot.gpus) and 0 <= column < len(columns)):
        return "<i>no such cell</i>"
    n = len(snapshot.gpus)
    g = snapshot.gpus[row]
    label = labels[row][column]
    cls = link_class(label)
    parts = [f"<b>{esc(columns[row])} ↔ {esc(columns[column])}</b>: <code>{esc(label)}</code> = {esc(LINK_MEANING[cls])}"]
    if nvlink_count(label):
        parts.append(f"{nvlink_count(label)} NVLinks bonded")
    parts.append(f"{esc(columns[row])}: {esc(g.name or '?')}, bus {esc(g.pci_bus_id or '?')}, NUMA {esc(g.numa_node)}")
    if column < n:
        o = snapshot.gpus[column]
        parts.append(f"{esc(columns[column])}: {esc(o.name or '?')}, bus {esc(o.pci_bus_id or '?')}, NUMA {esc(o.numa_node)}")
        statuses = _p2p_status(snapshot, row, column)
        if statuses:
            parts.append("P2P (nvidia-smi topo -p2p): " + ", ".join(f"{esc(k)} {esc(v)}" for k, v in statuses.items()))
    else:
        name = snapshot.links.nic_names[column - n]
        parts.append(_nic_hover(snapshot, name, column - n))
    parts.append("<small>check by hand: <code>nvidia-smi topo -m</code></small>")
    return "<br>".join(parts)
