"""Views of dense machines (issue 12): the bundled DGX A100 (8 GPUs, 12 NICs)
and the other 8-GPU machines. Column labels, titles and the NUMA boxes are
checked from the figure's layout (the geometry a browser lays out from it),
NICs against their NUMA node, and the version table's words against the
checks' findings."""

from __future__ import annotations

import dataclasses

import pytest

import ncclnb
from ncclnb.checks import check
from ncclnb.model import ClusterReport
from ncclnb.recorded import names
from ncclnb.views.versions import ROW_LIMIT, version_table

REPORTS = [n for n in names() if isinstance(ncclnb.load(n), ClusterReport)]


# --- the version table ----------------------------------------------------------


def _differing(report) -> set[str]:
    """What ``versions_differ`` and ``nccl_env_differs`` name: their findings' titles."""
    return {f.title for f in check(report, only=["versions_differ", "nccl_env_differs"])}


@pytest.mark.parametrize("name", REPORTS)
def test_version_caption_agrees_with_the_checks(name):
    report = ncclnb.load(name)
    caption = version_table(report).caption
    assert "all the same" not in caption
    if _differing(report):
        assert "none differs" not in caption and "differ" in caption
    else:
        assert " differ (" not in caption


def test_version_caption_names_no_sameness_where_no_node_reports_a_version():
    report = ncclnb.load("two-node-h100")  # recorded without any version
    assert version_table(report).data.empty
    caption = version_table(report).caption
    assert "no node reports a version" in caption and "none differs" not in caption


def test_a_node_off_the_others_is_drawn_even_when_its_configuration_is_the_rarest():
    base = ncclnb.load("survey-demo").snapshots[0]
    snaps = []
    for i in range(ROW_LIMIT + 12):  # each node its own python: one configuration per node, past the rows drawn
        odd = i == ROW_LIMIT + 11  # last seen, so the least common in the table's order
        versions = dataclasses.replace(base.versions, python=f"3.11.{i}", torch="2.1.2" if odd else base.versions.torch)
        snaps.append(dataclasses.replace(base, host=dataclasses.replace(base.host, hostname=f"n{i:03d}"), versions=versions))
    report = ClusterReport(snapshots=tuple(snaps))
    assert any("torch" in t for t in _differing(report))
    styler = version_table(report)
    caption = styler.caption
    assert "1 component differs" in caption and "all the same" not in caption and "none differs" not in caption
    assert "12 more configurations (12 nodes) not shown" in caption
    assert len(styler.data) == ROW_LIMIT
    odd_row = [k for k, label in enumerate(styler.data.index) if f"n{ROW_LIMIT + 11:03d}" in label]
    assert odd_row, "the node whose torch differs is not drawn"
    styler._compute()
    col = list(styler.data.columns).index("torch")
    marked = {(r, c) for (r, c), props in styler.ctx.items() if props}
    assert (odd_row[0], col) in marked


# --- the NUMA view ----------------------------------------------------------------

DENSE = ["dgx-a100", "aws-p4d", "hgx-h100", "aws-p5", "survey-demo", "seed002-version-mismatch", "two-node-h100"]
GLYPH = 0.6  # a glyph's width / font size, an average for the sans-serif fonts plotly and the SVG use
NARROW = 700  # px: a notebook beside its side bar, the narrowest width the views are laid out for


def _node(name):
    value = ncclnb.load(name)
    return (value.snapshots[0], value.ranks) if isinstance(value, ClusterReport) else (value, ())


def _plain_lines(text: str) -> list[str]:
    import re

    return [re.sub(r"<[^>]+>", "", line) for line in text.split("<br>")]


def _numa_geometry(fig):
    """(px of one x unit, px of one y unit) in a figure NARROW px wide, from its layout."""
    lay = fig.layout
    x0, x1 = lay.xaxis.range
    y0, y1 = lay.yaxis.range
    legend = 50 if lay.showlegend else 0
    return (
        (NARROW - lay.margin.l - lay.margin.r) / (x1 - x0),
        (lay.height - lay.margin.t - lay.margin.b - legend) / (y1 - y0),
    )


