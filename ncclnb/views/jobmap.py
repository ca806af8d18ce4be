"""The job map: the whole job across nodes in one picture. Each node is a row:
a cell for the node itself, then its GPUs (coloured by NUMA node, each with
the ranks on it and the NUMA nodes their CPU affinity covers), then its NICs.

Anomalies come only from findings (``ncclnb.check(report)`` or the report's
own ``findings``): a rank is marked when a finding names it in ``ranks`` (on
one of the finding's ``hosts``, when it names hosts), a node when a finding
names it in ``hosts`` or names a rank on it. The finding's title is the hover
text. A new check needs no change here: the view never decides what is wrong.

Large jobs are paged: nodes named by findings first (errors, then warnings,
then infos), then the others in NODE_RANK order. The analysis is linear in
ranks, hosts and the ranks and hosts the findings name; a page costs its
nodes' GPUs, NICs and ranks.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Optional, Sequence

from ..model import SEVERITIES, ClusterReport, Finding, NodeSnapshot, RankEntry
from ..model.words import how_many
from ._common import esc, gpu_hover, index_span, nic_info, numa_text, report_findings, resolve, shorten, step_colorscale
from .widgets import PagedFigure, View, with_text_form

PAGE_SIZE = 32  # nodes per page
GPU_COLUMNS = 64  # GPU columns drawn one by one; a node's GPUs past that share one last column
NIC_COLUMNS = 16  # NIC columns; the same
CELL_PX = 64  # width of a column, so the ranks and CPU NUMA nodes of a cell stay readable
MAX_WIDTH = 2400  # px; past that (a node of 30+ GPUs) cells narrow and the hover carries the text
FINDINGS_SHOWN = 6  # finding titles in one hover
RANKS_SHOWN = 4  # ranks named in one cell's text
MARK_COLOURS = {"error": "#d73027", "warning": "#fc8d59", "info": "#4575b4"}
# A severity is a shape and a sign as well as a colour (never colour alone):
# the marks' symbols, and the sign in a node's cell and before its name.
MARK_SYMBOLS = {"error": "x", "warning": "triangle-up", "info": "circle"}
SEVERITY_SIGNS = {"error": "✖", "warning": "⚠", "info": "ℹ"}
MARK_LABELS = {"error": "named by an error finding", "warning": "named by a warning finding", "info": "named by an info finding"}
NUMA_COLOURS = ("#c6dbef", "#c7e9c0", "#fdd0a2", "#dadaeb", "#f2f0a1", "#d9d9d9", "#fcc5c0", "#ccece6")

# Heatmap cell classes, in colour-scale order.
CLASSES = tuple(f"numa{k}" for k in range(len(NUMA_COLOURS))) + (
    "numa?",
    "none",
    "no_snapshot",
    "node_error",
    "node_warning",
    "node_info",
    "node_ok",
)
CLASS_COLOURS = dict(
    zip(
        CLASSES,
        NUMA_COLOURS + ("#f0f0f0", "#ffffff", "#bdbdbd", MARK_COLOURS["error"], MARK_COLOURS["warning"], "#9ecae1", "#a6d96a"),
    )
)
INDEX = {c: i for i, c in enumerate(CLASSES)}


@dataclass
class JobMap:
    """Pure analysis of a report and its findings, shared by every page."""

    report: ClusterReport
    findings: tuple[Finding, ...]
    hosts: list[str]  # every host, in page order
    ranks_on: dict[str, list[RankEntry]]  # host -> its rank entries
    rank_marks: dict[tuple[str, int], list[Finding]]  # (host, rank) -> findings naming it
    host_marks: dict[str, list[Finding]]  # host -> findings naming it or a rank on it
    absent: dict[int, list[Finding]]  # ranks findings name that no entry holds
    unattached: int  # findings naming no rank and no host
    node_rank: dict[str, Optional[int]] = field(default_factory=dict)

    def severity(self, host: str) -> Optional[str]:
        return worst(self.host_marks.get(host, ()))

    def node_order(self, only_marked: bool = False) -> list[str]:
        return [h for h in self.hosts if h in self.host_marks] if only_marked else list(self.hosts)

    def pages(self, page_size: int = PAGE_SIZE, only_marked: bool = False) -> int:
        return max(1, -(-len(self.node_order(only_marked)) // max(1, page_size)))


def worst(findings: Iterable[Finding]) -> Optional[str]:
    """The most severe severity among ``findings`` (None for none)."""
    best = None
    for f in findings:
        k = SEVERITIES.index(f.severity) if f.severity in SEVERITIES else len(SEVERITIES) - 1
        if best is None or k < best:
            best = k
    return None if best is None else SEVERITIES[best]


def _add(marks: dict, key, finding: Finding) -> None:
    found = marks.setdefault(key, [])
    if not found or found[-1] is not finding:  # a finding naming a rank twice marks it once
        found.append(finding)


def analyse_job(report: ClusterReport, findings: Optional[Sequence[Finding]] = None) -> JobMap:
    """Pure: the hosts in page order and which ranks and hosts each finding
    names. ``findings`` default to the report's own (``report.findings``)."""
    findings = tuple(report.findings if findings is None else findings)
    first_seen: dict[str, int] = {}
    for s in report.snapshots:
        first_seen.setdefault(s.hostname, len(first_seen))
    ranks_on: dict[str, list[RankEntry]] = {}
    by_rank: dict[int, list[RankEntry]] = {}
    for r in report.ranks:
        first_seen.setdefault(r.host, len(first_seen))
        ranks_on.setdefault(r.host, []).append(r)
        by_rank.setdefault(r.rank, []).append(r)
    node_rank = {
        h: min((r.node_rank for r in ranks_on.get(h, ()) if isinstance(r.node_rank, int)), default=None) for h in first_seen
    }

    rank_marks: dict[tuple[str, int], list[Finding]] = {}
    host_marks: dict[str, list[Finding]] = {}
    absent: dict[int, list[Finding]] = {}
    unattached = 0
    for f in findings:
        hosts = set(f.hosts)
        for h in f.hosts:
            if h in first_seen:
                _add(host_marks, h, f)
        for rank in f.ranks:
            entries = by_rank.get(rank)
            if not entries:
                _add(absent, rank, f)
                continue
            for e in entries:
                if not hosts or e.host in hosts:
                    _add(rank_marks, (e.host, rank), f)
                    _add(host_marks, e.host, f)
        if not f.ranks and not f.hosts:
            unattached += 1
    # named nodes first (errors, warnings, infos), then NODE_RANK, then as first seen
    level = {h: SEVERITIES.index(worst(fs) or "info") for h, fs in host_marks.items()}
    hosts = sorted(
        first_seen, key=lambda h: (level.get(h, len(SEVERITIES)), node_rank[h] is None, node_rank[h] or 0, first_seen[h])
    )
    return JobMap(report, findings, hosts, ranks_on, rank_marks, host_marks, absent, unattached, node_rank)


