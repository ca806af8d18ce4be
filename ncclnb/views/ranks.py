"""The rank map: nodes x local slots, each cell a global rank with its GPU
and pid, coloured and marked by the findings of the rank checks that name
it. Large jobs are paginated with the anomalous nodes first, so 1024 nodes
x 8 never becomes an unreadable wall.

The map never decides what is wrong: it runs the rank checks
(:mod:`ncclnb.checks.ranks`, through :func:`ncclnb.checks.check`) or takes
their findings, and :data:`RULES` gives each check id a colour and a label.
A cell takes the colour of the worst finding naming its rank (by severity,
then :data:`RULES` order), the sign of that finding's severity, and the
findings' titles as its text. A rank a finding names that no process
reported (a missing rank) gets a cell of its own. A new colour here means a
new check there."""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable, Optional

import ipywidgets as w

from ..model import SEVERITIES, ClusterReport, Finding, RankEntry
from ..model.derive import job_world_size
from ..model.words import how_many
from ._common import esc, resolve, shorten, step_colorscale
from .jobmap import SEVERITY_SIGNS
from .widgets import PagedFigure, View, clicked, with_text_form


@dataclass(frozen=True)
class RuleLook:
    """How the rank map shows the findings of one check."""

    colour: str
    label: str  # the legend's and the hover's name for a cell of this colour
    noun: str  # counted as a reader says it: how_many(n, noun) + rest
    rest: str = ""
    heads: bool = False  # its findings are about the whole table: their titles also head the map


# One entry per check of ncclnb.checks.ranks (tests/views/test_figures.py holds
# them equal), worst first where severities tie.
RULES: dict[str, RuleLook] = {
    "rank_out_of_range": RuleLook("#d73027", "rank at or above the world size", "rank", " at or above the world size"),
    "rank_table_gaps": RuleLook("#f46d43", "duplicate or missing rank", "duplicate or missing rank"),
    "world_size_vs_nodes": RuleLook("#fdae61", "WORLD_SIZE disagrees", "rank", " whose WORLD_SIZE disagrees", heads=True),
    "local_rank_table": RuleLook("#fee08b", "LOCAL_RANK shared or too large", "rank", " with a shared or too large LOCAL_RANK"),
    "ranks_share_gpu": RuleLook("#542788", "two ranks on one GPU", "rank", " sharing a GPU"),
    "local_rank_device": RuleLook("#8073ac", "GPU ≠ LOCAL_RANK, or none set", "rank", " not on cuda:LOCAL_RANK"),
    "cuda_visible_devices_invalid": RuleLook(
        "#b2abd2", "CUDA_VISIBLE_DEVICES names a GPU not there", "rank", " under a CUDA_VISIBLE_DEVICES naming a GPU not there"
    ),
    "rank_affinity_numa": RuleLook("#4575b4", "CPUs off the GPU's NUMA node", "rank", " pinned off the GPU's NUMA node"),
    "rank_nic_far": RuleLook("#74add1", "NIC across the sockets from the GPU", "rank", " with the NIC across the sockets"),
}

# Cell kinds in colour-scale order: a check id, "ok" (no finding names the rank), "empty" (no rank).
KINDS = tuple(RULES) + ("ok", "empty")
KIND_COLOURS = {**{k: look.colour for k, look in RULES.items()}, "ok": "#a6d96a", "empty": "#ffffff"}
KIND_LABELS = {**{k: look.label for k, look in RULES.items()}, "ok": "ok", "empty": "no rank"}
# each kind with its count, as a reader says it: "1 rank at or above the world size", "3 duplicate or missing ranks"
_COUNTED = {**{k: (look.noun, look.rest) for k, look in RULES.items()}, "ok": ("rank", " ok"), "empty": ("empty slot", "")}


def kind_count(kind: str, n: int) -> str:
    """``kind_count("rank_out_of_range", 3)`` -> "3 ranks at or above the world size"."""
    noun, rest = _COUNTED[kind]
    return how_many(n, noun) + rest


PAGE_SIZE = 32  # nodes per page
SLOT_LIMIT = 64  # slot columns drawn one by one; more (thousands of ranks on a node): blocks of slots