@pytest.mark.parametrize("name", DENSE + ["l40s-2socket", "dgx1-pcie-mp", "rtx4090-8x-sys"])
def test_numa_text_stays_inside_its_box(name):
    from ncclnb.views.numa import numa_figure

    snap, ranks = _node(name)
    fig = numa_figure(snap, ranks)
    x_px, y_px = _numa_geometry(fig)
    boxes = [s for s in fig.layout.shapes if s.type == "rect"]
    box_px = (boxes[0].x1 - boxes[0].x0) * x_px
    gap_px = (boxes[1].x0 - boxes[0].x1) * x_px if len(boxes) > 1 else 0
    heads = [a for a in fig.layout.annotations if a.yanchor == "top"]
    assert len(heads) == len(boxes)
    gpus = next(t for t in fig.data if t.name == "GPUs")
    for head in heads:
        lines = _plain_lines(head.text)
        widest = max(len(line) for line in lines) * head.font.size * GLYPH
        assert widest <= box_px + gap_px, f"{name}: header line {max(lines, key=len)!r} runs out of its box"
        # the header ends above the GPUs (22 px squares) of its box
        below = head.y - max(gpus.y) if len(gpus.y) else 1.0
        assert below * y_px >= len(lines) * head.font.size * 1.3 + 11, f"{name}: header runs into the GPUs"
    nics = next(t for t in fig.data if t.name == "NICs")
    by_row: dict = {}
    for x, y, label in zip(nics.x, nics.y, nics.text or ()):
        by_row.setdefault(y, []).append((x, label))
    for row in by_row.values():
        row.sort()
        for (xa, la), (xb, lb) in zip(row, row[1:]):
            need = (len(la) + len(lb)) / 2 * 9 * GLYPH
            assert (xb - xa) * x_px >= need, f"{name}: NIC labels {la!r} and {lb!r} overlap"


def test_dgx_a100_nics_sit_on_the_numa_node_of_their_nearest_gpus():
    from ncclnb.model.derive import link_class, nic_numa
    from ncclnb.views.numa import numa_figure, numa_summary

    snap = ncclnb.load("dgx-a100")
    assert all(n.numa_node is None for n in snap.nics)  # a pasted topo -m has no NIC NUMA node
    fig = numa_figure(snap)
    gpus = next(t for t in fig.data if t.name == "GPUs")
    nics = next(t for t in fig.data if t.name == "NICs")
    column_of_gpu = {int(text): round(x) for x, text in zip(gpus.x, gpus.text)}
    column_of_nic = {text: round(x) for x, text in zip(nics.x, nics.text)}
    placed = 0
    for k, name in enumerate(snap.links.nic_names):
        near = [i for i, row in enumerate(snap.links.gpu_nic) if link_class(row[k]) in ("PIX", "PXB", "PHB", "NODE")]
        if near:  # under the box of the GPUs it hangs off
            assert {column_of_gpu[snap.gpus[i].index] for i in near} == {column_of_nic[name]}
            placed += 1
    assert placed == 8
    places = nic_numa(snap)
    unknown = [nic.name for nic, place in zip(snap.nics, places) if place.node is None]
    assert 0 < len(unknown) < len(snap.nics)
    heads = {round(a.x): a.text for a in fig.layout.annotations if a.yanchor == "top"}
    unknown_head = " ".join(_plain_lines(heads[column_of_nic[unknown[0]]]))
    assert "NUMA unknown" in unknown_head and "the snapshot has no NUMA node for these NICs" in unknown_head
    assert {column_of_nic[n] for n in unknown} == {column_of_nic[unknown[0]]}
    # the hover says how each NIC's node is known, or why it is not
    hover = dict(zip(nics.text, nics.hovertext))
    assert "PXB to GPU" in hover[snap.nics[0].name] and "SYS to every GPU" in hover[unknown[0]]
    table = numa_summary(snap)
    row = next(r for r in table.split("</tr>") if f">{snap.nics[0].name}<" in r or f">{snap.nics[0].name}," in r)
    assert row.startswith(f"<tr><td><b>{places[0].node}</b>")


def test_nic_numa_read_off_the_links_matches_what_sysfs_recorded():
    """survey-demo's NICs carry their sysfs numa_node: read off the topo -m
    links with it taken away, each NIC gets the same node (or none)."""
    from ncclnb.model.derive import nic_numa

    for snap in ncclnb.load("survey-demo").snapshots:
        recorded = [n.numa_node for n in snap.nics]
        assert any(v is not None for v in recorded)
        bare = dataclasses.replace(snap, nics=tuple(dataclasses.replace(n, numa_node=None) for n in snap.nics))
        derived = nic_numa(bare)
        assert [p.node for p in derived] == recorded
        assert {p.source for p in derived if p.node is not None} == {"topo -m"}
        assert [p.source for p in nic_numa(snap) if p.node is not None] == ["recorded"] * sum(v is not None for v in recorded)


# --- the topology view ------------------------------------------------------------