# --- one page ---------------------------------------------------------------------


def _nic_names(snap: NodeSnapshot) -> list[str]:
    """The NICs a row shows: the GPU x NIC matrix's, else every non-loopback one."""
    if snap.links.nic_names:
        return list(snap.links.nic_names)
    return [n.name for n in snap.nics if (n.kind or "") != "loopback" and n.name != "lo"]


def _numa_class(numa: Optional[int]) -> str:
    return "numa?" if not isinstance(numa, int) or numa < 0 else f"numa{numa % len(NUMA_COLOURS)}"


def _numa_id(snap: Optional[NodeSnapshot], p: int) -> Optional[int]:
    if snap is None or p >= len(snap.gpus):
        return None
    return snap.gpus[p].numa_node


def _numa_key(cls: str, ids: set) -> str:
    """Legend name of a NUMA colour: the node ids it stood for on this page."""
    known = sorted(i for i in ids if isinstance(i, int) and i >= 0)
    if cls == "numa?" or not known:
        return "NUMA node not known"
    return "NUMA " + ", ".join(map(str, known[:4])) + (" …" if len(known) > 4 else "")


def _titles(findings: Sequence[Finding]) -> str:
    shown = "<br>".join(
        f"⚠ [{esc(f.severity)}] {esc(shorten(f.title, 140))} <i>({esc(f.rule)})</i>" for f in findings[:FINDINGS_SHOWN]
    )
    extra = len(findings) - FINDINGS_SHOWN
    more = f"<br>… and {how_many(extra, 'more finding', 'more findings')}" if extra > 0 else ""
    return shown + more


