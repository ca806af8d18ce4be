"""The topology view: GPU x (GPU + NIC) matrix coloured by link class."""

from __future__ import annotations

import math
from bisect import bisect_right
from collections import Counter
from typing import Iterable, Optional

import ipywidgets as w
import traitlets

from ..model import NodeSnapshot, nvlink_count
from ..model.derive import LINK_CLASSES, link_class, nic_numa
from ..model.words import how_many
from ._common import (
    LINK_COLOURS,
    LINK_MEANING,
    LINK_NAMES,
    LINK_ORDER,
    NARROW,
    bus_text,
    esc,
    gpu_hover,
    gpus_in_use,
    nic_info,
    nic_traits,
    numa_text,
    pick_snapshot,
    ranks_of,
    resolve,
    shorten,
    step_colorscale,
)
from .widgets import DETAIL_HINT, OneHostView, View, clicked, detail_pane, snapshot_of, with_text_form

# Past this many columns cell text is unreadable: colour, a mark over each
# cell whose P2P status is not OK, and hover carry it.
TEXT_LIMIT = 24
P2P_PRIMARY = ("read", "write", "nvlink", "atomics", "prop")
# A P2P status that is not OK is a shape, never a colour alone: "✗" in the
# cell's text, or this mark over the cell where cells carry no text.
P2P_MARK = dict(symbol="x", size=9, color="#000000", line=dict(color="#ffffff", width=1))
P2P_NAME = "✗ P2P not OK"

# The frame (margins, tick label angle, legend place, cell text size) is sized
# from the labels for the narrowest figure it is drawn in, _common.NARROW px
# wide: nothing overlaps there, and a wider figure only adds room.
TICK_FONT = 12  # px, plotly's default tick font
GLYPH = 0.62  # an average glyph's width / font size, a little generous (digits and capitals of a sans-serif)
LINE = 1.3  # line height / font size
TITLE_TOP = 8  # px from the top of the figure to its title
TITLE_PX = 14 * LINE + 6  # the title line (14 px); each subtitle line (12 px) adds 12 * LINE
LEGEND_RIGHT_PX = 180  # the legend beside the matrix ("link, fastest first", "NV# (NVLink)")
LEGEND_BELOW_PX = 56  # the legend under the matrix, in two rows where the figure is narrow


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


# Past this many cells (GPU rows x GPU and NIC columns) a view draws blocks of
# GPUs instead of GPU pairs: 72 GPUs + 8 NICs (an NVL72 domain) is 5,760 cells
# and about 1.5 MB of static HTML; 500 GPUs drawn cell by cell were 69 MB.
DETAIL_CELLS = 7_200
MAX_BLOCKS = 48  # block rows (and GPU block columns) of the aggregated view
BOARD = 8  # a block holds a multiple of 8 GPUs, so an 8-GPU board stays whole
NIC_BLOCKS = 16  # NIC columns of the aggregated view


def _cell(snapshot: NodeSnapshot, i: int, j: int) -> str:
    """Raw label between GPU positions i and j ("X" on the diagonal, "?" unknown)."""
    if i == j:
        return "X"
    label = snapshot.links.label(i, j)
    return label.strip() if isinstance(label, str) else "?"


def _nic_cell(snapshot: NodeSnapshot, i: int, k: int) -> str:
    try:
        label = snapshot.links.gpu_nic[i][k]
    except (IndexError, TypeError):
        return "?"
    return label.strip() if isinstance(label, str) else "?"


def _span(rng, n: int) -> tuple[int, int]:
    if rng is None:
        return 0, n
    a, b = int(rng[0]), int(rng[1])
    a = min(max(0, a), n)
    return a, min(max(a, b), n)


def topology_matrix(snapshot: NodeSnapshot, rows=None, cols=None):
    """Rows (GPU positions) and columns ("GPUk" / "NICk") with their labels.

    Returns ``(columns, labels)`` where ``labels[i][c]`` is the raw
    ``topo -m`` label between GPU i and column c ("?" when not known).
    ``rows`` and ``cols`` are ``(start, stop)`` GPU positions (default: all);
    the NIC columns always follow. The result has rows x columns cells:
    use :func:`topology_figure`, which draws blocks past DETAIL_CELLS."""
    n = len(snapshot.gpus)
    r0, r1 = _span(rows, n)
    c0, c1 = _span(cols, n)
    nics = snapshot.links.nic_names
    columns = [f"GPU{snapshot.gpus[j].index}" for j in range(c0, c1)] + [f"NIC{k}" for k in range(len(nics))]
    labels = [
        [_cell(snapshot, i, j) for j in range(c0, c1)] + [_nic_cell(snapshot, i, k) for k in range(len(nics))]
        for i in range(r0, r1)
    ]
    return columns, labels


def topology_mode(snapshot: NodeSnapshot, rows=None, cols=None) -> str:
    """ "cells" when the view draws every GPU pair, "blocks" when it folds them."""
    n = len(snapshot.gpus)
    r0, r1 = _span(rows, n)
    c0, c1 = _span(cols, n)
    return "cells" if (r1 - r0) * ((c1 - c0) + len(snapshot.links.nic_names)) <= DETAIL_CELLS else "blocks"


def _scale():
    return step_colorscale(LINK_COLOURS[cls] for cls in LINK_ORDER)


