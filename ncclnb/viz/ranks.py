"""The rank map: nodes x local slots, each cell a global rank with its GPU
and pid; anomalies coloured and explained. Large jobs are paginated with the
anomalous nodes first, so 1024 nodes x 8 never becomes an unreadable wall."""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter
from dataclasses import dataclass, field
from typing import Optional

from ..model import ClusterReport, RankEntry
from ..model.words import how_many
from ._common import esc, shorten, step_colorscale

# Cell kinds, worst first: a cell takes the colour of its worst problem.
KINDS = (
    "out_of_range",
    "duplicate",
    "shared_gpu",
    "wrong_device",
    "world_size",
    "device_unset",
    "missing",
    "ok",
    "empty",
)
KIND_COLOURS = {
    "out_of_range": "#d73027",
    "duplicate": "#f46d43",
    "shared_gpu": "#542788",
    "wrong_device": "#8073ac",
    "world_size": "#fdae61",
    "device_unset": "#fee08b",
    "missing": "#969696",
    "ok": "#a6d96a",
    "empty": "#ffffff",
}
KIND_LABELS = {
    "out_of_range": "rank at or above the world size",
    "duplicate": "duplicate rank",
    "shared_gpu": "two ranks on one GPU",
    "wrong_device": "GPU ≠ LOCAL_RANK",
    "world_size": "WORLD_SIZE differs",
    "device_unset": "device never set",
    "missing": "missing rank",
    "ok": "ok",
    "empty": "no rank",
}
# each kind with its count, as a reader says it: "1 rank at or above the world size", "3 duplicate ranks"
_COUNTED = {
    "out_of_range": ("rank", " at or above the world size"),
    "duplicate": ("duplicate rank", ""),
    "shared_gpu": ("rank", " sharing a GPU"),
    "wrong_device": ("rank", " on a GPU other than LOCAL_RANK"),
    "world_size": ("rank", " with a different WORLD_SIZE"),
    "device_unset": ("rank", " that never set a device"),
    "missing": ("missing rank", ""),
    "ok": ("rank", " ok"),
    "empty": ("empty slot", ""),
}


def kind_count(kind: str, n: int) -> str:
    """``kind_count("out_of_range", 3)`` -> "3 ranks at or above the world size"."""
    noun, rest = _COUNTED[kind]
    return how_many(n, noun) + rest


PAGE_SIZE = 32  # nodes per page
SLOT_LIMIT = 64  # slot columns drawn one by one; more (thousands of ranks on a node): blocks of slots
MISSING_LIMIT = 1 << 20  # missing ranks listed one by one; more are only counted


@dataclass
class Cell:
    node: int
    slot: int
    entry: Optional[RankEntry] = None
    missing_rank: Optional[int] = None
    problems: list[str] = field(default_factory=list)  # escaped sentences
    kind: str = "ok"


@dataclass
class RankMap:
    """Pure analysis of a rank table, shared by the figure and the widget."""

    hosts: list[str]
    slots: int
    world_size: Optional[int]
    cells: dict[tuple[int, int], Cell]
    unplaced: list[Cell]  # anomalies with no free cell
    counts: Counter
    anomalous_nodes: list[int]
    layout_note: str = ""  # escaped: WORLD_SIZE vs nodes x ranks per node

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