def _q(value) -> str:
    return "not known" if value is None else esc(value)


def _covers(snap: NodeSnapshot, cache: dict, affinity: Optional[str]) -> tuple:
    """NUMA nodes a CPU affinity list shares a CPU with (() when unknown); each list read once."""
    if not affinity:
        return ()
    if affinity not in cache:
        from ..model.cpulist import overlaps

        cache[affinity] = tuple(sorted(n.id for n in snap.host.numa_nodes if overlaps(affinity, n.cpus)))
    return cache[affinity]


def _rank_line(jm: JobMap, r: RankEntry, covers: tuple) -> str:
    who = [
        f"local {esc(r.local_rank)}" if r.local_rank is not None else "local rank not known",
        f"pid {esc(r.pid)}" if r.pid else "pid not known",
        f"cuda:{r.cuda_index}" if r.cuda_index is not None else "device not set",
    ]
    where = f"NUMA {', '.join(map(str, covers))}" if covers else "NUMA node not known"
    bits = [
        f"<b>rank {r.rank}</b> ({', '.join(who)})",
        f"CPU affinity {esc(shorten(r.cpu_affinity, 40))} → {where}" if r.cpu_affinity else "CPU affinity not known",
    ]
    seen = []
    if r.bus_id:
        seen.append(f"bus {esc(r.bus_id)}")
    if r.numa_node is not None:
        seen.append(f"NUMA {esc(r.numa_node)}")
    if seen:
        bits.append("its GPU as the rank saw it: " + ", ".join(seen))
    if r.nic:
        bits.append(f"NIC NCCL would use: {esc(shorten(r.nic, 30))}")
    marks = jm.rank_marks.get((r.host, r.rank))
    if marks:
        bits.append(_titles(marks))
    return "<br>".join(bits)


def _ranks_text(entries: list[RankEntry], covers: list[tuple]) -> str:
    names = ",".join(str(r.rank) for r in entries[:RANKS_SHOWN]) + ("…" if len(entries) > RANKS_SHOWN else "")
    nodes = sorted({n for c in covers for n in c})
    cpu = "cpu N" + "+".join(map(str, nodes)) if nodes else "cpu not known"
    return f"{names}<br><span style='font-size:9px'>{cpu}</span>"


@dataclass
class _Row:
    host: str
    snap: Optional[NodeSnapshot]
    gpu_cols: int
    nic_names: list[str]
    placed: dict[int, list[RankEntry]]  # GPU column -> ranks
    covers: dict[int, tuple]  # id(entry) -> NUMA nodes of its affinity
    unplaced: list[RankEntry]


def _row(jm: JobMap, host: str) -> _Row:
    from ._common import GpuPositions

    snap = jm.report.snapshot(host)
    entries = jm.ranks_on.get(host, [])
    placed: dict[int, list[RankEntry]] = {}
    covers: dict[int, tuple] = {}
    unplaced: list[RankEntry] = []
    if snap is not None:
        where = GpuPositions(snap)
        cache: dict = {}
        for r in entries:
            covers[id(r)] = _covers(snap, cache, r.cpu_affinity)
            pos = where.rank_position(r)
            if pos is None:
                unplaced.append(r)
            else:
                placed.setdefault(min(pos, GPU_COLUMNS), []).append(r)
        gpu_cols = min(len(snap.gpus), GPU_COLUMNS + 1)
        nics = _nic_names(snap)
    else:
        # no snapshot: a rank's CUDA index is all that places it
        for r in entries:
            covers[id(r)] = ()
            if isinstance(r.cuda_index, int) and r.cuda_index >= 0:
                placed.setdefault(min(r.cuda_index, GPU_COLUMNS), []).append(r)
            else:
                unplaced.append(r)
        gpu_cols = (max(placed) + 1) if placed else 0
        nics = []
    return _Row(host, snap, gpu_cols, nics, placed, covers, unplaced)