def _keys(z, p2p_cells: list, marked: bool) -> list:
    """Legend entries, in speed order, for the link classes the cells of
    ``z`` are drawn in (none other), then one for the P2P mark when a cell
    has it. ``p2p_cells`` is the (x, y) of each such cell: drawn as marks
    over the cells when ``marked``, else (the cells say "✗" in their text)
    listed in the legend only."""
    import plotly.graph_objects as go

    drawn = {v for row in z for v in row if v is not None}
    keys = [
        go.Scatter(
            x=[None],
            y=[None],
            mode="markers",
            hoverinfo="skip",
            name=LINK_NAMES.get(cls, cls),
            legendgroup="links",
            marker=dict(symbol="square", size=12, color=LINK_COLOURS[cls], line=dict(color="#636363", width=1)),
        )
        for k, cls in enumerate(LINK_ORDER)
        if k in drawn
    ]
    if p2p_cells:
        xs, ys = ([x for x, _ in p2p_cells], [y for _, y in p2p_cells]) if marked else ([None], [None])
        keys.append(go.Scatter(x=xs, y=ys, mode="markers", hoverinfo="skip", name=P2P_NAME, marker=P2P_MARK))
    return keys


def _legend_layout() -> dict:
    return dict(title=dict(text="link, fastest first"), itemclick=False, itemdoubleclick=False)


def _plain(label: str) -> list[str]:
    """The lines of a tick label as they read (tags dropped, entities as one glyph)."""
    import html
    import re

    return [html.unescape(re.sub(r"<[^>]+>", "", line)) for line in label.split("<br>")]


def text_px(label: str, size: float = TICK_FONT) -> float:
    """px of the widest line of ``label`` at ``size`` px."""
    return max((len(line) for line in _plain(label)), default=0) * size * GLYPH


def frame_layout(title: str, col_labels: list[list[str]], row_labels: list[str], rows_px: float, cell_text: Optional[list[str]]):
    """(layout dict, x tick texts, cell text size, x axis tick settings, (x, y)
    label strides: every how many columns and rows carry a label) for
    a matrix of ``len(col_labels)`` columns, ``rows_px`` tall, titled
    ``title`` (its first line the title, each further line a 12 px
    subtitle line), sized from its labels for a figure NARROW px wide.

    ``col_labels`` are each column's label as lines (escaped). The legend
    goes beside the matrix where the columns still fit, else under it. Tick
    labels lie flat where each fits its column, else stand at -90° on one
    line; the top margin holds the title, its subtitle and the tallest
    label, so nothing overlaps. ``cell_text`` (None: cells carry no text)
    sets the cell text size: 12 px, or 10 where 12 does not fit a column."""
    ncols = max(1, len(col_labels))
    left = max(60, round(max([text_px(r) for r in row_labels] + [0]) + 16))
    right = 20
    widest_cell = max([text_px(t) for t in cell_text or ()] + [0]) + 6
    room = NARROW - left - right
    legend_right = (room - LEGEND_RIGHT_PX) / ncols >= max(widest_cell, TICK_FONT * LINE + 4)
    column_px = (room - (LEGEND_RIGHT_PX if legend_right else 0)) / ncols
    text_size = 12 if widest_cell <= column_px else 10
    flat = all(text_px("<br>".join(lines)) + 6 <= column_px for lines in col_labels)
    # standing labels are as tall as a column is wide: a smaller font where columns are narrow,
    # and past 8 px only every stride-th column labelled (hover names each cell)
    tick_size = TICK_FONT if flat else max(8, min(TICK_FONT, int(column_px / LINE)))
    x_stride = 1 if flat else max(1, math.ceil(tick_size * LINE / column_px))
    row_px = rows_px / max(1, len(row_labels))
    y_stride = max(1, math.ceil(TICK_FONT * LINE / row_px))
    if flat:
        ticks = ["<br>".join(lines) for lines in col_labels]
        label_px = max((len(lines) for lines in col_labels), default=1) * tick_size * LINE + 6
    else:
        ticks = [" ".join(lines) for lines in col_labels]
        label_px = max((text_px(t, tick_size) for t in ticks), default=0) + 10
    title_px = TITLE_PX + 12 * LINE * title.count("<br>")
    top = round(TITLE_TOP + title_px + 8 + label_px)
    bottom = 20 + (0 if legend_right else LEGEND_BELOW_PX)
    height = round(top + bottom + rows_px)
    layout = dict(
        title=_title(title, height, title_px),
        height=height,
        margin=dict(l=left, r=right, t=top, b=bottom),
        legend=_legend_layout()
        | ({} if legend_right else dict(orientation="h", traceorder="normal", x=0, xanchor="left", y=-0.01, yanchor="top")),
    )
    return layout, ticks, text_size, dict(tickangle=0 if flat else -90, tickfont=dict(size=tick_size)), (x_stride, y_stride)


def _title(text: str, height: int, title_px: float) -> dict:
    """The title block (``title_px`` tall) pinned TITLE_TOP px from the top of
    the figure, in the top margin above the column labels. Its middle is
    given: plotly.js places the first line of a several-line title whose top
    is given above that top."""
    return dict(
        text=text,
        font=dict(size=14),
        x=0,
        xref="paper",
        xanchor="left",
        y=1 - (TITLE_TOP + title_px / 2) / height,
        yref="container",
        yanchor="middle",
    )


