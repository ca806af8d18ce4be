"""The static copy of every figure: script-free inline SVG drawn by
ncclnb.views.static from the figure alone, so a saved notebook shows its views
on GitHub and in nbconvert's HTML offline, small and inert.

Cells and colours are checked against the figure's z and the views' own
palettes, not against the renderer's code; sizes are measured, nothing is
timed."""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import xml.etree.ElementTree as ET

import pytest

import ncclnb
from ncclnb.views import numa_figure, rank_map_figure, topology_figure
from ncclnb.views._common import LINK_COLOURS, LINK_NAMES, LINK_ORDER
from ncclnb.views.ranks import KIND_COLOURS, KINDS
from ncclnb.views.static import MAX_CELLS, TITLE_BUDGET, figure_svg, plain
from viewdata import HOSTILE, a10g_report, l40s_node, l40s_report

go = pytest.importorskip("plotly.graph_objects")

NS = "{http://www.w3.org/2000/svg}"
MACHINES = ("hgx-h100", "dgx-a100", "l40s-2socket", "seed001-10x-pcie", "rtx2080ti-2x", "a30-nvlink-pairs")
REPORTS = ("seed000-2node-a10g", "seed002-version-mismatch", "two-node-h100")


def parse(svg: str) -> ET.Element:
    root = ET.fromstring(svg)  # well-formed XML, or this raises
    assert root.tag == NS + "svg"
    return root


def group(root: ET.Element, cls: str) -> list[ET.Element]:
    return [g for g in root.iter(NS + "g") if g.get("class") == cls]


def heat_rects(root: ET.Element) -> list[ET.Element]:
    (g,) = group(root, "heatmap")
    return g.findall(NS + "rect")


def assert_inert(root: ET.Element):
    """Nothing that runs: no script, no foreign element, no event handler, no link."""
    for el in root.iter():
        assert el.tag.startswith(NS), el.tag
        assert el.tag[len(NS) :] not in ("script", "foreignObject", "image", "a", "use", "style"), el.tag
        for name in el.attrib:
            assert not name.lower().startswith("on") and "href" not in name, name


def expected_fills(z, palette, order) -> list[str]:
    return [palette[order[v]].lower() for row in z for v in row if v is not None]


# --- every builder on bundled machines ---------------------------------------------------


@pytest.mark.parametrize("name", MACHINES)
def test_topology_of_bundled_machines_is_one_rect_per_cell_in_the_link_colour(name):
    fig = topology_figure(ncclnb.load(name))
    heat = fig.data[0]
    root = parse(figure_svg(fig))
    assert_inert(root)
    rects = heat_rects(root)
    assert [r.get("fill") for r in rects] == expected_fills(heat.z, LINK_COLOURS, LINK_ORDER)
    # each cell's hover survives as a tooltip, and its label as text
    titles = [r.find(NS + "title") for r in rects]
    assert all(t is not None and t.text for t in titles)
    assert plain(heat.hovertext[0][-1]) == titles[len(heat.z[0]) - 1].text
    if heat.texttemplate and heat.z and heat.z[0]:
        labels = {"".join(t.itertext()) for t in group(root, "heatmap")[0].iter(NS + "text")}
        assert {plain(c).replace("\n", "") for row in heat.text for c in row} <= labels
    # the link classes drawn, and only those, are listed beside it in their colours
    drawn = [cls for k, cls in enumerate(LINK_ORDER) if any(k in row for row in heat.z)]
    (legend,) = group(root, "legend")
    text = "".join(legend.itertext())
    assert all(LINK_NAMES.get(cls, cls) in text for cls in drawn)
    assert not any(LINK_NAMES.get(cls, cls) in text for cls in LINK_ORDER if cls not in drawn)
    swatches = [r.get("fill") for r in legend.iter(NS + "rect")]
    assert swatches == [LINK_COLOURS[cls].lower() for cls in drawn]
    assert not group(root, "colorbar")


