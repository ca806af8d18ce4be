"""The NUMA placement view: NUMA nodes side by side, with the CPUs, GPUs and
NICs under each, and every rank's CPU affinity drawn against its GPU's node."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Optional

import traitlets

from ..model import ClusterReport, Finding, NodeSnapshot, RankEntry
from ..model.cpulist import format_cpulist, parse_cpulist
from ..model.derive import NicNuma, RankGpus, nic_numa
from ..model.words import how_many
from ._common import (
    NARROW,
    bus_text,
    esc,
    esc_attr,
    gpu_hover,
    index_span,
    numa_text,
    pick_snapshot,
    ranks_of,
    resolve,
    shorten,
    snapshots_of,
)
from .widgets import OneHostView, View, detail_pane, hover_on_click, snapshot_of, with_text_form

NUMA_HINT = "<i>Click a GPU, NIC or rank for details.</i>"

AFFINITY_COLOURS = {
    "local": "#1a9850",  # pinned to the GPU's own NUMA node
    "spans": "#fdae61",  # includes the GPU's node and others
    "remote": "#d73027",  # excludes the GPU's node entirely
    "unpinned": "#4575b4",  # allowed every CPU of the host (no binding, the default)
    "unknown": "#969696",  # affinity or GPU node not known
}
# The status is a shape as well as a colour (never colour alone): the rank
# markers take these symbols, the summary table's ranks these marks.
AFFINITY_SYMBOLS = {
    "local": "circle",
    "spans": "diamond",
    "remote": "square",
    "unpinned": "circle-open",
    "unknown": "triangle-up",
}
AFFINITY_MARKS = {"local": "●", "spans": "◆", "remote": "■", "unpinned": "○", "unknown": "▲"}
AFFINITY_MEANING = {
    "local": "CPU affinity is on the GPU's own NUMA node",
    "spans": "CPU affinity spans several NUMA nodes: threads and pinned memory may land on the far socket",
    "remote": "CPU affinity excludes the GPU's NUMA node: every copy crosses the socket interconnect",
    "unpinned": "not pinned: the rank may run on any CPU of the host (the default, not flagged)",
    "unknown": "CPU affinity or the GPU's NUMA node is not known",
}
PER_ROW = 8  # markers per line inside one NUMA column, at most (fewer where the column is narrow)
# The layout is sized for the narrowest figure it is drawn in (_common.NARROW
# px); a wider one only adds room. Header text is wrapped, and markers put
# fewer to a line, so that nothing runs into the next NUMA box at that width.
MARGIN = dict(l=60, r=20, t=50, b=20)
HEAD_FONT = 11  # px, the NUMA boxes' header text
LABEL_FONT = 9  # px, marker labels
CHAR_PX = 0.62  # an average glyph's width / font size (Open Sans and Verdana-like fonts, a little generous)
LINE_PX = 15  # px of one header line
UNIT_PX = 160  # px of one unit of the y axis: the header's lines are placed in px, the bands in units
HEAD_CPU_LINES = 4  # lines of a CPU list in a header; past that, the count of ranges not shown (hover has them all)
LEGEND_PX = 50  # the legend below the boxes (two lines where the figure is narrow)
BOX = 0.92  # a NUMA box's width, in x units (one per column)
SPREAD = 0.8  # the width markers are spread over inside a box, in x units
MARKER_LIMIT = 256  # markers in one band (GPUs, NICs, ranks); more: one per NUMA node (and affinity status)
LIST_LIMIT = 64  # GPUs, NICs or ranks the summary table names one by one, per NUMA node


@dataclass(frozen=True)
class RankPlacement:
    rank: RankEntry
    gpu_pos: Optional[int]
    gpu_node: Optional[int]
    covers: tuple[int, ...]  # NUMA nodes the rank's CPU affinity touches
    status: str  # key of AFFINITY_COLOURS


def rank_placements(
    snapshot: NodeSnapshot, ranks: Iterable[RankEntry], findings: Optional[Iterable[Finding]] = None
) -> list[RankPlacement]:
    """Pure: where each rank on this host runs, relative to its GPU's node.

    Linear in ranks and GPUs: GPU positions are looked up in maps built
    once, and a CPU list shared by many ranks is read once."""
    ranks = tuple(ranks)
    verdict = _affinity_verdicts(snapshot, ranks, findings)
    node_cpus = {n.id: parse_cpulist(n.cpus) for n in snapshot.host.numa_nodes}
    every_node = set(node_cpus)
    where = RankGpus(snapshot)  # model.derive's reading of each rank's GPU, the checks' too
    covers_of: dict[Optional[str], tuple[int, ...]] = {}
    out = []
    for r in ranks:
        if r.host != snapshot.hostname:
            continue
        pos = where.position(r)
        gnode = snapshot.gpus[pos].numa_node if pos is not None else None
        covers = covers_of.get(r.cpu_affinity)
        if covers is None:
            cpus = parse_cpulist(r.cpu_affinity)
            covers = tuple(sorted(nid for nid, c in node_cpus.items() if not cpus.isdisjoint(c)))
            covers_of[r.cpu_affinity] = covers
        # the verdict is the check's (rank_affinity_numa); the view only names what it did not flag
        if r.rank in verdict:
            status = verdict[r.rank]
        elif gnode is None or not covers:
            status = "unknown"
        elif covers == (gnode,):
            status = "local"
        elif gnode in covers and every_node and every_node <= set(covers):
            status = "unpinned"
        else:
            status = "unknown"
        out.append(RankPlacement(r, pos, gnode, covers, status))
    return out


def affinity_findings(report) -> list[Finding]:
    """The verdicts the view marks: ``rank_affinity_numa``'s findings for a
    job (run once for a report, then read for each of its hosts)."""
    from ..checks import check

    return check(report, only=["rank_affinity_numa"])


def _affinity_verdicts(snapshot: NodeSnapshot, ranks: tuple, findings) -> dict[int, str]:
    """rank -> "remote" or "spans" for the ranks of this host that
    ``rank_affinity_numa`` names (its warning: no CPU on the GPU's node; its
    info: pinned past it); ``findings`` None: the check is run here."""
    if findings is None:
        from ..model import ClusterReport

        findings = affinity_findings(ClusterReport(snapshots=(snapshot,), ranks=ranks))
    here = {r.rank for r in ranks if r.host == snapshot.hostname}
    out: dict[int, str] = {}
    for f in findings:
        if f.rule == "rank_affinity_numa" and (not f.hosts or snapshot.hostname in f.hosts):
            for rank in f.ranks:
                if rank in here and out.get(rank) != "remote":
                    out[rank] = "remote" if f.severity == "warning" else "spans"
    return out


def _columns(snapshot: NodeSnapshot, nic_nodes: tuple[NicNuma, ...]) -> list[Optional[int]]:
    ids = {n.id for n in snapshot.host.numa_nodes}
    for value in [g.numa_node for g in snapshot.gpus] + [n.node for n in nic_nodes]:
        if value is not None:
            ids.add(value)
    cols: list[Optional[int]] = sorted(ids)
    if any(g.numa_node is None for g in snapshot.gpus) or any(n.node is None for n in nic_nodes):
        cols.append(None)
    return cols or [None]


def _column_px(ncols: int) -> float:
    """px of one NUMA box in a figure NARROW wide (the x axis spans ncols + 0.25 units)."""
    return (NARROW - MARGIN["l"] - MARGIN["r"]) / (ncols + 0.25) * BOX


def _chars(px: float, font: float) -> int:
    return max(4, int(px / (font * CHAR_PX)))


def wrap(text: str, chars: int, sep: str = " ") -> list[str]:
    """``text`` cut after ``sep`` into lines of at most ``chars`` characters
    where it can be (a piece longer than a line is a line of its own)."""
    pieces = text.split(sep)
    lines: list[str] = []
    for k, piece in enumerate(pieces):
        piece = piece + (sep if k < len(pieces) - 1 and sep != " " else "")
        if lines and len(lines[-1]) + len(piece) + (1 if sep == " " else 0) <= chars:
            lines[-1] += (" " if sep == " " else "") + piece
        else:
            lines.append(piece)
    return lines


def cpu_lines(cpus: str, chars: int, most: int = HEAD_CPU_LINES) -> list[str]:
    """A CPU list as ranges ("0-15,32-47"), cut at commas into lines of at
    most ``chars``; past ``most`` lines the last one counts the ranges left out."""
    text = format_cpulist(parse_cpulist(cpus)) or cpus
    lines = wrap(text, chars, ",")
    if len(lines) <= most:
        return lines
    shown = lines[: most - 1]
    left = len(text.split(",")) - sum(len(line.rstrip(",").split(",")) for line in shown)
    return shown + [f"… {how_many(left, 'more range')}"]


def _head(nid, node, unknown_gpus: bool, unknown_nics: bool, chars: int) -> tuple[list[str], str]:
    """(escaped header lines of one NUMA box, its hover)."""
    if nid is None:
        what = " and ".join(w for w, on in (("GPUs", unknown_gpus), ("NICs", unknown_nics)) if on) or "devices"
        lines = ["<b>NUMA unknown</b>"] + [esc(x) for x in wrap(f"the snapshot has no NUMA node for these {what}", chars)]
        return lines, f"NUMA unknown: the snapshot has no NUMA node for these {esc(what)}"
    cpus = node.cpus if node else ""
    ncpu = len(parse_cpulist(cpus))
    mem = f"{node.memory_mib // 1024} GiB" if node and node.memory_mib else ""
    facts = " · ".join(x for x in (how_many(ncpu, "CPU") if cpus else "CPUs not known", mem) if x)
    lines = [f"<b>NUMA {esc(nid)}</b>"] + [esc(x) for x in wrap(facts, chars)]
    if cpus:
        lines += [esc(x) for x in cpu_lines(cpus, chars)]
    hover = f"<b>NUMA {esc(nid)}</b>: {esc(facts)}" + (
        f"<br>CPUs {esc(shorten(format_cpulist(parse_cpulist(cpus)), 600))}" if cpus else ""
    )
    return lines, hover


def _group(items, key, cols) -> dict:
    """{NUMA column: [items]} in one pass (items whose node has no column go nowhere)."""
    groups: dict = {nid: [] for nid in cols}
    for item in items:
        bucket = groups.get(key(item))
        if bucket is not None:
            bucket.append(item)
    return groups


def _per_row(column_px: float, item_px: float) -> int:
    """Markers that fit side by side in a box ``column_px`` wide, each with
    its label ``item_px`` wide."""
    return max(1, min(PER_ROW, int(column_px * SPREAD / BOX // max(1.0, item_px))))


def _spread(count: int, centre: float, top: float, per_row: int = PER_ROW) -> list[tuple[float, float]]:
    per_row = min(per_row, max(1, count))
    pts = []
    for t in range(count):
        row, col = divmod(t, per_row)
        pts.append((centre - SPREAD / 2 + SPREAD * (col + 0.5) / per_row, top - 0.32 * row))
    return pts


def _rows_needed(counts: Iterable[int], per_row: int = PER_ROW) -> int:
    return max([1] + [-(-c // per_row) for c in counts])


def _label_px(text: str, font: float = LABEL_FONT) -> float:
    return len(text) * font * CHAR_PX + 8


def numa_figure(snapshot: NodeSnapshot, ranks: Iterable[RankEntry] = (), findings: Optional[Iterable[Finding]] = None):
    """Pure: a plotly Figure with one column per NUMA node (CPUs, memory in
    the header; GPUs, NICs and ranks under it). A rank sits under its GPU's
    node, coloured by whether its CPU affinity is local, spans nodes or is
    remote; dashed lines go to every other node its affinity covers.

    Past MARKER_LIMIT GPUs, NICs or ranks on the host, that band shows one
    marker per NUMA node (ranks: per node and affinity status) with the
    count, and its hover names them by index ranges."""
    import plotly.graph_objects as go

    nic_nodes = nic_numa(snapshot)  # model.derive's reading: recorded, else from the topo -m links
    cols = _columns(snapshot, nic_nodes)
    x_of = {nid: float(c) for c, nid in enumerate(cols)}
    nodes = {n.id: n for n in snapshot.host.numa_nodes}
    places = rank_placements(snapshot, ranks, findings)

    gpu_groups = _group(range(len(snapshot.gpus)), lambda p: snapshot.gpus[p].numa_node, cols)
    nic_groups = _group(range(len(snapshot.nics)), lambda k: nic_nodes[k].node, cols)
    rank_groups = _group(places, lambda pl: pl.gpu_node, cols)
    fold_gpus = len(snapshot.gpus) > MARKER_LIMIT
    fold_nics = len(snapshot.nics) > MARKER_LIMIT
    fold_ranks = len(places) > MARKER_LIMIT
    statuses = tuple(AFFINITY_COLOURS)
    rank_markers = {
        nid: ([st for st in statuses if any(pl.status == st for pl in v)] if fold_ranks else v) for nid, v in rank_groups.items()
    }
    column_px = _column_px(len(cols))
    nic_label = {k: shorten(nic.name, 10) for k, nic in enumerate(snapshot.nics)} if not fold_nics else {}
    gpu_per_row = _per_row(column_px, 28)
    nic_per_row = _per_row(column_px, max([22.0] + [_label_px(t) for t in nic_label.values()]))
    rank_per_row = _per_row(column_px, 26)
    gpu_rows = 1 if fold_gpus else _rows_needed((len(v) for v in gpu_groups.values()), gpu_per_row)
    nic_rows = 1 if fold_nics else _rows_needed((len(v) for v in nic_groups.values()), nic_per_row)
    rank_rows = _rows_needed((len(v) for v in rank_markers.values()), rank_per_row) if places else 0
    chars = _chars(column_px - 6, HEAD_FONT)
    heads = {
        nid: _head(
            nid,
            nodes.get(nid),
            any(g.numa_node is None for g in snapshot.gpus),
            any(n.node is None for n in nic_nodes),
            chars,
        )
        for nid in cols
    }
    head_lines = max(len(lines) for lines, _ in heads.values())
    gpu_top = -(0.05 + (head_lines * LINE_PX + 12) / UNIT_PX + 0.2)
    nic_top = gpu_top - 0.32 * gpu_rows - 0.4
    rank_top = nic_top - 0.32 * nic_rows - 0.4
    bottom = (rank_top - 0.32 * rank_rows - 0.1) if places else (nic_top - 0.32 * nic_rows - 0.1)

    shapes, annotations = [], []
    for nid in cols:
        x = x_of[nid]
        shapes.append(
            dict(
                type="rect",
                x0=x - 0.46,
                x1=x + 0.46,
                y0=bottom,
                y1=0.0,
                line=dict(color="#636363", width=1),
                fillcolor="#f7f7f7",
                layer="below",
            )
        )
        lines, hover = heads[nid]
        annotations.append(
            dict(
                x=x,
                y=-0.05,
                text="<br>".join(lines),
                hovertext=hover,
                showarrow=False,
                yanchor="top",
                font=dict(size=HEAD_FONT),
                # the box's width: text wider than this is a bug in the wrapping, not a run into the next box
                width=int(column_px),
            )
        )
    bands = (("GPUs", gpu_top), ("NICs", nic_top)) + ((("ranks", rank_top),) if places else ())
    for label, y in bands:
        annotations.append(dict(x=-0.5, y=y, text=label, showarrow=False, xanchor="right", font=dict(size=11, color="#636363")))
    if not snapshot.nics:  # an empty band said in words, in every box (wrapped to it)
        note = "<br>".join(esc(line) for line in wrap("the snapshot lists no NIC", chars))
        for nid in cols:
            annotations.append(
                dict(x=x_of[nid], y=nic_top, text=f"<i>{note}</i>", showarrow=False, font=dict(size=HEAD_FONT, color="#636363"))
            )

    def scatter(name, xs, ys, texts, hovers, colours, symbol, size, inside=True):
        return go.Scatter(
            x=xs,
            y=ys,
            mode="markers+text" if len(xs) <= 64 else "markers",
            name=name,
            text=texts,
            textposition="middle center" if inside else "bottom center",
            textfont=dict(size=9, color="white" if inside else "#252525"),
            hovertext=hovers,
            hovertemplate="%{hovertext}<extra></extra>",
            marker=dict(symbol=symbol, size=size, color=colours, line=dict(color="#252525", width=1)),
        )

    def where(nid) -> str:
        return numa_text(nid)

    traces = []
    xs, ys, texts, hovers = [], [], [], []
    for nid in cols:
        group = gpu_groups[nid]
        if fold_gpus:
            if group:
                models = sorted({snapshot.gpus[p].name or "model not known" for p in group})
                xs.append(x_of[nid])
                ys.append(gpu_top)
                texts.append(f"{len(group)} GPUs")
                hovers.append(
                    f"<b>{len(group)} GPUs</b> on {where(nid)}: GPU "
                    f"{esc(index_span(snapshot.gpus[p].index for p in group))}"
                    f"<br>{esc(shorten(', '.join(models), 80))}"
                )
            continue
        for p, (x, y) in zip(group, _spread(len(group), x_of[nid], gpu_top, gpu_per_row)):
            g = snapshot.gpus[p]
            xs.append(x)
            ys.append(y)
            texts.append(str(g.index))
            aff = f"<br>CPU affinity {esc(g.cpu_affinity)}" if g.cpu_affinity else ""
            hovers.append(gpu_hover(snapshot, p) + aff)
    traces.append(scatter("GPUs", xs, ys, texts, hovers, "#2b83ba", "square", 34 if fold_gpus else 22, inside=not fold_gpus))

    xs, ys, texts, hovers = [], [], [], []
    for nid in cols:
        group = nic_groups[nid]
        if fold_nics:
            if group:
                names = ", ".join(snapshot.nics[k].name for k in group[:8])
                xs.append(x_of[nid])
                ys.append(nic_top)
                texts.append(f"{len(group)} NICs")
                hovers.append(
                    f"<b>{len(group)} NICs</b> on {where(nid)}: {esc(shorten(names, 80))}" + (" …" if len(group) > 8 else "")
                )
            continue
        for k, (x, y) in zip(group, _spread(len(group), x_of[nid], nic_top, nic_per_row)):
            nic = snapshot.nics[k]
            xs.append(x)
            ys.append(y)
            texts.append(esc(nic_label[k]))
            kind = ", ".join(esc(x) for x in (nic.kind, nic.state) if x)
            hovers.append(
                f"<b>{esc(nic.name)}</b> {kind}"
                f"<br>{bus_text(nic.pci_bus_id)} · {_nic_numa_text(nic_nodes[k])}"
                + (f"<br>{nic.speed_mbps // 1000} Gb/s" if nic.speed_mbps else "")
            )
    traces.append(scatter("NICs", xs, ys, texts, hovers, "#abdda4", "diamond", 16, inside=False))

    xs, ys, texts, hovers, colours, symbols = [], [], [], [], [], []
    lx, ly = [], []
    for nid in cols:
        if fold_ranks:
            for st, (x, y) in zip(rank_markers[nid], _spread(len(rank_markers[nid]), x_of[nid], rank_top, rank_per_row)):
                group = [pl for pl in rank_groups[nid] if pl.status == st]
                xs.append(x)
                ys.append(y)
                texts.append(str(len(group)))
                colours.append(AFFINITY_COLOURS[st])
                symbols.append(AFFINITY_SYMBOLS[st])
                hovers.append(
                    f"<b>{how_many(len(group), 'rank')}</b> on GPUs of {where(nid)}: {esc(AFFINITY_MEANING[st])}"
                    f"<br>ranks {esc(index_span(pl.rank.rank for pl in group))}"
                )
                for other in sorted({o for pl in group for o in pl.covers if o != nid}, key=str):
                    if other in x_of:
                        lx += [x, x_of[other], None]
                        ly += [y, gpu_top + 0.15, None]
            continue
        for pl, (x, y) in zip(rank_groups[nid], _spread(len(rank_groups[nid]), x_of[nid], rank_top, rank_per_row)):
            r = pl.rank
            xs.append(x)
            ys.append(y)
            texts.append(str(r.rank))
            colours.append(AFFINITY_COLOURS[pl.status])
            symbols.append(AFFINITY_SYMBOLS[pl.status])
            gpu = (
                f"GPU{snapshot.gpus[pl.gpu_pos].index}, {numa_text(pl.gpu_node)}" if pl.gpu_pos is not None else "a GPU not known"
            )
            who = ", ".join(
                x
                for x in (f"local {esc(r.local_rank)}" if r.local_rank is not None else "", f"pid {esc(r.pid)}" if r.pid else "")
                if x
            )
            affinity = (
                f"CPU affinity {esc(r.cpu_affinity)} → NUMA {', '.join(map(str, pl.covers)) or 'node not known'}"
                if r.cpu_affinity
                else "CPU affinity not known"
            )
            hovers.append(
                f"<b>rank {r.rank}</b>" + (f" ({who})" if who else "") + f" on {gpu}"
                f"<br>{affinity}"
                f"<br>{esc(AFFINITY_MEANING[pl.status])}"
            )
            for other in pl.covers:
                if other != pl.gpu_node and other in x_of:
                    lx += [x, x_of[other], None]
                    ly += [y, gpu_top + 0.15, None]
    if lx:
        traces.append(
            go.Scatter(
                x=lx,
                y=ly,
                mode="lines",
                name="affinity off the GPU's node",
                line=dict(color=AFFINITY_COLOURS["remote"], dash="dash", width=1),
                hoverinfo="skip",
            )
        )
    if xs:
        traces.append(scatter("ranks", xs, ys, texts, hovers, colours, symbols, 26 if fold_ranks else 20))
        traces[-1].showlegend = False  # the keys below name each status with its shape and colour
        for st in statuses:
            if AFFINITY_SYMBOLS[st] in symbols:  # a status drawn
                traces.append(
                    go.Scatter(
                        x=[None],
                        y=[None],
                        mode="markers",
                        hoverinfo="skip",
                        name=f"rank: {st}",
                        marker=dict(
                            symbol=AFFINITY_SYMBOLS[st], size=12, color=AFFINITY_COLOURS[st], line=dict(color="#252525", width=1)
                        ),
                    )
                )

    counts = {}
    for pl in places:
        counts[pl.status] = counts.get(pl.status, 0) + 1
    summary = ", ".join(f"{v} {k}" for k, v in counts.items()) if places else "no rank table"
    folded = [what for what, on in (("GPUs", fold_gpus), ("NICs", fold_nics), ("ranks", fold_ranks)) if on]
    if folded:
        summary += f" · {', '.join(folded)} counted per NUMA node"
    fig = go.Figure(traces)
    fig.update_layout(
        title=dict(text=f"NUMA placement on {esc(shorten(snapshot.hostname, 60))} · ranks: {summary}", font=dict(size=14)),
        shapes=shapes,
        annotations=annotations,
        xaxis=dict(visible=False, range=[-0.75, len(cols) - 0.5]),
        yaxis=dict(visible=False, range=[bottom - 0.1, 0.05]),
        # px per y unit fixed, so the header's lines (placed in px) fit above the GPUs
        height=int(MARGIN["t"] + MARGIN["b"] + UNIT_PX * (0.15 - bottom) + (LEGEND_PX if lx or places else 0)),
        showlegend=bool(lx or places),
        legend=dict(orientation="h", y=-0.02),
        margin=dict(MARGIN),
        plot_bgcolor="white",
        clickmode="event",
    )
    return fig


def _nic_numa_text(place: NicNuma) -> str:
    """Escaped "NUMA 3 (PXB to GPU0, GPU1 ...)" or "NUMA unknown: ..." for a NIC's hover."""
    if place.node is None:
        return f"NUMA unknown: {esc(place.why)}"
    return numa_text(place.node) + (f" ({esc(place.why)})" if place.source != "recorded" else "")