def _used_text(snapshot: NodeSnapshot, in_use, limit: int = 16) -> str:
    if in_use is None:
        return "all GPUs"
    if not in_use:
        return "no GPU in use matches"
    names = ", ".join(f"GPU{snapshot.gpus[p].index}" for p in in_use[:limit])
    return f"GPUs in use: {names}" + (f" … ({len(in_use)} GPUs)" if len(in_use) > limit else "")


def topology_figure(
    snapshot: NodeSnapshot,
    highlight: Optional[Iterable[int]] = None,
    ranks=(),
    rows=None,
    cols=None,
    aggregate: Optional[bool] = None,
):
    """Pure: a plotly Figure of the node's GPU x GPU and GPU x NIC links.

    Cells are coloured by link class (NV# > PIX > PXB > PHB > NODE > SYS,
    darkest first: ``LINK_COLOURS``), show the label (NVLink count included)
    and a P2P status that is not OK ("✗" in the text, or a ✗ mark over the
    cell where cells carry no text); the legend lists only the classes drawn;
    hover gives bus ids and NUMA nodes. ``highlight`` lists GPU positions in
    use; by default they come from the rank table (``ranks``) or the
    snapshot's ``CUDA_VISIBLE_DEVICES``. GPUs not in use are dimmed.

    ``rows`` / ``cols`` limit the view to ``(start, stop)`` GPU positions
    (a zoomed block). Past DETAIL_CELLS cells (``aggregate=None``), or with
    ``aggregate=True``, the view folds GPUs into at most MAX_BLOCKS blocks of
    consecutive GPUs: each block pair is coloured by its most common link
    class, and its hover counts every class and names the worst. The
    figure's ``layout.meta`` says which (``mode``: "cells" or "blocks") and
    the GPU positions of each block, for a click handler to zoom in."""
    n = len(snapshot.gpus)
    in_use = sorted(set(highlight)) if highlight is not None else gpus_in_use(snapshot, ranks)
    if aggregate is None:
        aggregate = topology_mode(snapshot, rows, cols) == "blocks"
    if aggregate:
        return _block_figure(snapshot, in_use, _span(rows, n), _span(cols, n))
    return _cell_figure(snapshot, in_use, _span(rows, n), _span(cols, n))


def _matrix_shapes(dim_rows: list[int], dim_cols: list[int], width: int, height: int, nic_column: Optional[int]) -> list[dict]:
    """The shapes over a ``height`` x ``width`` link matrix: white over the
    rows and columns ``dim_rows``/``dim_cols`` (what the job does not use, so
    the GPUs in use stand out), and a black line before column
    ``nic_column``, where the NIC columns start (None: no NIC column)."""
    veil = dict(type="rect", xref="x", yref="y", fillcolor="white", opacity=0.6, line_width=0, layer="above")
    shapes = [dict(veil, x0=-0.5, x1=width - 0.5, y0=y - 0.5, y1=y + 0.5) for y in dim_rows]
    shapes += [dict(veil, x0=x - 0.5, x1=x + 0.5, y0=-0.5, y1=height - 0.5) for x in dim_cols]
    if nic_column is not None:
        shapes.append(
            dict(
                type="line",
                xref="x",
                yref="y",
                x0=nic_column - 0.5,
                x1=nic_column - 0.5,
                y0=-0.5,
                y1=height - 0.5,
                line=dict(color="black", width=2),
            )
        )
    return shapes