@dataclass
class Cell:
    node: int
    slot: int
    entry: Optional[RankEntry] = None
    missing_rank: Optional[int] = None  # a rank findings name that no process reported
    problems: list[str] = field(default_factory=list)  # escaped: the titles of the findings naming the rank, worst first
    kind: str = "ok"  # the check id of the worst finding naming the rank; "ok" when none does
    findings: list[Finding] = field(default_factory=list)  # worst first
    severity: Optional[str] = None  # of the worst finding

    @property
    def sign(self) -> str:
        """✖, ⚠ or ℹ for the worst finding naming the rank; "" for none."""
        return SEVERITY_SIGNS.get(self.severity or "", "")


@dataclass
class RankMap:
    """Where each rank of a rank table is drawn and which findings name it,
    shared by the figure and the widget."""

    hosts: list[str]
    slots: int
    world_size: Optional[int]
    cells: dict[tuple[int, int], Cell]
    unplaced: list[Cell]  # missing ranks with no free cell
    counts: Counter
    anomalous_nodes: list[int]
    layout_note: str = ""  # escaped: the titles of findings about the whole table, or naming no rank drawn
    findings: tuple[Finding, ...] = ()  # the rank checks' findings the map read
    node_severity: dict[int, str] = field(default_factory=dict)  # node -> severity of the worst finding on it
    reported: int = 0  # ranks the table holds

    _node_index: Optional[dict] = field(default=None, repr=False, compare=False)

    def node_cells(self, node: int) -> list[Cell]:
        """The cells of one node, by slot (an index built once for all nodes)."""
        if self._node_index is None:
            index: dict[int, list[Cell]] = {}
            for (ni, _), cell in sorted(self.cells.items(), key=lambda kv: kv[0]):
                index.setdefault(ni, []).append(cell)
            self._node_index = index
        return self._node_index.get(node, [])

    def node_order(self, only_anomalous: bool = False) -> list[int]:
        bad = list(self.anomalous_nodes)
        if only_anomalous:
            return bad
        bad_set = set(bad)
        return bad + [i for i in range(len(self.hosts)) if i not in bad_set]


def _majority(values):
    values = [v for v in values if v is not None]
    return Counter(values).most_common(1)[0][0] if values else None


def _worst_first(f: Finding):
    sev = SEVERITIES.index(f.severity) if f.severity in SEVERITIES else len(SEVERITIES)
    return (sev, KINDS.index(f.rule))


def _mark(cell: Cell, findings: list[Finding]) -> None:
    """Give ``cell`` the findings naming its rank: its kind, sign and text."""
    cell.findings = sorted(findings, key=_worst_first)
    cell.problems = [esc(f.title) for f in cell.findings]
    if cell.findings:
        cell.kind, cell.severity = cell.findings[0].rule, cell.findings[0].severity
    else:
        cell.kind, cell.severity = "ok", None


def rank_findings(report: ClusterReport) -> list[Finding]:
    """The findings of the rank checks (the checks :data:`RULES` shows) on ``report``."""
    from ..checks import check

    return check(report, only=list(RULES))