@pytest.mark.parametrize("name", REPORTS)
def test_rank_map_and_numa_of_bundled_reports(name):
    report = ncclnb.load(name)
    fig = rank_map_figure(report)
    heat = fig.data[0]
    root = parse(figure_svg(fig))
    assert_inert(root)
    assert [r.get("fill") for r in heat_rects(root)] == expected_fills(heat.z, KIND_COLOURS, KINDS)
    text = "".join(root.itertext())
    for key in fig.data[1:]:  # the legend of the kinds present
        assert key.name in text
    snap = report.snapshots[0]
    nfig = numa_figure(snap, report.ranks)
    nroot = parse(figure_svg(nfig))
    assert_inert(nroot)
    scatters = group(nroot, "scatter")
    gpus = next(t for t in nfig.data if t.name == "GPUs")
    squares = [el for el in scatters[0] if el.tag == NS + "rect"]
    assert len(squares) == len(gpus.x) and all(s.get("fill") == "#2b83ba" for s in squares)
    head = plain(nfig.layout.annotations[0].text).split("\n")[0]  # "NUMA k", a column's header
    assert head.startswith("NUMA") and head in "".join(nroot.itertext())


def test_numa_ranks_keep_their_affinity_colours():
    report = l40s_report()
    fig = numa_figure(report.snapshots[0], report.ranks)
    ranks = next(t for t in fig.data if t.name == "ranks")
    root = parse(figure_svg(fig))
    # each rank keeps its status colour and its status shape (colour is never the only carrier)
    tag = {"circle": "circle", "circle-open": "circle", "square": "rect", "diamond": "polygon", "triangle-up": "polygon"}
    drawn = group(root, "scatter")[list(fig.data).index(ranks)]  # one group per scatter trace, in order
    # an open symbol carries its colour in its outline
    marks = [
        (el.tag[len(NS) :], el.get("fill") if el.get("fill") != "none" else el.get("stroke"))
        for el in drawn
        if el.tag[len(NS) :] in set(tag.values())
    ]
    assert marks == [(tag[s], c.lower()) for s, c in zip(ranks.marker.symbol, ranks.marker.color)]
    assert len(set(ranks.marker.symbol)) == len(set(ranks.marker.color)) > 1
    legend = "".join(group(root, "legend")[0].itertext())
    assert all(f"rank: {st}" in legend for st in ("local", "remote", "unpinned")) and "rank: unknown" not in legend
    # the dashed affinity line and a legend naming it
    assert any(p.get("stroke-dasharray") for p in root.iter(NS + "path"))
    assert "affinity off the GPU" in "".join(group(root, "legend")[0].itertext())


def test_aggregated_topology_and_many_slot_rank_map():
    from large_inputs import huge_node, many_ranks_report  # bench/ is on the path (conftest)

    fig = topology_figure(huge_node(500, matrix=500))
    assert fig.layout.meta["mode"] == "blocks"
    root = parse(figure_svg(fig))
    heat = fig.data[0]
    assert [r.get("fill") for r in heat_rects(root)] == expected_fills(heat.z, LINK_COLOURS, LINK_ORDER)
    fig = rank_map_figure(many_ranks_report(2_000))
    root = parse(figure_svg(fig))
    assert [r.get("fill") for r in heat_rects(root)] == expected_fills(fig.data[0].z, KIND_COLOURS, KINDS)


def test_flight_recorder_alignment_and_pairing_figures():
    """The views of the flight recorder (when this checkout has them): one
    rect a cell, in the view's own colours, its axis titles and legend."""
    import importlib.util
    import json
    from pathlib import Path

    align = pytest.importorskip("ncclnb.views.alignment")
    pair = pytest.importorskip("ncclnb.views.pairing")
    fr_dir = Path(__file__).resolve().parents[1] / "doctor" / "fr"
    if not (fr_dir / "factory.py").exists():
        pytest.skip("no flight-recorder fixtures in this checkout")
    from ncclnb.doctor.flight_recorder import alignment
    from ncclnb.doctor.pairing import pairing_from_dumps

    dumps = [(str(f), json.loads(f.read_text())) for f in sorted((fr_dir / "desync").glob("rank*.json"))]
    fig = align.alignment_figure(alignment(dumps))
    root = parse(figure_svg(fig))
    assert_inert(root)
    assert [r.get("fill") for r in heat_rects(root)] == expected_fills(fig.data[0].z, align.KIND_COLOURS, align.KINDS)
    spec = importlib.util.spec_from_file_location("ncclnb_test_fr_factory_static", fr_dir / "factory.py")
    factory = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = factory
    spec.loader.exec_module(factory)
    ts = factory.world(4)
    factory.all_to_all_p2p(ts)
    ts[1].recv(2, ((256,),), state="started")
    fig = pair.pairing_figure(pairing_from_dumps(factory.dumps(ts)))
    root = parse(figure_svg(fig))
    assert_inert(root)
    assert [r.get("fill") for r in heat_rects(root)] == expected_fills(fig.data[0].z, pair.KIND_COLOURS, pair.KINDS)
    text = "".join(root.itertext())
    assert all(t.name in text for t in fig.data[1:])