def numa_summary(snapshot: NodeSnapshot, ranks: Iterable[RankEntry] = (), findings: Optional[Iterable[Finding]] = None) -> str:
    """Escaped HTML: the NUMA nodes with their CPUs, GPUs and NICs, as a table
    (the static fallback readable where no JavaScript runs). Past LIST_LIMIT
    on a node, GPUs are index ranges, NICs the first few, and ranks a count
    per affinity status with the first ranks that are not local."""
    nic_nodes = nic_numa(snapshot)
    cols = _columns(snapshot, nic_nodes)
    nodes = {n.id: n for n in snapshot.host.numa_nodes}
    places = rank_placements(snapshot, ranks, findings)
    gpu_groups = _group(snapshot.gpus, lambda g: g.numa_node, cols)
    nic_groups = _group(range(len(snapshot.nics)), lambda k: nic_nodes[k].node, cols)
    rank_groups = _group(places, lambda pl: pl.gpu_node, cols)
    rows = []
    for nid in cols:
        node = nodes.get(nid)
        gs = gpu_groups[nid]
        if len(gs) > LIST_LIMIT:
            gpus = f"{len(gs)} GPUs: {esc(index_span(g.index for g in gs))}"
        else:
            gpus = ", ".join(f"GPU{g.index}" for g in gs) or "—"
        ns = [snapshot.nics[k] for k in nic_groups[nid]]
        nics = ", ".join(esc(n.name) for n in ns[:LIST_LIMIT]) or "—"
        if len(ns) > LIST_LIMIT:
            nics += f" … ({len(ns)} NICs)"
        rks = _ranks_cell(rank_groups[nid])
        cpus = esc(format_cpulist(parse_cpulist(node.cpus))) if node else "not known"
        rows.append(
            f"<tr><td><b>{'not known' if nid is None else esc(nid)}</b></td><td>{cpus}</td><td>{gpus}</td><td>{nics}</td><td>{rks}</td></tr>"
        )
    return (
        '<table class="ncclnb-numa" style="border-collapse:collapse">'
        "<tr><th>NUMA</th><th>CPUs</th><th>GPUs</th><th>NICs</th><th>ranks (by GPU)</th></tr>" + "".join(rows) + "</table>"
    )