def analyse_ranks(report: ClusterReport, findings: Optional[Iterable[Finding]] = None) -> RankMap:
    """Place every rank of the report's rank table and mark it with the
    findings naming it (pure). ``findings`` default to the rank checks' on
    ``report`` (:func:`rank_findings`); findings of other checks are left out.

    A finding names a rank by number; where it names hosts too, only that
    rank's processes on those hosts (two processes may claim one rank)."""
    findings = tuple(f for f in (rank_findings(report) if findings is None else findings) if f.rule in RULES)
    entries = list(report.ranks)
    node_rank_of: dict[str, Optional[int]] = {}
    # hosts in first-seen order, snapshots first (a dict, not `in list`: 6,250 hosts x 50,000 ranks)
    hosts = list(dict.fromkeys([s.hostname for s in report.snapshots] + [e.host for e in entries]))
    by_host: dict[str, list[RankEntry]] = {h: [] for h in hosts}
    for e in entries:
        by_host[e.host].append(e)
    for h in hosts:
        node_rank_of[h] = _majority(e.node_rank for e in by_host[h])
    first_seen = {h: i for i, h in enumerate(hosts)}
    # order nodes by NODE_RANK where known, then as first seen
    hosts.sort(key=lambda h: (node_rank_of[h] is None, node_rank_of[h] or 0, first_seen[h]))
    host_idx = {h: i for i, h in enumerate(hosts)}

    world = job_world_size(entries)
    if world is None and entries:
        world = len({e.rank for e in entries})

    cells: dict[tuple[int, int], Cell] = {}
    by_rank: dict[int, list[Cell]] = {}
    next_slot = {h: 0 for h in hosts}
    for e in entries:
        ni = host_idx[e.host]
        slot = e.local_rank if isinstance(e.local_rank, int) and e.local_rank >= 0 else None
        if slot is None or (ni, slot) in cells:
            while (ni, next_slot[e.host]) in cells:
                next_slot[e.host] += 1
            slot = next_slot[e.host]
        cell = Cell(ni, slot, entry=e)
        cells[(ni, slot)] = cell
        by_rank.setdefault(e.rank, []).append(cell)

    # which cells each finding names; ranks no process reported are "absent"
    named: dict[int, list[Finding]] = {}  # id(cell) -> findings
    absent: dict[int, list[Finding]] = {}
    attached: set[int] = set()  # ids of findings naming a rank drawn
    for f in findings:
        on = set(f.hosts)
        for r in f.ranks:
            holders = by_rank.get(r)
            if holders is None:
                absent.setdefault(r, []).append(f)
                attached.add(id(f))
                continue
            for cell in holders:
                if not on or (cell.entry is not None and cell.entry.host in on):
                    named.setdefault(id(cell), []).append(f)
                    attached.add(id(f))
    counts: Counter = Counter()
    for cell in cells.values():
        _mark(cell, named.get(id(cell), []))
        counts[cell.kind] += 1

    slots = max([s for (_, s) in cells] + [-1]) + 1
    unplaced: list[Cell] = []
    per_node = world // len(hosts) if world is not None and hosts and world % len(hosts) == 0 else None
    if world is not None and hosts:
        slots = max(slots, per_node or 0)
    for r in sorted(absent):
        cell = Cell(-1, -1, missing_rank=r)
        _mark(cell, absent[r])
        counts[cell.kind] += 1
        if per_node and r >= 0:
            ni, slot = divmod(r, per_node)
            if ni < len(hosts) and (ni, slot) not in cells:
                cell.node, cell.slot = ni, slot
                cells[(ni, slot)] = cell
                continue
        unplaced.append(cell)

    node_severity: dict[int, str] = {}
    for cell in cells.values():
        if cell.severity is not None:
            was = node_severity.get(cell.node)
            if was is None or _rank_of(cell.severity) < _rank_of(was):
                node_severity[cell.node] = cell.severity
    anomalous = sorted(node_severity)
    heads = [f for f in findings if RULES[f.rule].heads or id(f) not in attached]
    note = "; ".join(dict.fromkeys(esc(f.title) for f in sorted(heads, key=_worst_first)))
    return RankMap(hosts, slots, world, cells, unplaced, counts, anomalous, note, findings, node_severity, reported=len(entries))


def _rank_of(severity: str) -> int:
    return SEVERITIES.index(severity) if severity in SEVERITIES else len(SEVERITIES)


def cell_hover(rm: RankMap, cell: Cell) -> str:
    """Escaped hover / detail HTML for one cell."""
    host = esc(shorten(rm.hosts[cell.node], 48)) if 0 <= cell.node < len(rm.hosts) else "a node not known"
    if cell.entry is None:
        head = f"<b>missing rank {cell.missing_rank}</b> (expected on {host}, slot {cell.slot})"
    else:
        e = cell.entry
        gpu = f"cuda:{e.cuda_index}" if e.cuda_index is not None else "device not set"
        if e.gpu_uuid:
            gpu += f" ({esc(shorten(e.gpu_uuid, 20))})"
        head = (
            f"<b>rank {e.rank}</b> on {host}<br>local rank {esc(_q(e.local_rank))} · {gpu}"
            f" · {f'pid {esc(e.pid)}' if e.pid else 'pid not known'}"
            f"<br>WORLD_SIZE {esc(_q(e.world_size))} · NODE_RANK {esc(_q(e.node_rank))}"
        )
    if cell.findings:
        body = "<br>".join(f"{SEVERITY_SIGNS.get(f.severity, '')} {title}" for f, title in zip(cell.findings, cell.problems))
    else:
        body = "no finding names this rank"
    return f"{head}<br><i>{esc(KIND_LABELS[cell.kind])}</i><br>{body}"


def _cell_order(c: Cell):
    """Worst first: by the severity of the worst finding, then :data:`RULES` order."""
    return (_rank_of(c.severity) if c.severity else len(SEVERITIES) + 1, KINDS.index(c.kind))


def _q(value) -> str:
    return "not known" if value is None else str(value)