# --- escaping ----------------------------------------------------------------------------


def test_markup_in_hostnames_labels_and_hover_is_text():
    snap = l40s_node(hostname=HOSTILE)
    snap = dataclasses.replace(snap, links=dataclasses.replace(snap.links, nic_names=("<b>nic</b>", 'x"y')))
    for fig in (topology_figure(snap), numa_figure(snap)):
        svg = figure_svg(fig)
        assert "<script" not in svg and "<img" not in svg
        root = parse(svg)
        assert_inert(root)
        text = "".join(root.itertext())
        assert "<script>window.__pwned=1</script>" in text  # shown, as text
    report = a10g_report()
    bad = dataclasses.replace(report.ranks[0], host=HOSTILE)
    svg = figure_svg(rank_map_figure(dataclasses.replace(report, ranks=(bad,) + report.ranks[1:])))
    assert "<script" not in svg
    assert_inert(parse(svg))


def test_hand_made_figure_with_markup_everywhere_stays_inert():
    evil = '</text><script>alert(1)</script><foreignObject>&amp;"\x00\x07'
    fig = go.Figure(
        go.Heatmap(z=[[1, 2]], x=[evil, "b"], y=[evil], text=[[evil, evil]], texttemplate="%{text}", hovertext=[[evil, evil]])
    )
    fig.add_trace(go.Scatter(x=[0], y=[0], text=[evil], mode="markers+text", name=evil))
    fig.update_layout(
        title=evil,
        annotations=[dict(x=0, y=0, text=evil)],
        xaxis_title=evil,
        yaxis_title=evil,
        legend_title_text=evil,
        showlegend=True,
    )
    data = fig.to_plotly_json()  # colours plotly itself would refuse, as a dict from anywhere could hold
    data["data"][0]["colorscale"] = [[0, "red"], [1, 'blue" onload="x']]
    data["data"][1]["marker"] = {"color": '#fff" onclick="x', "symbol": '"><script>'}
    data["layout"]["shapes"] = [{"type": "rect", "x0": 0, "x1": 1, "y0": 0, "y1": 1, "fillcolor": "url(javascript:x)"}]
    svg = figure_svg(data)
    root = parse(svg)
    assert_inert(root)
    assert "<script" not in svg and "onclick" not in svg and "onload" not in svg and "javascript" not in svg


# --- bounded -----------------------------------------------------------------------------


def test_tooltips_stop_past_the_budget_and_huge_figures_stay_small():
    small = parse(figure_svg(topology_figure(ncclnb.load("hgx-h100"))))
    assert sum(1 for _ in small.iter(NS + "title")) >= 64
    side = 200  # 40,000 cells, each with a long hover
    hover = [[f"cell {i},{j} " + "x" * 300 for j in range(side)] for i in range(side)]
    fig = go.Figure(go.Heatmap(z=[[(i * j) % 7 for j in range(side)] for i in range(side)], hovertext=hover))
    svg = figure_svg(fig)
    root = parse(svg)
    assert len(svg) < 1_500_000, len(svg)
    assert len(heat_rects(root)) <= MAX_CELLS
    assert sum(1 for _ in root.iter(NS + "title")) <= 1  # the figure's own title at most
    assert "every 2th row" in "".join(root.itertext())
    # a cell count under MAX_CELLS but over the tooltip budget: every cell, no tooltips
    side = 60
    fig = go.Figure(go.Heatmap(z=[[1] * side] * side, hovertext=[["h"] * side] * side))
    root = parse(figure_svg(fig))
    assert len(heat_rects(root)) == side * side > TITLE_BUDGET
    assert not any(r.find(NS + "title") is not None for r in heat_rects(root))
    # 200,000 scatter points
    n = 200_000
    svg = figure_svg(
        go.Figure(
            go.Scatter(x=list(range(n)), y=[i % 13 for i in range(n)], mode="markers", hovertext=[str(i) for i in range(n)])
        )
    )
    assert len(svg) < 1_500_000 and "points: every" in svg


# --- what it does not draw -----------------------------------------------------------------