def analyse_ranks(report: ClusterReport) -> RankMap:
    """Classify every rank of the report's rank table (pure)."""
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

    world = _majority(e.world_size for e in entries)
    if world is None and entries:
        world = len({e.rank for e in entries})
    rank_counts = Counter(e.rank for e in entries)
    per_host_devices: dict[str, Counter] = {h: Counter() for h in hosts}
    for e in entries:
        dev = e.gpu_uuid or (f"cuda:{e.cuda_index}" if e.cuda_index is not None else None)
        if dev:
            per_host_devices[e.host][dev] += 1
    local_count = {h: len(v) for h, v in by_host.items()}
    snap_gpus = {s.hostname: len(s.gpus) for s in report.snapshots}

    cells: dict[tuple[int, int], Cell] = {}
    unplaced: list[Cell] = []
    counts: Counter = Counter()
    next_slot = {h: 0 for h in hosts}
    for e in entries:
        ni = host_idx[e.host]
        slot = e.local_rank if e.local_rank is not None and e.local_rank >= 0 else None
        if slot is None or (ni, slot) in cells:
            while (ni, next_slot[e.host]) in cells:
                next_slot[e.host] += 1
            slot = next_slot[e.host]
        cell = Cell(ni, slot, entry=e)
        kinds = []
        if world is not None and not 0 <= e.rank < world:
            kinds.append("out_of_range")
            cell.problems.append(
                f"rank {e.rank} is outside 0..{world - 1} (WORLD_SIZE {world}): NCCL says "
                f"'Invalid rank requested : {e.rank}/{world}'"
            )
        if rank_counts[e.rank] > 1:
            kinds.append("duplicate")
            cell.problems.append(f"rank {e.rank} is used by {rank_counts[e.rank]} processes")
        dev = e.gpu_uuid or (f"cuda:{e.cuda_index}" if e.cuda_index is not None else None)
        if dev and per_host_devices[e.host][dev] > 1:
            kinds.append("shared_gpu")
            cell.problems.append(f"{per_host_devices[e.host][dev]} ranks on this host use the same GPU ({esc(shorten(dev, 24))})")
        if e.cuda_index is not None and e.local_rank is not None and e.cuda_index != e.local_rank:
            kinds.append("wrong_device")
            cell.problems.append(
                f"uses cuda:{e.cuda_index} but LOCAL_RANK is {e.local_rank}: "
                f"torch.cuda.set_device(LOCAL_RANK) was not called, or called with the global rank"
            )
        if e.world_size is not None and world is not None and e.world_size != world:
            kinds.append("world_size")
            cell.problems.append(f"this rank saw WORLD_SIZE={e.world_size}, most saw {world}")
        if e.cuda_index is None and e.gpu_uuid is None:
            ndev = snap_gpus.get(e.host) or local_count[e.host] or 1
            kinds.append("device_unset")
            cell.problems.append(
                f"no device was set: for a barrier torch guesses cuda:{e.rank % ndev} "
                f"(global rank {e.rank} % {ndev} local devices)"
            )
        cell.kind = min(kinds, key=KINDS.index) if kinds else "ok"
        counts[cell.kind] += 1
        cells[(ni, slot)] = cell

    slots = max([s for (_, s) in cells] + [-1]) + 1
    present = set(rank_counts)
    absent = (world - sum(1 for r in present if 0 <= r < world)) if world is not None else 0
    if world is not None and hosts and absent > MISSING_LIMIT:
        # a WORLD_SIZE far beyond the ranks seen (a typo, 10**9): counted, not enumerated
        counts["missing"] += absent
    elif world is not None and hosts:
        per_node = world // len(hosts) if world % len(hosts) == 0 else None
        slots = max(slots, per_node or 0)
        for r in range(world):
            if r in present:
                continue
            cell = Cell(
                -1,
                -1,
                missing_rank=r,
                kind="missing",
                problems=[f"rank {r} of WORLD_SIZE {world} never reported: it did not start or did not join"],
            )
            counts["missing"] += 1
            if per_node:
                ni, slot = divmod(r, per_node)
                if ni < len(hosts) and (ni, slot) not in cells:
                    cell.node, cell.slot = ni, slot
                    cells[(ni, slot)] = cell
                    continue
            unplaced.append(cell)
    anomalous = sorted({c.node for c in cells.values() if c.kind != "ok"})
    note = ""
    if world is not None and entries:
        per_node_seen = {len(v) for v in by_host.values() if v}
        if len(per_node_seen) == 1:
            per = per_node_seen.pop()
            if per * len(by_host) != world:
                note = (
                    f"WORLD_SIZE is {world} but {len(by_host)} nodes × {per} ranks per node = "
                    f"{per * len(by_host)} processes started"
                )
    return RankMap(hosts, slots, world, cells, unplaced, counts, anomalous, note)


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
    body = "<br>".join("⚠ " + p for p in cell.problems) if cell.problems else "ok"
    return f"{head}<br><i>{esc(KIND_LABELS[cell.kind])}</i><br>{body}"


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
    kind present colours it; the hover counts each kind."""
    host = esc(shorten(rm.hosts[node], 48))
    if not cells:
        return "empty", "", f"{host}, slots {a}–{b - 1}: no rank"
    tally = Counter(c.kind for c in cells)
    kind = min(tally, key=KINDS.index)
    bad = sum(v for k, v in tally.items() if k != "ok")
    counts = ", ".join(esc(kind_count(k, tally[k])) for k in KINDS if tally.get(k))
    first = next((c for c in cells if c.kind == kind), cells[0])
    example = f"<br>e.g. {esc(first.problems[0][:160]) if first.problems else 'ok'}" if bad else ""
    hover = (
        f"<b>{host}, slots {a}–{b - 1}</b>: {how_many(len(cells), 'rank')}{f', {bad} anomalous' if bad else ''}"
        f"<br>{counts}{example}<br><i>click for the list</i>"
    )
    return kind, (f"{bad}⚠" if bad else ""), hover


def slot_block_html(rm: RankMap, node: int, a: int, b: int, limit: int = 20) -> str:
    """Escaped HTML: the anomalous ranks in slots [a, b) of a node (the first
    ``limit``, worst first), for the detail pane of a block."""
    cells = _block_cells(rm, node, a, b)
    bad = sorted((c for c in cells if c.kind != "ok"), key=lambda c: (KINDS.index(c.kind), c.slot))
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

    Each cell shows the global rank and its GPU; colour says its worst
    anomaly (rank out of range, duplicate, two ranks on one GPU, GPU not
    matching LOCAL_RANK, WORLD_SIZE disagreeing, device never set, missing)
    and hover explains it. Nodes with anomalies come first; ``page`` and
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
    bad_nodes = set(rm.anomalous_nodes)
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
                    sign = " ⚠" if cell.kind != "ok" else ""  # an anomaly is a sign as well as a colour
                    tr.append(f"{e.rank}{sign}<br>{'cuda:' + str(e.cuda_index) if e.cuda_index is not None else '—'}")
                hr.append(cell_hover(rm, cell))
        z.append(zr)
        text.append(tr)
        hover.append(hr)
        mark = " ⚠" if ni in bad_nodes else ""
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
    # a legend of the kinds present, instead of a colour bar of all nine
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
    bad.sort(key=lambda c: (KINDS.index(c.kind), c.node, c.slot))
    head = (
        f"<p><b>{len(rm.hosts)} nodes</b>, WORLD_SIZE {esc(_q(rm.world_size))}, "
        f"{sum(v for k, v in rm.counts.items() if k not in ('missing',))} ranks reported; "
    )
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