def _cell_figure(snapshot: NodeSnapshot, in_use, rows: tuple[int, int], cols: tuple[int, int]):
    import plotly.graph_objects as go

    n = len(snapshot.gpus)
    (r0, r1), (c0, c1) = rows, cols
    whole = (r0, r1) == (0, n) and (c0, c1) == (0, n)
    nic_names = snapshot.links.nic_names
    columns, labels = topology_matrix(snapshot, rows, cols)
    ncols_gpu = c1 - c0
    in_use_set = set(range(n)) if in_use is None else set(in_use)

    show_text = len(columns) <= TEXT_LIMIT
    # big matrices: a shorter hover (the colour bar names each class) keeps the JSON small
    needed = set(range(r0, r1)) | set(range(c0, c1))
    row_desc = {
        p: gpu_hover(snapshot, p)
        if show_text
        else f"<b>GPU{snapshot.gpus[p].index}</b> {bus_text(snapshot.gpus[p].pci_bus_id)} · "
        f"{numa_text(snapshot.gpus[p].numa_node)}"
        for p in needed
    }
    places = _nic_places(snapshot)
    nic_desc = [_nic_hover(snapshot, nic_names[k], k, places) for k in range(len(nic_names))]
    z, text, hover = [], [], []
    bad_p2p: list = []
    for i in range(r0, r1):
        zr, tr, hr = [], [], []
        for c, label in enumerate(labels[i - r0]):
            cls = link_class(label)
            zr.append(LINK_ORDER.index(cls))
            cell = esc(label) if cls != "X" else "·"
            extra = ""
            j = c0 + c if c < ncols_gpu else None
            if j is not None and j != i:
                statuses = _p2p_status(snapshot, i, j)
                primary = _primary_p2p(statuses)
                if primary and primary[1].strip().upper() not in ("OK", "X"):
                    cell += f"<br>✗{esc(primary[1].strip())}"
                    bad_p2p.append((columns[c], f"GPU{snapshot.gpus[i].index}"))
                if statuses:
                    extra = "<br>P2P " + ", ".join(f"{esc(k)} {esc(v)}" for k, v in statuses.items())
                other = row_desc[j]
            elif j is None:
                other = nic_desc[c - ncols_gpu]
            else:
                other = "itself"
            tr.append(cell)
            meaning = f": {esc(LINK_MEANING[cls])}" if show_text else ""
            hr.append(f"{row_desc[i]}<br>↔ {other}<br><b>{esc(label)}</b>{meaning}{extra}")
        z.append(zr)
        text.append(tr)
        hover.append(hr)

    k = len(LINK_ORDER)
    row_names = [f"GPU{snapshot.gpus[p].index}" for p in range(r0, r1)]
    heat = go.Heatmap(
        z=z,
        x=columns,
        y=row_names,
        zmin=-0.5,
        zmax=k - 0.5,
        colorscale=_scale(),
        text=text,
        texttemplate="%{text}" if show_text else None,
        hovertext=hover,
        hovertemplate="%{hovertext}<extra></extra>",
        xgap=1,
        ygap=1,
        name="links",
        showscale=False,
    )
    fig = go.Figure([heat] + _keys(z, bad_p2p, marked=not show_text))

    def tick(p: int) -> str:
        label = f"GPU{snapshot.gpus[p].index}"
        return f"<b>{label} ●</b>" if p in in_use_set and in_use is not None else label

    row_ticks = [tick(p) for p in range(r0, r1)]
    col_lines = [[tick(p)] for p in range(c0, c1)] + [
        [c] + ([esc(shorten(nic_names[k2], 10))] if nic_names[k2] != c else []) for k2, c in enumerate(columns[ncols_gpu:])
    ]
    shapes = _matrix_shapes(
        [p - r0 for p in range(r0, r1) if p not in in_use_set] if in_use is not None else [],
        [p - c0 for p in range(c0, c1) if p not in in_use_set] if in_use is not None else [],
        len(columns),
        r1 - r0,
        ncols_gpu if nic_names else None,
    )
    where = (
        ""
        if whole
        else (
            f" · zoomed: GPU{_idx(snapshot, r0)}–{_idx(snapshot, r1 - 1)} ↔ "
            + (f"GPU{_idx(snapshot, c0)}–{_idx(snapshot, c1 - 1)}" if c1 > c0 else "NICs")
        )
    )
    title = (
        f"Topology of {esc(shorten(snapshot.hostname, 100))}<br>"
        f"<span style='font-size:12px'>{n} GPUs, {len(nic_names)} NICs{where} · "
        f"{_used_text(snapshot, in_use)}</span>"
    )
    cell_px = 44 if show_text else max(8, min(22, 900 // max(1, len(columns))))
    rows_px = min(940, cell_px * max(1, r1 - r0))
    frame, col_ticks, text_size, xticks, (xs, ys) = frame_layout(
        title, col_lines, row_ticks, rows_px, [t for row in text for t in row] if show_text else None
    )
    fig.data[0].textfont = dict(size=text_size)
    fig.update_layout(
        xaxis=dict(side="top", tickmode="array", tickvals=columns[::xs], ticktext=col_ticks[::xs], showgrid=False, **xticks),
        yaxis=dict(autorange="reversed", tickmode="array", tickvals=row_names[::ys], ticktext=row_ticks[::ys], showgrid=False),
        shapes=shapes,
        plot_bgcolor="white",
        clickmode="event",
        showlegend=True,
        meta=dict(mode="cells", rows=[r0, r1], cols=[c0, c1], nics=len(nic_names)),
        **frame,
    )
    return fig


def _idx(snapshot: NodeSnapshot, p: int):
    return snapshot.gpus[p].index if 0 <= p < len(snapshot.gpus) else "?"


def _blocks(start: int, stop: int, most: int, unit: int) -> list[tuple[int, int]]:
    """[start, stop) cut into at most ``most`` runs whose size is a multiple of ``unit``."""
    count = stop - start
    if count <= 0:
        return []
    size = unit * max(1, -(-count // (unit * most)))
    return [(a, min(a + size, stop)) for a in range(start, stop, size)]


_CLASS_OF: dict = {}


def _classes(counter: Counter) -> Counter:
    """Raw label counts -> link class counts (the self "X" left out)."""
    out: Counter = Counter()
    for label, c in counter.items():
        cls = _CLASS_OF.get(label)
        if cls is None:
            cls = link_class(label if isinstance(label, str) else None)
            if len(_CLASS_OF) < 4096:
                _CLASS_OF[label] = cls
        if cls != "X":
            out[cls] += c
    return out


def block_counts(matrix, rows: tuple[int, int], col_blocks: list[tuple[int, int]], skip_diagonal: bool = True):
    """For each column block, a Counter of link classes over the cells of
    ``matrix`` in rows [r0, r1) x that block, reading only the cells the
    matrix holds (linear in the matrix, never in the square of the GPUs)."""
    r0, r1 = rows
    totals = [Counter() for _ in col_blocks]
    for i in range(r0, min(r1, len(matrix or ()))):
        row = matrix[i]
        try:
            width = len(row)
        except TypeError:
            continue
        for b, (c0, c1) in enumerate(col_blocks):
            if c0 >= width:
                break
            seg = Counter(row[c0 : min(c1, width)])
            if skip_diagonal and c0 <= i < min(c1, width):
                seg[row[i]] -= 1
            totals[b].update(_classes(seg))
    return totals


def _p2p_block_counts(snapshot: NodeSnapshot, rows, col_blocks):
    """(capability, per column block: pairs whose status is neither OK nor X)."""
    statuses = snapshot.links.p2p or {}
    cap = next((c for c in P2P_PRIMARY if c in statuses), next(iter(statuses), None))
    if cap is None:
        return None, [0] * len(col_blocks)
    matrix = statuses[cap] or ()
    r0, r1 = rows
    bad = [0] * len(col_blocks)
    for i in range(r0, min(r1, len(matrix))):
        row = matrix[i]
        for b, (c0, c1) in enumerate(col_blocks):
            if c0 >= len(row):
                break
            for v in row[c0 : min(c1, len(row))]:
                if isinstance(v, str) and v.strip().upper() not in ("OK", "X"):
                    bad[b] += 1
    return cap, bad


def _worst(counts: Counter) -> Optional[str]:
    known = [c for c in LINK_CLASSES if counts.get(c)]
    return known[-1] if known else None


def _common(counts: Counter) -> str:
    known = [(n, -LINK_ORDER.index(c), c) for c, n in counts.items() if c in LINK_CLASSES and n]
    return max(known)[2] if known else "?"


def _block_name(snapshot: NodeSnapshot, a: int, b: int) -> str:
    return f"GPU{_idx(snapshot, a)}" if b - a == 1 else f"GPU{_idx(snapshot, a)}–{_idx(snapshot, b - 1)}"


def _numa_of_block(snapshot: NodeSnapshot, a: int, b: int) -> str:
    nodes = sorted({g.numa_node for g in snapshot.gpus[a:b] if g.numa_node is not None})
    if not nodes:
        return "NUMA node not known"
    return f"NUMA {nodes[0]}" if len(nodes) == 1 else f"NUMA {nodes[0]}–{nodes[-1]}"


def _counts_text(counts: Counter, total: int) -> str:
    known = sum(v for c, v in counts.items() if c in LINK_CLASSES)
    parts = " · ".join(f"{c} {counts[c]}" for c in LINK_CLASSES if counts.get(c))
    return f"{known} of {total} links known" + (f": {parts}" if parts else "")


def _block_figure(snapshot: NodeSnapshot, in_use, rows: tuple[int, int], cols: tuple[int, int]):
    import plotly.graph_objects as go

    n = len(snapshot.gpus)
    nic_names = snapshot.links.nic_names
    row_blocks = _blocks(rows[0], rows[1], MAX_BLOCKS, BOARD)
    col_blocks = _blocks(cols[0], cols[1], MAX_BLOCKS, BOARD)
    nic_blocks = _blocks(0, len(nic_names), NIC_BLOCKS, 1)
    used_per_block: dict[tuple[int, int], int] = {}
    if in_use is not None:
        for blocks in (row_blocks, col_blocks):
            starts = [a for a, _ in blocks]
            for p in in_use:
                at = bisect_right(starts, p) - 1
                if at >= 0 and blocks[at][0] <= p < blocks[at][1]:
                    used_per_block[blocks[at]] = used_per_block.get(blocks[at], 0) + 1

    def name(a: int, b: int) -> str:
        return _block_name(snapshot, a, b)

    x_names = [name(a, b) for a, b in col_blocks]
    x_names += [f"NIC{a}" if b - a == 1 else f"NIC{a}–{b - 1}" for a, b in nic_blocks]
    y_names = [name(a, b) for a, b in row_blocks]
    x_names, y_names = _unique(x_names), _unique(y_names)
    show_text = len(x_names) <= TEXT_LIMIT
    z, text, hover = [], [], []
    bad_p2p: list = []
    for (a, b), yname in zip(row_blocks, y_names):
        gg = block_counts(snapshot.links.gpu_gpu, (a, b), col_blocks)
        gn = block_counts(snapshot.links.gpu_nic, (a, b), nic_blocks, skip_diagonal=False)
        cap, p2p_bad = _p2p_block_counts(snapshot, (a, b), col_blocks)
        head = f"<b>{esc(yname)}</b> ({esc(_numa_of_block(snapshot, a, b))})"
        zr, tr, hr = [], [], []
        for c, counts in enumerate(gg + gn):
            is_gpu = c < len(col_blocks)
            if is_gpu:
                c0, c1 = col_blocks[c]
                overlap = max(0, min(b, c1) - max(a, c0))
                total = (b - a) * (c1 - c0) - overlap
                other = f"<b>{esc(x_names[c])}</b> ({esc(_numa_of_block(snapshot, c0, c1))})"
            else:
                k0, k1 = nic_blocks[c - len(col_blocks)]
                total = (b - a) * (k1 - k0)
                other = f"<b>{esc(x_names[c])}</b> " + esc(shorten(", ".join(nic_names[k0:k1]), 40))
            common, worst = _common(counts), _worst(counts)
            zr.append(LINK_ORDER.index(common))
            cell = esc(common) + (f"<br>▲{esc(worst)}" if worst and worst != common else "")
            tr.append(cell)
            lines = [f"{head} ↔ {other}", _counts_text(counts, total)]
            if worst:
                lines.append(f"most common: <b>{esc(common)}</b> · worst: <b>{esc(worst)}</b>")
            if is_gpu and cap and p2p_bad[c]:
                lines.append(f"P2P {esc(cap)} not OK: {how_many(p2p_bad[c], 'pair')}")
                bad_p2p.append((x_names[c], yname))
            lines.append("<i>click to zoom in</i>")
            hr.append("<br>".join(lines))
        z.append(zr)
        text.append(tr)
        hover.append(hr)

    k = len(LINK_ORDER)
    heat = go.Heatmap(
        z=z,
        x=x_names,
        y=y_names,
        zmin=-0.5,
        zmax=k - 0.5,
        colorscale=_scale(),
        text=text,
        texttemplate="%{text}" if show_text else None,
        textfont=dict(size=9),
        hovertext=hover,
        hovertemplate="%{hovertext}<extra></extra>",
        xgap=1,
        ygap=1,
        name="link blocks",
        showscale=False,
    )
    fig = go.Figure([heat] + _keys(z, bad_p2p, marked=True))

    def tick(block, label: str) -> str:
        used = used_per_block.get(block, 0)
        if in_use is None or not used:
            return esc(label)
        return f"<b>{esc(label)} ●{used}</b>"

    row_ticks = [tick(bl, nm) for bl, nm in zip(row_blocks, y_names)]
    col_lines = [[tick(bl, nm)] for bl, nm in zip(col_blocks, x_names)] + [[esc(nm)] for nm in x_names[len(col_blocks) :]]
    shapes = _matrix_shapes(
        [y for y, bl in enumerate(row_blocks) if not used_per_block.get(bl)] if in_use is not None else [],
        [x for x, bl in enumerate(col_blocks) if not used_per_block.get(bl)] if in_use is not None else [],
        len(x_names),
        len(y_names),
        len(col_blocks) if nic_blocks else None,
    )
    whole = rows == (0, n) and cols == (0, n)
    size = row_blocks[0][1] - row_blocks[0][0] if row_blocks else 0
    where = "" if whole else (f" · zoomed: {esc(name(*rows))} ↔ " + (esc(name(*cols)) if cols[1] > cols[0] else "NICs"))
    title = (
        f"Topology of {esc(shorten(snapshot.hostname, 100))}<br>"
        f"<span style='font-size:12px'>{n} GPUs, {len(nic_names)} NICs{where} · {_used_text(snapshot, in_use)}</span><br>"
        f"<span style='font-size:12px'>blocks of {size} GPUs, coloured by their most common link class (▲ the worst); "
        f"click a block to zoom in</span>"
    )
    cell_px = 44 if show_text else max(12, min(22, 900 // max(1, len(x_names))))
    rows_px = min(920, cell_px * max(1, len(y_names)))
    frame, col_ticks, text_size, xticks, (xs, ys) = frame_layout(
        title, col_lines, row_ticks, rows_px, [t for row in text for t in row] if show_text else None
    )
    fig.data[0].textfont = dict(size=min(9, text_size))
    fig.update_layout(
        xaxis=dict(side="top", tickmode="array", tickvals=x_names[::xs], ticktext=col_ticks[::xs], showgrid=False, **xticks),
        yaxis=dict(autorange="reversed", tickmode="array", tickvals=y_names[::ys], ticktext=row_ticks[::ys], showgrid=False),
        shapes=shapes,
        plot_bgcolor="white",
        clickmode="event",
        showlegend=True,
        **frame,
        meta=dict(
            mode="blocks",
            rows=list(rows),
            cols=list(cols),
            nics=len(nic_names),
            row_blocks=[list(bl) for bl in row_blocks],
            col_blocks=[list(bl) for bl in col_blocks],
            nic_blocks=[list(bl) for bl in nic_blocks],
        ),
    )
    return fig


def _unique(names: list[str]) -> list[str]:
    seen: Counter = Counter()
    out = []
    for nm in names:
        seen[nm] += 1
        out.append(nm if seen[nm] == 1 else f"{nm} ({seen[nm]})")
    return out


def block_details(
    snapshot: NodeSnapshot,
    rows: tuple[int, int],
    cols: Optional[tuple[int, int]] = None,
    nics: Optional[tuple[int, int]] = None,
    examples: int = 6,
) -> str:
    """Escaped HTML about one block of the aggregated view: its GPUs, the
    count of each link class and a few pairs of the worst class. ``cols``
    is a GPU block, ``nics`` a NIC block (one of them)."""
    a, b = rows
    if nics is not None:
        counts = block_counts(snapshot.links.gpu_nic, rows, [nics], skip_diagonal=False)[0]
        total = (b - a) * (nics[1] - nics[0])
        other = ", ".join(snapshot.links.nic_names[nics[0] : nics[1]])
        cell = _nic_cell
        others = range(nics[0], nics[1])
        head = f"<b>{esc(_block_name(snapshot, a, b))} ↔ NICs {esc(shorten(other, 80))}</b>"
    else:
        c0, c1 = cols if cols is not None else rows
        counts = block_counts(snapshot.links.gpu_gpu, rows, [(c0, c1)])[0]
        total = (b - a) * (c1 - c0) - max(0, min(b, c1) - max(a, c0))
        cell = _cell
        others = range(c0, c1)
        head = (
            f"<b>{esc(_block_name(snapshot, a, b))} ({esc(_numa_of_block(snapshot, a, b))}) ↔ "
            f"{esc(_block_name(snapshot, c0, c1))} ({esc(_numa_of_block(snapshot, c0, c1))})</b>"
        )
    parts = [head, esc(_counts_text(counts, total))]
    worst = _worst(counts)
    if worst:
        found = []
        rows_have = len(snapshot.links.gpu_gpu if nics is None else snapshot.links.gpu_nic or ())
        for i in range(a, min(b, rows_have)):
            for j in others:
                if (nics is None and i == j) or link_class(cell(snapshot, i, j)) != worst:
                    continue
                right = f"GPU{_idx(snapshot, j)}" if nics is None else esc(snapshot.links.nic_names[j])
                found.append(f"GPU{_idx(snapshot, i)} ↔ {right}: <code>{esc(cell(snapshot, i, j))}</code>")
                if len(found) >= examples:
                    break
            if len(found) >= examples:
                break
        parts.append(f"worst class <b>{esc(worst)}</b> = {esc(LINK_MEANING[worst])}, e.g. " + "; ".join(found))
    parts.append(
        "<small>the view now shows these GPUs one by one where they fit; check by hand: <code>nvidia-smi topo -m</code></small>"
    )
    return "<br>".join(parts)


def _nic_hover(snapshot: NodeSnapshot, name: str, k: int, places: Optional[dict] = None) -> str:
    """``places``: NIC -> its NicNuma (model.derive.nic_numa), read once per figure."""
    nic = nic_info(snapshot, name)
    text = f"<b>NIC{k}</b> {esc(name)}"
    if nic is not None:
        if places is None:
            places = _nic_places(snapshot)
        text += f" ({nic_traits(nic, places.get(id(nic)))})"
    return text


def _nic_places(snapshot: NodeSnapshot) -> dict:
    return {id(nic): place for nic, place in zip(snapshot.nics, nic_numa(snapshot))}


def topology_details(snapshot: NodeSnapshot, row: int, column: int) -> str:
    """Escaped HTML about one cell (GPU position ``row`` x column index, where
    columns are every GPU then every NIC), read from that cell alone."""
    n = len(snapshot.gpus)
    nic_names = snapshot.links.nic_names
    if not (0 <= row < n and 0 <= column < n + len(nic_names)):
        return "<i>no such cell</i>"
    g = snapshot.gpus[row]
    label = _cell(snapshot, row, column) if column < n else _nic_cell(snapshot, row, column - n)
    left = f"GPU{g.index}"
    right = f"GPU{snapshot.gpus[column].index}" if column < n else f"NIC{column - n}"
    cls = link_class(label)
    parts = [f"<b>{esc(left)} ↔ {esc(right)}</b>: <code>{esc(label)}</code> = {esc(LINK_MEANING[cls])}"]
    if nvlink_count(label):
        parts.append(f"{nvlink_count(label)} NVLinks bonded")
    parts.append(f"{esc(left)}: {esc(g.name or 'model not known')}, {bus_text(g.pci_bus_id)}, {numa_text(g.numa_node)}")
    if column < n:
        o = snapshot.gpus[column]
        parts.append(f"{esc(right)}: {esc(o.name or 'model not known')}, {bus_text(o.pci_bus_id)}, {numa_text(o.numa_node)}")
        statuses = _p2p_status(snapshot, row, column)
        if statuses:
            parts.append("P2P (nvidia-smi topo -p2p): " + ", ".join(f"{esc(k)} {esc(v)}" for k, v in statuses.items()))
    else:
        parts.append(_nic_hover(snapshot, nic_names[column - n], column - n))
    parts.append("<small>check by hand: <code>nvidia-smi topo -m</code></small>")
    return "<br>".join(parts)


# --- the live widget ---------------------------------------------------------------------------


def parse_gpu_list(text: str, snap: NodeSnapshot) -> tuple[Optional[list[int]], list[str]]:
    """The GPU positions a "GPUs in use" entry names (None: empty, all GPUs),
    and the tokens it names that are not GPU indices of ``snap``."""
    tokens = [t.strip() for t in text.replace(" ", ",").split(",") if t.strip()]
    if not tokens:
        return None, []
    by_index = {g.index: p for p, g in enumerate(snap.gpus)}
    known = [t for t in tokens if t.isascii() and t.isdigit() and int(t) in by_index]
    return sorted({by_index[int(t)] for t in known}), [t for t in tokens if t not in known]


class TopologyWidget(OneHostView):
    """The link matrix of one host, live. Its state: ``host`` (a picker sets
    it where the target has several nodes), ``highlight`` (GPU positions in
    use; None: the rank table's or CUDA_VISIBLE_DEVICES'; a text box sets it
    by NVML index) and ``zoom`` (the block a click on a block view zoomed
    into: ``[r0, r1, c0, c1]``, empty for the whole node). A click on a cell
    shows the pair's details."""

    highlight: traitlets.List[int] = traitlets.List(allow_none=True, default_value=None)
    zoom: traitlets.List[int] = traitlets.List()

    def __init__(self, target, snapshot: NodeSnapshot, highlight, figure):
        from .live import LiveFigure

        self.target, self.ranks = target, ranks_of(target)
        self.snapshot, self.first_highlight = snapshot, highlight
        self.switching_host = False
        self.meta = dict(figure.layout.meta or {})
        self.detail = detail_pane()
        self.live = LiveFigure(figure, self._show_cell)
        self.back = w.Button(
            description="whole node",
            tooltip="back to the blocks of the whole node",
            layout=w.Layout(width="110px", display="none"),
        )
        self.back.add_class("ncclnb-topology-back")
        self.back.on_click(lambda _button: setattr(self, "zoom", []))
        self.gpus = w.Text(
            value="",
            description="GPUs in use",
            placeholder="e.g. 0,1 (empty: all)",
            continuous_update=False,
            style={"description_width": "initial"},
        )
        self.gpus.add_class("ncclnb-gpus")
        self.gpus_note = w.HTML("")
        self.gpus_note.add_class("ncclnb-gpus-note")
        controls = [self.gpus, self.back, self.gpus_note]
        picker = self.picker()
        if picker is not None:
            controls.insert(0, picker)
        super().__init__([w.HBox(controls), self.live, self.detail])
        self.add_class("ncclnb-topology")
        self.gpus.value = self._in_use_text()
        self.gpus.observe(self._typed, names="value")

    @traitlets.default("highlight")
    def _first_highlight(self):
        return self.first_highlight

    def _in_use_text(self) -> str:
        used = self.highlight if self.highlight is not None else gpus_in_use(self.snapshot, self.ranks)
        return "" if used is None else ",".join(str(self.snapshot.gpus[p].index) for p in used)

    def _show_in_use(self) -> None:
        self.gpus.unobserve(self._typed, names="value")
        self.gpus.value = self._in_use_text()
        self.gpus.observe(self._typed, names="value")
        self.gpus_note.value = ""

    def _typed(self, change) -> None:
        positions, unknown = parse_gpu_list(change["new"], self.snapshot)
        indices = ", ".join(str(g.index) for g in self.snapshot.gpus)
        self.gpus_note.value = (
            f"<i>ignored {esc(', '.join(unknown))}: not a GPU index of {esc(self.snapshot.hostname)} ({esc(indices)})</i>"
            if unknown
            else ""
        )
        self.set_trait("highlight", positions)

    @traitlets.observe("host", "highlight", "zoom")
    def _redraw(self, change) -> None:
        if self.switching_host:
            return  # the host's change draws once, after its resets
        if change["name"] == "host":
            self.snapshot = snapshot_of(self.target, change["new"])
            self.switching_host = True
            try:  # another host's GPU set and zoom do not apply here
                self.set_trait("highlight", None)
                self.zoom = []
            finally:
                self.switching_host = False
            self._show_in_use()
        rows, cols = (tuple(self.zoom[:2]), tuple(self.zoom[2:])) if self.zoom else (None, None)
        figure = topology_figure(self.snapshot, self.highlight, self.ranks, rows=rows, cols=cols)
        self.meta = dict(figure.layout.meta or {})
        self.live.replace(figure)
        self.back.layout.display = "none" if not self.zoom else None
        if change["name"] != "zoom" or not self.zoom:
            self.detail.value = DETAIL_HINT

    def _show_cell(self, trace, points, _state) -> None:
        hit = clicked(points)
        if hit is None:
            return
        x, y, _ = hit
        snap, meta = self.snapshot, self.meta
        xs, ys = list(trace.x), list(trace.y)
        if x not in xs or y not in ys:
            return
        xi, yi = xs.index(x), ys.index(y)
        if meta.get("mode") == "blocks":
            rows = tuple(meta["row_blocks"][yi])
            col_blocks = meta["col_blocks"]
            if xi < len(col_blocks):
                cols = tuple(col_blocks[xi])
                self.detail.value = block_details(snap, rows, cols=cols)
            else:
                cols = (0, 0)  # the NIC columns only
                self.detail.value = block_details(snap, rows, nics=tuple(meta["nic_blocks"][xi - len(col_blocks)]))
            self.zoom = [*rows, *cols]
            return
        r0, _ = meta.get("rows", [0, len(snap.gpus)])
        c0, c1 = meta.get("cols", [0, len(snap.gpus)])
        column = c0 + xi if xi < c1 - c0 else len(snap.gpus) + (xi - (c1 - c0))
        self.detail.value = topology_details(snap, r0 + yi, column)


def show_topology(target, host: Optional[str] = None, highlight: Optional[Iterable[int]] = None):
    """GPU x GPU / GPU x NIC link matrix of one host, as a live widget.

    ``target`` is a NodeSnapshot, ClusterReport, bundled machine name or
    path; ``host`` picks a node of a report; ``highlight`` lists GPU
    positions in use (default: rank table, else CUDA_VISIBLE_DEVICES).
    Click a cell for its details; type GPU indices to change the set (an
    entry that is no GPU of the node says so). A node too large to draw
    pair by pair shows blocks of GPUs: click a block to zoom into it (its
    pairs, or smaller blocks), "whole node" to go back."""
    target = resolve(target)
    snap = pick_snapshot(target, host)
    highlight = None if highlight is None else list(highlight)
    fig = topology_figure(snap, highlight, ranks_of(target))
    view = View(
        TopologyWidget(target, snap, highlight, fig),
        fig,
        f"<h4>Topology of {esc(snap.hostname)}</h4>",
        f"ncclnb topology view: {snap.hostname}, {len(snap.gpus)} GPUs",
    )
    return with_text_form(view, "show_topology", target, host=snap.hostname)