@pytest.mark.parametrize(
    "fig",
    [
        go.Figure(go.Pie(values=[1, 2])),
        go.Figure([go.Heatmap(z=[[1]]), go.Sankey()]),
        {"data": [{"type": "heatmap", "z": "not a matrix"}], "layout": {"height": "tall"}},
        {"data": "nonsense"},
        None,
        42,
    ],
)
def test_unsupported_or_odd_figures_give_a_note_not_an_exception(fig):
    svg = figure_svg(fig)
    root = parse(svg)
    assert_inert(root)
    if not (isinstance(fig, dict) and fig.get("layout")):  # a heatmap of no cells may be drawn empty
        assert "interactive-only" in "".join(root.itertext())


def test_bar_numeric_axes_and_continuous_scale():
    fig = go.Figure(go.Bar(x=["a", "b", "c"], y=[3, 1, 2], name="bars"))
    fig.update_layout(yaxis_title="count", xaxis_title="what")
    root = parse(figure_svg(fig))
    (bars,) = group(root, "bars")
    heights = [float(r.get("height")) for r in bars.findall(NS + "rect")]
    assert len(heights) == 3 and heights[0] > heights[2] > heights[1]
    assert {"count", "what", "0", "3"} <= set("".join(t.itertext()) for t in root.iter(NS + "text"))
    fig = go.Figure(go.Heatmap(z=[[0, 10], [5, None]], colorscale="Viridis"))
    root = parse(figure_svg(fig))
    fills = [r.get("fill") for r in heat_rects(root)]
    assert fills == ["#440154", "#fde725", "#21918c"] or (fills[0], fills[1]) == ("#440154", "#fde725")
    assert len(group(root, "colorbar")[0].findall(NS + "rect")) > 8  # a bar, not a list


# --- views and saved notebooks -------------------------------------------------------------


def test_views_carry_svg_and_no_plotly_js():
    from ncclnb.views import dashboard, show_ranks, show_topology

    for view, figures in ((show_topology("hgx-h100"), 1), (dashboard("hgx-h100"), 2), (show_ranks("seed000-2node-a10g"), 1)):
        bundle = view._repr_mimebundle_()
        assert set(bundle) == {"text/plain", "text/html"}
        html = bundle["text/html"]
        assert html.count('<svg xmlns="http://www.w3.org/2000/svg" class="ncclnb-figure"') == figures
        assert "<script" not in html and "plotly" not in html.lower()
        assert f'data-ncclnb-static="{view.static_id}"' in html  # what the live figure hides once drawn
        # the live figures' widget state: the figure, not plotly.js (which the kernel sends once a page)
        for live in view.live_figures:
            state = json.dumps(live.get_state(), default=str)
            assert live.figure["data"] and "plotly.js v" not in state and len(state) < 200_000


def test_an_executed_notebook_of_views_is_small_and_shows_every_figure_in_nbconvert_html(tmp_path):
    """As ``jupyter nbconvert --execute --to html`` runs it: widget state
    stored (nbclient's default), here with the first view's cell run again
    last. The notebook and the page stay small, the page shows every figure
    from the static copies (nbconvert takes a view's static output; the live
    widget is an output of its own), and no output carries plotly.js."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    from nbconvert import HTMLExporter

    cells = [
        "import ncclnb",
        "ncclnb.show_topology('hgx-h100')",
        "ncclnb.dashboard('hgx-h100')",
        "ncclnb.show_ranks('seed000-2node-a10g')",
    ]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    env = dict(IPYTHONDIR=str(tmp_path / "ipython"))
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        client = nbclient.NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}})
        assert client.store_widget_state  # what nbconvert --execute does
        with client.setup_kernel():
            for index in (0, 1, 2, 3, 1):  # out of order: the first view again, last
                client.execute_cell(nb.cells[index], index)
            client.set_widgets_metadata()
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    path = tmp_path / "views.ipynb"
    nbformat.write(nb, str(path))
    size = path.stat().st_size
    assert "application/vnd.jupyter.widget-state+json" in nb.metadata["widgets"]  # the state was stored
    assert size < 1_000_000, f"{size} bytes"
    html, _ = HTMLExporter(template_name="lab").from_notebook_node(nb)
    assert len(html.encode()) < 5_000_000
    assert html.count('class="ncclnb-figure"') == 4  # topology, dashboard's topology and NUMA, rank map
    assert "plotly.js v" not in html and "Plotly.newPlot" not in html and "plotly-latest" not in html
    for cell in nb.cells[1:]:
        static, *live = [o for o in cell.outputs if o.output_type == "display_data"]
        assert set(static.data) == {"text/plain", "text/html"} and "ncclnb-figure" in static.data["text/html"]
        assert live and all(set(o.data) == {"text/plain", "application/vnd.jupyter.widget-view+json"} for o in live)