def slot_blocks(slots: int, limit: int = SLOT_LIMIT) -> list[tuple[int, int]]:
    """[0, slots) cut into at most ``limit`` equal runs of slots."""
    size = max(1, -(-slots // limit))
    return [(a, min(a + size, slots)) for a in range(0, max(1, slots), size)]


def _block_cells(rm: RankMap, node: int, a: int, b: int) -> list[Cell]:
    cells = rm.node_cells(node)
    lo = bisect_left([c.slot for c in cells], a)  # cells are sorted by slot
    out = []
    for c in cells[lo:]:
        if c.slot >= b:
            break
        out.append(c)
    return out


def _block_summary(rm: RankMap, node: int, a: int, b: int, cells: list[Cell]):
    """(kind, cell text, hover) of a block of slots on one node: the worst
    cell's kind colours it and its sign marks it; the hover counts each kind."""
    host = esc(shorten(rm.hosts[node], 48))
    if not cells:
        return "empty", "", f"{host}, slots {a}–{b - 1}: no rank"
    tally = Counter(c.kind for c in cells)
    first = min(cells, key=_cell_order)
    kind = first.kind
    bad = sum(v for k, v in tally.items() if k != "ok")
    counts = ", ".join(esc(kind_count(k, tally[k])) for k in KINDS if tally.get(k))
    example = f"<br>e.g. {first.sign} {first.problems[0][:160]}" if bad and first.problems else ""
    hover = (
        f"<b>{host}, slots {a}–{b - 1}</b>: {how_many(len(cells), 'rank')}{f', {bad} anomalous' if bad else ''}"
        f"<br>{counts}{example}<br><i>click for the list</i>"
    )
    return kind, (f"{bad}{first.sign}" if bad else ""), hover


def slot_block_html(rm: RankMap, node: int, a: int, b: int, limit: int = 20) -> str:
    """Escaped HTML: the anomalous ranks in slots [a, b) of a node (the first
    ``limit``, worst first), for the detail pane of a block."""
    cells = _block_cells(rm, node, a, b)
    bad = sorted((c for c in cells if c.kind != "ok"), key=lambda c: (_cell_order(c), c.slot))
    head = f"<b>{esc(shorten(rm.hosts[node], 48))}, slots {a}–{b - 1}</b>: {how_many(len(cells), 'rank')}, {len(bad)} anomalous"
    if not bad:
        return head
    items = "".join(f"<li>{cell_hover(rm, c).replace('<br>', ' · ')}</li>" for c in bad[:limit])
    more = f"<li>… and {len(bad) - limit} more.</li>" if len(bad) > limit else ""
    return head + f"<ul class='ncclnb-rank-anomalies'>{items}{more}</ul>"


def rank_map_figure(
    report: ClusterReport,
    page: int = 0,
    page_size: int = PAGE_SIZE,
    only_anomalous: bool = False,
    rank_map: Optional[RankMap] = None,
):
    """Pure: a plotly Figure, nodes (rows) x local slots (columns).

    Each cell shows the global rank and its GPU; its colour is the check of
    the worst finding naming the rank (:data:`RULES`), its sign that
    finding's severity (✖ ⚠ ℹ), and hover gives the findings' titles. A
    missing rank a finding names is drawn in its expected slot as "(rank)".
    Nodes with anomalies come first; ``page`` and
    ``page_size`` select which nodes are drawn. Past SLOT_LIMIT slots per
    node, columns are blocks of slots coloured by the worst kind in them
    (``layout.meta["slot_blocks"]`` lists them; :func:`slot_block_html`
    gives a block's anomalous ranks)."""
    import plotly.graph_objects as go

    rm = rank_map or analyse_ranks(report)
    order = rm.node_order(only_anomalous)
    pages = max(1, -(-len(order) // page_size))
    page = min(max(0, page), pages - 1)
    shown = order[page * page_size : (page + 1) * page_size]
    slots = max(1, rm.slots)
    blocks = slot_blocks(slots) if slots > SLOT_LIMIT else None
    z, text, hover, ylabels = [], [], [], []
    for ni in shown:
        zr, tr, hr = [], [], []
        if blocks is not None:
            cells = rm.node_cells(ni)
            starts = [c.slot for c in cells]
            for a, b in blocks:
                lo, hi = bisect_left(starts, a), bisect_left(starts, b)
                kind, cell_text, cell_hover_text = _block_summary(rm, ni, a, b, cells[lo:hi])
                zr.append(KINDS.index(kind))
                tr.append(cell_text)
                hr.append(cell_hover_text)
        else:
            for s in range(slots):
                cell = rm.cells.get((ni, s))
                if cell is None:
                    zr.append(KINDS.index("empty"))
                    tr.append("")
                    hr.append(f"{esc(shorten(rm.hosts[ni], 48))}, slot {s}: no rank")
                    continue
                zr.append(KINDS.index(cell.kind))
                if cell.entry is None:
                    tr.append(f"({cell.missing_rank})")
                else:
                    e = cell.entry
                    sign = f" {cell.sign}" if cell.sign else ""  # an anomaly is a sign as well as a colour
                    tr.append(f"{e.rank}{sign}<br>{'cuda:' + str(e.cuda_index) if e.cuda_index is not None else '—'}")
                hr.append(cell_hover(rm, cell))
        z.append(zr)
        text.append(tr)
        hover.append(hr)
        worst = rm.node_severity.get(ni)
        mark = f" {SEVERITY_SIGNS[worst]}" if worst in SEVERITY_SIGNS else ""
        ylabels.append(f"{ni}: {esc(shorten(rm.hosts[ni], 28))}{mark}")
    k = len(KINDS)
    scale = step_colorscale(KIND_COLOURS[kind] for kind in KINDS)
    columns = [f"slots {a}–{b - 1}" for a, b in blocks] if blocks is not None else [f"slot {s}" for s in range(slots)]
    heat = go.Heatmap(
        z=z,
        x=columns,
        y=list(range(len(shown))),
        zmin=-0.5,
        zmax=k - 0.5,
        colorscale=scale,
        xgap=2,
        ygap=2,
        text=text,
        texttemplate="%{text}" if len(columns) <= 16 else None,
        textfont=dict(size=10),
        hovertext=hover,
        hovertemplate="%{hovertext}<extra></extra>",
        name="ranks",
        showscale=False,
    )
    # a legend of the kinds present, instead of a colour bar of them all
    present = [
        kd for kd in KINDS if rm.counts.get(kd) or (kd == "empty" and any(v == KINDS.index("empty") for row in z for v in row))
    ]
    keys = [
        go.Scatter(
            x=[None],
            y=[None],
            mode="markers",
            name=KIND_LABELS[kd],
            hoverinfo="skip",
            marker=dict(symbol="square", size=12, color=KIND_COLOURS[kd], line=dict(color="#636363", width=1)),
        )
        for kd in present
    ]
    fig = go.Figure([heat] + keys)
    bad = len(rm.anomalous_nodes)
    counts = ", ".join(kind_count(kd, n) for kd, n in sorted(rm.counts.items(), key=lambda kv: KINDS.index(kv[0])) if kd != "ok")
    world = "not known" if rm.world_size is None else rm.world_size
    title = (
        f"Rank map · {len(rm.hosts)} nodes × {slots} slots, WORLD_SIZE {world} · "
        f"{how_many(bad, 'node')} with anomalies{' (first)' if bad and not only_anomalous else ''}"
        + (f" · page {page + 1}/{pages}" if pages > 1 else "")
        + (
            f" · blocks of {blocks[0][1] - blocks[0][0]} slots (worst kind shown; click for the ranks)"
            if blocks is not None
            else ""
        )
    )
    if rm.layout_note or counts:
        sub = "; ".join(x for x in (rm.layout_note, esc(counts)) if x)
        title += f"<br><span style='font-size:12px'>{sub}</span>"
    if rm.unplaced:
        missing = ", ".join(str(c.missing_rank) for c in rm.unplaced[:24]) + (" …" if len(rm.unplaced) > 24 else "")
        title += f"<br><span style='font-size:12px'>missing, no free slot to draw them: ranks {missing}</span>"
    meta = dict(nodes=shown, page=page, pages=pages)
    if blocks is not None:
        meta["slot_blocks"] = [[a, b] for a, b in blocks]
    fig.update_layout(
        title=dict(text=title, font=dict(size=14)),
        xaxis=dict(side="top"),
        yaxis=dict(autorange="reversed", tickmode="array", tickvals=list(range(len(shown))), ticktext=ylabels),
        height=max(300, 150 + 34 * len(shown)),
        margin=dict(l=190, r=20, t=120, b=20),
        showlegend=True,
        legend=dict(title=dict(text="cell"), itemclick=False, itemdoubleclick=False),
        plot_bgcolor="white",
        clickmode="event",
        meta=meta,
    )
    return fig


def rank_summary_html(rm: RankMap, limit: int = 20) -> str:
    """Escaped HTML: counts per anomaly and the first ``limit`` anomalous
    cells, readable without JavaScript."""
    if not rm.cells and not rm.unplaced:
        return "<p>No rank table in this report.</p>"
    bad = [c for c in rm.cells.values() if c.kind != "ok"] + rm.unplaced
    bad.sort(key=lambda c: (_cell_order(c), c.node, c.slot))
    head = f"<p><b>{len(rm.hosts)} nodes</b>, WORLD_SIZE {esc(_q(rm.world_size))}, {rm.reported} ranks reported; "
    if rm.layout_note:
        head = f"<p><b>⚠ {rm.layout_note}</b></p>" + head
    if not bad:
        return head + "no anomaly.</p>"
    head += (
        ", ".join(
            f'<span style="background:{KIND_COLOURS[k]};padding:0 4px">{esc(kind_count(k, v))}</span>'
            for k, v in sorted(rm.counts.items(), key=lambda kv: KINDS.index(kv[0]))
            if k != "ok"
        )
        + "</p>"
    )
    items = "".join(f"<li>{cell_hover(rm, c).replace('<br>', ' · ')}</li>" for c in bad[:limit])
    more = f"<li>… and {len(bad) - limit} more.</li>" if len(bad) > limit else ""
    return (
        head + f"<details><summary>{len(bad)} anomalous rank{'s' if len(bad) != 1 else ''}</summary>"
        f"<ul class='ncclnb-rank-anomalies'>{items}{more}</ul></details>"
    )


# --- the live widget ---------------------------------------------------------------------------


class RankMapWidget(PagedFigure):
    """The rank map of a report, live: a page of ``page_size`` nodes (the
    anomalous first), all nodes or only those with anomalies
    (``only_marked``); a click on a cell shows why it is coloured."""

    def __init__(self, report: ClusterReport, rank_map: RankMap, figure, page_size: int = 32):
        self.report, self.rank_map, self.page_size = report, rank_map, page_size
        self.blocks = (figure.layout.meta or {}).get("slot_blocks")  # the same for every page: they depend on the map only
        super().__init__(rank_summary_html(rank_map), figure, "only nodes with anomalies", "ncclnb-ranks", self._show_cell)

    def page_count(self) -> int:
        return max(1, -(-len(self.rank_map.node_order(self.only_marked)) // self.page_size))

    def page_figure(self):
        return rank_map_figure(self.report, self.page, self.page_size, self.only_marked, rank_map=self.rank_map)

    def _show_cell(self, trace, points, _state) -> None:
        hit = clicked(points)
        if hit is None:
            return
        x, y, _ = hit
        rm = self.rank_map
        nodes = rm.node_order(self.only_marked)[self.page * self.page_size : (self.page + 1) * self.page_size]
        if self.blocks:
            try:
                ni, (a, b) = nodes[int(y)], self.blocks[list(trace.x).index(x)]
            except (ValueError, IndexError, TypeError):
                return
            self.detail.value = slot_block_html(rm, ni, a, b)
            return
        try:
            ni, s = nodes[int(y)], int(str(x).split()[-1])
        except (ValueError, IndexError, TypeError):
            return
        cell = rm.cells.get((ni, s))
        self.detail.value = cell_hover(rm, cell) if cell else f"{esc(rm.hosts[ni])}, slot {s}: no rank"


def show_ranks(target, page_size: int = 32):
    """The rank map of a ClusterReport (nodes x local slots) as a live
    widget: anomalous nodes first, pages of ``page_size`` nodes, click a
    cell to see why it is coloured."""
    target = resolve(target)
    if not isinstance(target, ClusterReport) or not target.ranks:
        note = "<p>No rank table: the rank map needs a ClusterReport with ranks.</p>"
        return View(w.HTML(note), None, note, "ncclnb rank map: no rank table")
    rm = analyse_ranks(target)
    fig = rank_map_figure(target, 0, page_size, rank_map=rm)
    widget = RankMapWidget(target, rm, fig, page_size)
    return with_text_form(
        View(
            widget,
            fig,
            "<h4>Rank map</h4>" + rank_summary_html(rm),
            f"ncclnb rank map: {len(rm.hosts)} nodes, WORLD_SIZE {rm.world_size}",
        ),
        "show_ranks",
        target,
    )