def _missing_text(snap: Optional[NodeSnapshot]) -> str:
    if snap is None:
        return "no snapshot of this host: its GPUs, NUMA nodes and NICs are not known (ranks placed by CUDA index)"
    gaps = []
    if not snap.gpus:
        gaps.append("GPUs")
    if not snap.host.numa_nodes:
        gaps.append("NUMA nodes")
    if snap.gpus and all(g.numa_node is None for g in snap.gpus):
        gaps.append("the GPUs' NUMA nodes")
    if not _nic_names(snap):
        gaps.append("NICs")
    return ("not known: " + ", ".join(gaps)) if gaps else ""


def job_map_figure(
    report: ClusterReport,
    findings: Optional[Sequence[Finding]] = None,
    page: int = 0,
    page_size: int = PAGE_SIZE,
    only_marked: bool = False,
    job_map: Optional[JobMap] = None,
):
    """Pure: a plotly Figure of one page of nodes (rows). Columns: the node
    (coloured by the worst finding naming it), its GPUs by position (coloured
    by NUMA node; text: the ranks on it and the NUMA nodes their CPU
    affinity covers), its NICs (by NUMA node; ● where a rank names it), and
    "no GPU" for ranks whose GPU is not known. A diamond in a GPU cell marks
    ranks named by findings, coloured by the worst; hover lists the titles.

    ``findings`` default to ``report.findings``; pass ``ncclnb.check(report)``
    for the checks as they are now. Nodes named by findings come first;
    ``page`` / ``page_size`` pick the nodes drawn, ``only_marked`` drops the
    others. ``layout.meta`` holds the hosts drawn, the page and the pages."""
    import plotly.graph_objects as go

    jm = job_map or analyse_job(report, findings)
    order = jm.node_order(only_marked)
    size = max(1, page_size)
    pages = max(1, -(-len(order) // size))
    page = min(max(0, page), pages - 1)
    shown = order[page * size : (page + 1) * size]
    rows = [_row(jm, h) for h in shown]
    gpu_cols = max([r.gpu_cols for r in rows] + [1])
    nic_cols = min(max([len(r.nic_names) for r in rows] + [0]), NIC_COLUMNS + 1)
    has_unplaced = any(r.unplaced for r in rows)
    columns = ["node"] + [f"GPU{p}" if p < GPU_COLUMNS else f"GPU{GPU_COLUMNS}+" for p in range(gpu_cols)]
    columns += [f"NIC{k}" if k < NIC_COLUMNS else f"NIC{NIC_COLUMNS}+" for k in range(nic_cols)]
    columns += ["no GPU"] if has_unplaced else []
    nic0 = 1 + gpu_cols

    z, text, hover, ylabels = [], [], [], []
    marks = {s: ([], [], []) for s in SEVERITIES}  # x, y, hover of the diamonds
    numa_seen: dict[str, set] = {}  # cell class -> the NUMA node ids it stood for
    missing_hosts, numa_unknown = [], 0
    for y, row in enumerate(rows):
        h, snap = row.host, row.snap
        host = esc(shorten(h, 48))
        sev = jm.severity(h)
        node_marks = jm.host_marks.get(h, [])
        entries = jm.ranks_on.get(h, [])
        gap = _missing_text(snap)
        if snap is None:
            missing_hosts.append(h)
        head = f"<b>{host}</b> · NODE_RANK {_q(jm.node_rank.get(h))} · {how_many(len(entries), 'rank')}" + (
            f" · {len(snap.gpus)} GPUs, {len(snap.host.numa_nodes)} NUMA nodes, {len(row.nic_names)} NICs"
            if snap is not None
            else ""
        )
        zr = [INDEX[f"node_{sev or 'ok'}"]]
        tr = [f"{len(node_marks)}{SEVERITY_SIGNS.get(sev or '', '⚠')}" if node_marks else "✓"]
        hr = [
            head
            + (f"<br><i>{esc(gap)}</i>" if gap else "")
            + ("<br>" + _titles(node_marks) if node_marks else "<br>no finding names this node")
        ]
        for p in range(gpu_cols):
            on = row.placed.get(p, [])
            if snap is None:
                cls = "no_snapshot" if on else "none"
                gpu = f"<b>{host}</b>, cuda:{p}: no snapshot of this host, the physical GPU is not known"
            elif p >= row.gpu_cols:
                cls, gpu = "none", f"<b>{host}</b> has no GPU{p}"
            elif p == GPU_COLUMNS:
                rest = snap.gpus[GPU_COLUMNS:]
                cls = _numa_class(rest[0].numa_node)
                gpu = (
                    f"<b>{host}</b>: GPUs {esc(index_span(g.index for g in rest))} ({len(rest)} GPUs past the "
                    f"{GPU_COLUMNS} drawn one by one)"
                )
            else:
                g = snap.gpus[p]
                cls = _numa_class(g.numa_node)
                numa_unknown += g.numa_node is None
                gpu = f"{host} · " + gpu_hover(snap, p)
            if cls.startswith("numa"):
                numa_seen.setdefault(cls, set()).add(_numa_id(snap, p))
            zr.append(INDEX[cls])
            tr.append(_ranks_text(on, [row.covers[id(r)] for r in on]) if on else "")
            lines = [_rank_line(jm, r, row.covers[id(r)]) for r in on[:RANKS_SHOWN]]
            if len(on) > RANKS_SHOWN:
                lines.append(f"… and {how_many(len(on) - RANKS_SHOWN, 'more rank', 'more ranks')} on this GPU")
            hr.append("<br>".join([gpu] + lines) if lines else gpu + "<br>no rank on this GPU")
            sev_cell = worst(f for r in on for f in jm.rank_marks.get((h, r.rank), ()))
            if sev_cell:
                xs, ys, hs = marks[sev_cell]
                xs.append(1 + p + 0.3)
                ys.append(y - 0.25)
                hs.append(hr[-1])
        users_of: dict[str, list[int]] = {}
        for r in entries:
            if r.nic:
                users_of.setdefault(r.nic, []).append(r.rank)
        for k in range(nic_cols):
            if k >= len(row.nic_names):
                zr.append(INDEX["none"])
                tr.append("")
                hr.append(f"{host}: no NIC{k}")
                continue
            if k == NIC_COLUMNS:
                rest = row.nic_names[NIC_COLUMNS:]
                zr.append(INDEX["numa?"])
                tr.append(f"+{len(rest)}")
                hr.append(f"{host}: {len(rest)} more NICs: {esc(shorten(', '.join(rest[:16]), 200))}")
                continue
            name = row.nic_names[k]
            nic = nic_info(snap, name)
            numa = nic.numa_node if nic is not None else None
            cls = _numa_class(numa)
            numa_seen.setdefault(cls, set()).add(numa)
            hit = name in users_of or (nic is not None and (nic.name in users_of or nic.ib_device in users_of))
            zr.append(INDEX[cls])
            tr.append(("● " if hit else "") + esc(shorten(name, 9)))
            desc = (
                ", ".join(
                    [
                        *(esc(x) for x in (nic.kind, nic.state) if x),
                        *([f"{nic.speed_mbps // 1000} Gb/s"] if nic.speed_mbps else []),
                    ]
                )
                or "no details"
                if nic is not None
                else "no details"
            )
            users = sorted(
                {
                    rk
                    for alias in {name, *((nic.name, nic.ib_device) if nic is not None else ())}
                    for rk in users_of.get(alias, ())
                }
            )
            hr.append(
                f"{host} · <b>NIC{k}</b> {esc(name)} ({desc}) · {numa_text(numa)}"
                + (f"<br>used by {'rank' if len(users) == 1 else 'ranks'} {esc(index_span(users))}" if users else "")
            )
        if has_unplaced:
            on = row.unplaced
            zr.append(INDEX["numa?" if on else "none"])
            tr.append(_ranks_text(on, [row.covers[id(r)] for r in on]) if on else "")
            lines = [_rank_line(jm, r, row.covers[id(r)]) for r in on[:RANKS_SHOWN]]
            if len(on) > RANKS_SHOWN:
                lines.append(f"… and {len(on) - RANKS_SHOWN} more")
            whose = "the rank" if len(on) == 1 else "ranks"
            hr.append(
                f"<b>{host}</b>: {whose} whose GPU is not known (no UUID, no CUDA index that resolves)<br>" + "<br>".join(lines)
                if on
                else f"{host}: every rank's GPU is known"
            )
            sev_cell = worst(f for r in on for f in jm.rank_marks.get((h, r.rank), ()))
            if sev_cell:
                xs, ys, hs = marks[sev_cell]
                xs.append(len(columns) - 1 + 0.3)
                ys.append(y - 0.25)
                hs.append(hr[-1])
        z.append(zr)
        text.append(tr)
        hover.append(hr)
        colour = MARK_COLOURS.get(sev or "", "")
        label = f"{SEVERITY_SIGNS.get(sev, '⚠') + ' ' if sev else ''}{host}" + (" (no snapshot)" if snap is None else "")
        ylabels.append(f"<span style='color:{colour}'>{label}</span>" if colour else label)

    heat = go.Heatmap(
        z=z,
        x=list(range(len(columns))),
        y=list(range(len(rows))),
        zmin=-0.5,
        zmax=len(CLASSES) - 0.5,
        colorscale=step_colorscale(CLASS_COLOURS[c] for c in CLASSES),
        showscale=False,
        xgap=2,
        ygap=2,
        text=text,
        texttemplate="%{text}",
        textfont=dict(size=10),
        hovertext=hover,
        hovertemplate="%{hovertext}<extra></extra>",
        name="job",
    )
    traces = [heat]
    for s in SEVERITIES:
        xs, ys, hs = marks[s]
        if xs:
            traces.append(
                go.Scatter(
                    x=xs,
                    y=ys,
                    mode="markers",
                    name=MARK_LABELS[s],
                    hovertext=hs,
                    hovertemplate="%{hovertext}<extra></extra>",
                    marker=dict(symbol=MARK_SYMBOLS[s], size=11, color=MARK_COLOURS[s], line=dict(color="#252525", width=1)),
                )
            )
    keys = [
        go.Scatter(
            x=[None],
            y=[None],
            mode="markers",
            hoverinfo="skip",
            name=_numa_key(c, numa_seen[c]),
            marker=dict(symbol="square", size=12, color=CLASS_COLOURS[c], line=dict(color="#636363", width=1)),
        )
        for c in CLASSES
        if c in numa_seen
    ]
    if missing_hosts:
        keys.append(
            go.Scatter(
                x=[None],
                y=[None],
                mode="markers",
                name="no snapshot",
                hoverinfo="skip",
                marker=dict(symbol="square", size=12, color=CLASS_COLOURS["no_snapshot"]),
            )
        )
    fig = go.Figure(traces + keys)

    ranks_total = len(report.ranks)
    marked = sum(1 for h in jm.hosts if h in jm.host_marks)
    title = (
        f"Job map · {how_many(len(jm.hosts), 'node')}, {how_many(ranks_total, 'rank')} · "
        f"{how_many(marked, 'node')} named by findings{' (first)' if marked and not only_marked else ''}"
        + (f" · page {page + 1}/{pages}" if pages > 1 else "")
    )
    notes = []
    if not jm.findings:
        notes.append("no findings given: nothing is marked")
    if jm.absent:
        named = sorted(jm.absent)
        notes.append(f"findings name {'a rank' if len(named) == 1 else 'ranks'} not in the table: {index_span(named)}")
    if jm.unattached:
        verb = "names" if jm.unattached == 1 else "name"
        notes.append(f"{how_many(jm.unattached, 'finding')} {verb} no rank or node (see the findings)")
    if missing_hosts:
        notes.append(
            f"no snapshot of {how_many(len(missing_hosts), 'host')} on this page: "
            + ", ".join(shorten(h, 24) for h in missing_hosts[:4])
            + (" …" if len(missing_hosts) > 4 else "")
        )
    if numa_unknown:
        notes.append(f"NUMA node not known for {how_many(numa_unknown, 'GPU')} on this page")
    if not report.ranks:
        notes.append("no rank table in this report")
    if notes:
        title += "<br><span style='font-size:12px'>" + esc("; ".join(notes)) + "</span>"
    ticks = ["node"] + columns[1:]
    fig.update_layout(
        title=dict(text=title, font=dict(size=14)),
        xaxis=dict(
            side="top",
            tickmode="array",
            tickvals=list(range(len(columns))),
            ticktext=ticks,
            range=[-0.5, len(columns) - 0.5],
            showgrid=False,
            zeroline=False,
        ),
        yaxis=dict(
            autorange="reversed",
            tickmode="array",
            tickvals=list(range(len(rows))),
            ticktext=ylabels,
            showgrid=False,
            zeroline=False,
        ),
        # wide enough for a cell's ranks and "cpu N0+1" however wide the page is; wider pages scroll
        width=min(MAX_WIDTH, 220 + CELL_PX * len(columns)),
        height=max(300, 190 + 40 * len(rows)),
        margin=dict(l=200, r=20, t=120, b=50),
        showlegend=True,
        legend=dict(orientation="h", yanchor="top", y=-0.02, itemclick=False, itemdoubleclick=False),
        plot_bgcolor="white",
        clickmode="event",
        meta=dict(nodes=list(shown), page=page, pages=pages, columns=columns, nic0=nic0),
    )
    return fig


def job_summary_html(jm: JobMap, limit: int = 12) -> str:
    """Escaped HTML: the nodes and ranks the findings name, readable without JavaScript."""
    marked = [h for h in jm.hosts if h in jm.host_marks]
    head = (
        f"<p><b>{how_many(len(jm.hosts), 'node')}</b>, {how_many(len(jm.report.ranks), 'rank')}; "
        f"{how_many(len(jm.findings), 'finding')}, {how_many(len(marked), 'node')} named by them.</p>"
    )
    if not marked and not jm.absent:
        return head
    items = []
    named_on: dict[str, list[int]] = {}
    for host, r in jm.rank_marks:
        named_on.setdefault(host, []).append(r)
    for h in marked[:limit]:
        named = named_on.get(h, [])
        fs = jm.host_marks[h]
        items.append(
            f"<li><b>{esc(shorten(h, 48))}</b>"
            + (f" (ranks {esc(index_span(named))})" if named else "")
            + ": "
            + "; ".join(f"[{esc(f.severity)}] {esc(shorten(f.title, 120))}" for f in fs[:3])
            + (f"; … {len(fs) - 3} more" if len(fs) > 3 else "")
            + "</li>"
        )
    if len(marked) > limit:
        items.append(f"<li>… and {how_many(len(marked) - limit, 'more node', 'more nodes')}.</li>")
    if jm.absent:
        items.append(f"<li>ranks named but not in the table: {esc(index_span(jm.absent))}</li>")
    return head + "<ul class='ncclnb-jobmap-marked'>" + "".join(items) + "</ul>"


class JobMapWidget(PagedFigure):
    """The job map of a report, live: a page of ``page_size`` nodes, all or
    only those the findings name (``only_marked``); a click on a cell shows
    its details."""

    def __init__(self, report: ClusterReport, job_map: JobMap, figure, summary_html: str, page_size: int = PAGE_SIZE):
        self.report, self.job_map, self.page_size = report, job_map, page_size
        super().__init__(summary_html, figure, "only nodes named by findings", "ncclnb-jobmap")

    def page_count(self) -> int:
        return self.job_map.pages(self.page_size, self.only_marked)

    def page_figure(self):
        return job_map_figure(
            self.report, page=self.page, page_size=self.page_size, only_marked=self.only_marked, job_map=self.job_map
        )


def show_job_map(target, findings: Optional[Sequence[Finding]] = None, page_size: int = PAGE_SIZE):
    """The job map of a report as a live widget: a page selector, "only
    nodes named by findings", click a cell for its details.

    ``target`` is a ClusterReport (or snapshot, bundled name, path).
    ``findings`` default to the report's own (what the survey's checks said)
    or, when it carries none, to ``ncclnb.check(target)``."""
    target = resolve(target)
    report = target if isinstance(target, ClusterReport) else ClusterReport(snapshots=(target,))
    problem = None
    if findings is None:
        findings, problem = report_findings(report)
    jm = analyse_job(report, findings)
    fig = job_map_figure(report, page=0, page_size=page_size, job_map=jm)
    summary = job_summary_html(jm) + (f"<p><i>{esc(problem)}</i></p>" if problem else "")
    marked = sum(1 for h in jm.hosts if h in jm.host_marks)
    return with_text_form(
        View(
            JobMapWidget(report, jm, fig, summary, page_size),
            fig,
            "<h4>Job map</h4>" + summary,
            f"ncclnb job map: {len(jm.hosts)} nodes, {len(report.ranks)} ranks, {marked} named by findings",
        ),
        "show_job_map",
        target,
    )