def _rank_span(pl: RankPlacement) -> str:
    return (
        f'<span style="color:{AFFINITY_COLOURS[pl.status]}" '
        f'title="{esc_attr(AFFINITY_MEANING[pl.status])}">{AFFINITY_MARKS[pl.status]}{pl.rank.rank}</span>'
    )


def _ranks_cell(places: list) -> str:
    if len(places) <= LIST_LIMIT:
        return ", ".join(_rank_span(pl) for pl in places) or "—"
    tally: dict[str, int] = {}
    for pl in places:
        tally[pl.status] = tally.get(pl.status, 0) + 1
    counts = ", ".join(
        f'<span style="color:{AFFINITY_COLOURS[st]}">{AFFINITY_MARKS[st]} {n} {st}</span>' for st, n in tally.items()
    )
    odd = [pl for pl in places if pl.status != "local"]
    shown = ", ".join(_rank_span(pl) for pl in odd[:16])
    return f"{len(places)} ranks: {counts}" + (f"; not local: {shown}" + (" …" if len(odd) > 16 else "") if odd else "")


# --- the live widget ---------------------------------------------------------------------------


class NumaWidget(OneHostView):
    """The NUMA placement of one host, live: ``host`` (a picker sets it
    where the target has several nodes); a click on a GPU, NIC or rank shows
    its details. The affinity check runs once for the job: every host's
    figure reads its verdicts."""

    def __init__(self, target, snapshot: NodeSnapshot, findings, figure):
        from .live import LiveFigure

        self.target, self.ranks, self.findings, self.snapshot = target, ranks_of(target), findings, snapshot
        self.detail = detail_pane()
        self.detail.value = NUMA_HINT
        self.live = LiveFigure(figure, hover_on_click(self.detail))
        children = [self.live, self.detail]
        picker = self.picker()
        if picker is not None:
            children.insert(0, picker)
        super().__init__(children)
        self.add_class("ncclnb-numa")

    @traitlets.observe("host")
    def _redraw(self, change) -> None:
        self.snapshot = snapshot_of(self.target, change["new"])
        self.live.replace(numa_figure(self.snapshot, self.ranks, self.findings))
        self.detail.value = NUMA_HINT  # the previous host's details are not this host's


def show_numa(target, host: Optional[str] = None):
    """NUMA placement of one host (CPUs, GPUs, NICs, ranks' CPU affinity),
    as a live widget; click a GPU, NIC or rank for its details."""
    target = resolve(target)
    snaps, ranks = snapshots_of(target), ranks_of(target)
    snap = pick_snapshot(target, host)
    job = target if isinstance(target, ClusterReport) else ClusterReport(snapshots=snaps, ranks=ranks)
    findings = affinity_findings(job)
    fig = numa_figure(snap, ranks, findings)
    view = View(
        NumaWidget(target, snap, findings, fig),
        fig,
        f"<h4>NUMA placement on {esc(snap.hostname)}</h4>" + numa_summary(snap, ranks, findings),
        f"ncclnb NUMA view: {snap.hostname}",
    )
    return with_text_form(view, "show_numa", target, host=snap.hostname)