TOPOLOGY = DENSE + ["dgx1-pcie-mp", "l40s-2socket", "seed001-10x-pcie", "rtx4090-8x-sys"]
LEGEND_BESIDE = 180  # px a legend beside the matrix takes ("link, fastest first", "NV# (NVLink)")


def _widest(label: str, size: float) -> float:
    return max(len(line) for line in _plain_lines(label)) * size * GLYPH


def _topology_frame(fig):
    """(px of one column, px the column labels need above the matrix, px of
    the title block's bottom from the figure's top) in a figure NARROW px
    wide, from its layout: what a browser lays out from it."""
    lay = fig.layout
    ticks = list(lay.xaxis.ticktext)
    beside = lay.legend.orientation != "h"
    column = (NARROW - lay.margin.l - lay.margin.r - (LEGEND_BESIDE if beside else 0)) / len(fig.data[0].x)
    size = lay.xaxis.tickfont.size or 12
    if lay.xaxis.tickangle in (-90, 90):
        need = max(_widest(t, size) for t in ticks)
    else:
        need = max(len(_plain_lines(t)) for t in ticks) * size * 1.2
    title_lines = len(_plain_lines(lay.title.text))
    title_px = 14 * 1.2 + 12 * 1.2 * (title_lines - 1)
    assert lay.title.yref == "container"
    y_px = (1 - lay.title.y) * lay.height
    bottom = {"top": y_px + title_px, "middle": y_px + title_px / 2, "bottom": y_px}[lay.title.yanchor]
    return column, need, bottom


@pytest.mark.parametrize("name", TOPOLOGY)
def test_topology_labels_overlap_neither_each_other_nor_the_title(name):
    from ncclnb.views.topology import topology_figure

    snap, ranks = _node(name)
    fig = topology_figure(snap, ranks=ranks)
    lay = fig.layout
    column, need, title_bottom = _topology_frame(fig)
    size = lay.xaxis.tickfont.size or 12
    if lay.xaxis.tickangle in (-90, 90):
        # standing labels: one line each, no wider than a column
        assert all("<br>" not in t for t in lay.xaxis.ticktext)
        assert size * 1.2 <= column, f"{name}: standing labels of {size} px in {column:.0f} px columns"
    else:
        assert lay.xaxis.tickangle == 0, f"{name}: the label angle is left to plotly, which turns them into the title"
        for t in lay.xaxis.ticktext:
            assert _widest(t, size) <= column, f"{name}: flat label {t!r} wider than its {column:.0f} px column"
    # the title and its subtitle end above the labels, which end at the top margin
    assert title_bottom + need <= lay.margin.t, f"{name}: labels ({need:.0f} px) run into the title (ends {title_bottom:.0f} px)"
    assert lay.xaxis.side == "top" and title_bottom > 0


@pytest.mark.parametrize("name", TOPOLOGY)
def test_topology_uses_the_width_it_has(name):
    """No width of its own (the figure takes its container's), the matrix
    gets most of it, and the cell text fits its cells."""
    from ncclnb.views.topology import topology_figure

    snap, ranks = _node(name)
    fig = topology_figure(snap, ranks=ranks)
    lay = fig.layout
    assert lay.width is None and lay.autosize is not False
    column, _, _ = _topology_frame(fig)
    ncols = len(fig.data[0].x)
    assert column * ncols >= 0.6 * NARROW
    heat = fig.data[0]
    if heat.texttemplate:
        widest = max(_widest(t, heat.textfont.size) for row in heat.text for t in row)
        assert widest <= column, f"{name}: cell text {widest:.0f} px in {column:.0f} px columns"


def test_dgx_a100_topology_stands_its_nic_labels_and_moves_its_legend_under():
    from ncclnb.views.topology import topology_figure

    snap = ncclnb.load("dgx-a100")
    lay = topology_figure(snap).layout
    assert lay.xaxis.tickangle == -90 and lay.legend.orientation == "h"
    nic_ticks = lay.xaxis.ticktext[len(snap.gpus) :]
    assert [t.split(" ")[0] for t in nic_ticks] == [f"NIC{k}" for k in range(len(snap.links.nic_names))]
    assert all(name in t for name, t in zip(snap.links.nic_names, nic_ticks))


def test_static_copy_draws_the_labels_as_the_figure_stands_them():
    """The static SVG turns x labels by the figure's tickangle (not its own
    -45°) and keeps the title above them."""
    import xml.etree.ElementTree as ET

    from ncclnb.views.static import figure_svg
    from ncclnb.views.topology import topology_figure

    fig = topology_figure(ncclnb.load("dgx-a100"))
    root = ET.fromstring(figure_svg(fig))
    ns = "{http://www.w3.org/2000/svg}"
    turned = [t for t in root.iter(ns + "text") if "rotate(-90" in (t.get("transform") or "")]
    assert len(turned) == len(fig.layout.xaxis.ticktext)
    assert not [t for t in root.iter(ns + "text") if "rotate(-45" in (t.get("transform") or "")]
    heat = [g for g in root.iter(ns + "g") if g.get("class") == "heatmap"][0]
    top = min(float(r.get("y")) for r in heat.iter(ns + "rect"))
    # a standing label starts at its pivot ("rotate(-90 x y)") and rises from it
    lowest_label = max(float(t.get("transform").rstrip(")").split()[-1]) for t in turned)
    longest = max(len("".join(t.itertext())) for t in turned) * 12 * GLYPH
    assert lowest_label <= top and lowest_label - longest >= 14 * 1.2 + 12 * 1.2  # above the labels: the title block
    xs = sorted(float(r.get("x")) + float(r.get("width")) for r in heat.iter(ns + "rect"))
    assert xs[-1] - min(float(r.get("x")) for r in heat.iter(ns + "rect")) >= 0.7 * float(root.get("width"))


@pytest.mark.parametrize("gpus", [72, 512])
def test_large_machines_keep_their_labels_clear_of_the_title(gpus):
    """An NVL72 domain drawn cell by cell and 512 GPUs drawn in blocks: the
    same frame, sized from their labels."""
    from large_inputs import huge_node  # bench/ is on the path: conftest

    from ncclnb.views.topology import topology_figure

    fig = topology_figure(huge_node(gpus, matrix=gpus))
    lay = fig.layout
    column, need, title_bottom = _topology_frame(fig)
    assert title_bottom + need <= lay.margin.t
    if lay.xaxis.tickangle in (-90, 90):  # labelled columns (every stride-th) at least a line apart
        stride = -(-len(fig.data[0].x) // len(lay.xaxis.tickvals))
        assert (lay.xaxis.tickfont.size or 12) * 1.1 <= column * stride
    row_px = (lay.height - lay.margin.t - lay.margin.b) / len(fig.data[0].y)
    assert 12 * 1.1 <= row_px * -(-len(fig.data[0].y) // len(lay.yaxis.tickvals))


def test_topology_hover_gives_a_nic_the_numa_node_the_numa_view_gives_it():
    from ncclnb.model.derive import nic_numa
    from ncclnb.views.topology import topology_details, topology_figure

    snap = ncclnb.load("dgx-a100")
    fig = topology_figure(snap)
    n = len(snap.gpus)
    for k, place in enumerate(nic_numa(snap)):
        hover = fig.data[0].hovertext[0][n + k]
        if place.node is None:
            assert "NUMA node not known" in hover
        else:
            assert f"NUMA {place.node} read off nvidia-smi topo -m" in hover
            assert f"NUMA {place.node} read off" in topology_details(snap, 0, n + k)


@pytest.mark.parametrize("name", ["hgx-h100", "aws-p5", "dgx-a100"])
def test_numa_nic_band_says_when_the_snapshot_lists_no_nic(name):
    from ncclnb.views.numa import numa_figure

    snap, ranks = _node(name)
    fig = numa_figure(snap, ranks)
    notes = [a for a in fig.layout.annotations if "lists no NIC" in " ".join(_plain_lines(a.text))]
    boxes = [s for s in fig.layout.shapes if s.type == "rect"]
    assert len(notes) == (0 if snap.nics else len(boxes))
    for note, box in zip(notes, boxes):  # each inside its box
        assert box.x0 < note.x < box.x1


@pytest.mark.parametrize("keep", ["nothing", "nics only", "gpus only"])
def test_a_node_without_gpus_or_nics_draws_every_view(keep):
    """A CPU-only machine, as the survey records a VM (0 GPUs): the topology
    frame is sized from no labels at all, and the figures, their static
    copies and the dashboard are still made."""
    from ncclnb.views import dashboard, numa_figure, topology_figure
    from ncclnb.views.static import figure_svg

    snap = ncclnb.load("l40s-2socket")
    snap = dataclasses.replace(snap, gpus=snap.gpus if keep == "gpus only" else (), nics=snap.nics if keep == "nics only" else ())
    for fig in (topology_figure(snap), numa_figure(snap)):
        assert "<svg" in figure_svg(fig)
    assert len(dashboard(snap).parts) >= 3
