"""The link results view: busbw by size per collective against the reference
band of ncclnb.model.bandwidth, and the point-to-point pairs, those named by
``link_*`` findings highlighted. Link tests are built here with nccl-tests'
formulas (algbw = size / time; busbw = algbw x 2(n-1)/n for all_reduce,
(n-1)/n for all_gather); reports from the recorded machines."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest

import ncclnb
from ncclnb.model import ClusterReport, Finding
from ncclnb.model.bandwidth import reference_for
from ncclnb.model.cluster import LinkMeasurement, LinkTest, PairMeasurement, PeerTransport
from ncclnb.views import busbw_figure, pairs_figure, show_links
from ncclnb.views.links import NO_LINK_TEST, PAIR_COLOURS, PAIRS_SHOWN, size_text
from ncclnb.views.static import figure_svg
from viewdata import HOSTILE

go = pytest.importorskip("plotly.graph_objects")

FACTOR = {"all_reduce": lambda n: 2 * (n - 1) / n, "all_gather": lambda n: (n - 1) / n}


def measurements(world: int, peak_gbps: float, sizes=range(3, 27, 2), collectives=("all_reduce", "all_gather")):
    """A latency + bandwidth curve per collective: time = 8 µs + size / peak."""
    out = []
    for coll in collectives:
        for k in sizes:
            size = 1 << k
            time_us = 8.0 + size / (peak_gbps * 1e3)
            algbw = size / time_us / 1e3
            out.append(LinkMeasurement(coll, size, time_us, algbw, algbw * FACTOR[coll](world)))
    return tuple(out)


def ring(report: ClusterReport, slow: int = -1, size: int = 1 << 26):
    """Each rank sends to the rank one node further on; ``slow`` takes 4x longer."""
    hosts = {r.rank: r.host for r in report.ranks}
    n, per = len(hosts), len(hosts) // len(report.snapshots)
    out = []
    for src in range(n):
        dst = (src + per) % n
        t = 3000.0 * (4 if src == slow else 1)
        out.append(PairMeasurement(src, dst, hosts[src], hosts[dst], size, t, size / t / 1e3))
    return tuple(out)


def two_nodes(slow: int = 3, findings=()) -> ClusterReport:
    rep = ncclnb.load("two-node-h100")
    test = LinkTest(
        "nccl",
        "cuda",
        16,
        2,
        20,
        measurements(16, 40.0),
        ring(rep, slow),
        (PeerTransport(0, 8, "NET/IB", 2, "0[0] -> 8[0] [send] via NET/IB/0"),),
        {"NCCL_ALGO": "Ring"},
    )
    return dataclasses.replace(rep, links=(test,), findings=tuple(findings))


def one_h100_node() -> ClusterReport:
    """The recorded 8x H100 SXM node with its GPUs named as NVML names them: the table has a row for it."""
    snap = ncclnb.load("hgx-h100")
    snap = dataclasses.replace(snap, gpus=tuple(dataclasses.replace(g, name="NVIDIA H100 80GB HBM3") for g in snap.gpus))
    test = LinkTest("nccl", "cuda", 8, 1, 20, measurements(8, 420.0, sizes=range(3, 31, 3)))
    return ClusterReport(snapshots=(snap,), links=(test,))


def slow_pair(src: int, dst: int, rule="link_slow_pair") -> Finding:
    return Finding(
        rule=rule,
        category="p2p_topology",
        severity="warning",
        confidence=0.7,
        title=f"the link from rank {src} to rank {dst} is slow",
        ranks=(src, dst),
    )


# --- busbw by size ------------------------------------------------------------------


def test_one_line_per_collective_on_a_log2_size_axis():
    rep = two_nodes()
    fig = busbw_figure(rep, ())
    lines = {t.name: t for t in fig.data}
    assert set(lines) == {"all_reduce", "all_gather"}
    for coll, trace in lines.items():
        ms = sorted((m for m in rep.links[0].results if m.collective == coll), key=lambda m: m.size_bytes)
        assert list(trace.x) == [math.log2(m.size_bytes) for m in ms]
        assert list(trace.y) == [m.busbw_gbps for m in ms]
        assert size_text(ms[-1].size_bytes) in trace.hovertext[-1]
    ticks = dict(zip(fig.layout.xaxis.tickvals, fig.layout.xaxis.ticktext))
    assert ticks[3.0] == "8 B" and ticks[25.0] == "32 MiB"


def test_the_reference_band_is_the_models_row():
    rep = one_h100_node()
    row = reference_for(rep.links[0], rep.snapshots)
    assert row is not None  # 8x H100 SXM, NCCL's default: the table's NVLS row
    fig = busbw_figure(rep, ())
    (band,) = [s for s in fig.layout.shapes if s.type == "rect"]
    assert (band.y0, band.y1) == (row.low_gbps, row.high_gbps)
    assert band.x0 == math.log2(row.min_size_bytes)
    assert row.hardware in fig.layout.annotations[0].text and row.basis in fig.layout.annotations[0].text
    assert fig.layout.meta["references"]["all_reduce"] == row.id
    assert fig.layout.yaxis.range[1] >= row.high_gbps


def test_no_reference_says_why():
    fig = busbw_figure(two_nodes(), ())
    assert not [s for s in fig.layout.shapes or () if s.type == "rect"]
    title = fig.layout.title.text
    assert "all_reduce: no reference band (" in title and "all_gather: no reference band (" in title


def test_no_link_test_is_said_not_drawn_blank():
    rep = ncclnb.load("two-node-h100")
    with pytest.raises(ValueError, match=r"no link test in this report \(ran with --no-link-test\?\)"):
        busbw_figure(rep)
    view = show_links(rep)
    assert view.figure is None and NO_LINK_TEST in view.static_html() and NO_LINK_TEST in view.text
    snap_view = show_links(ncclnb.load("hgx-h100"))
    assert NO_LINK_TEST in snap_view.static_html()


def test_what_was_not_measured_is_said():
    rep = two_nodes()
    test = dataclasses.replace(rep.links[0], results=(), pairs=(), missing={"pairs": "one node: no pair to test"})
    rep = dataclasses.replace(rep, links=(test,))
    assert "not measured: pairs (one node: no pair to test)" in busbw_figure(rep, ()).layout.title.text
    assert "one node: no pair to test" in pairs_figure(rep, ()).layout.title.text


# --- pairs -----------------------------------------------------------------------------


def test_pairs_named_by_link_findings_are_highlighted_and_only_those():
    rep = two_nodes(slow=3)
    slow = rep.links[0].pairs[3]
    other = Finding(
        rule="ranks_share_gpu", category="device_mapping", severity="error", confidence=0.9, title="not about links", ranks=(0, 8)
    )
    fig = pairs_figure(rep, [slow_pair(slow.src_rank, slow.dst_rank), other])
    bars = fig.data[0]
    red = [lab for lab, c in zip(bars.x, bars.marker.color) if c == PAIR_COLOURS["named"]]
    assert red == [f"{slow.src_rank}→{slow.dst_rank}"]  # the finding's direction only: 11→3 ran at full speed
    # and a shape, not the colour alone: an x on top of each named bar, and only there
    (mark,) = [t for t in fig.data if t.type == "scatter" and t.x != (None,)]
    assert list(mark.x) == red and mark.marker.symbol == "x" and list(mark.y) == [slow.busbw_gbps]
    assert not [t for t in pairs_figure(rep, [other]).data if t.type == "scatter" and t.x != (None,)]
    k = list(bars.x).index(f"{slow.src_rank}→{slow.dst_rank}")
    assert "is slow" in bars.hovertext[k] and bars.y[k] == slow.busbw_gbps
    assert [list(p) for p in fig.layout.meta["named"]] and "link_slow_pair" not in fig.layout.title.text
    # no link finding: nothing red
    assert PAIR_COLOURS["named"] not in pairs_figure(rep, [other]).data[0].marker.color


def test_the_real_slow_pair_check_names_the_slow_pair():
    rep = two_nodes(slow=6)
    found = ncclnb.check(rep, only="link_slow_pair")
    slow = rep.links[0].pairs[6]
    assert [f.ranks for f in found] == [(slow.src_rank, slow.dst_rank)]
    bars = pairs_figure(rep, found).data[0]
    assert [lab for lab, c in zip(bars.x, bars.marker.color) if c == PAIR_COLOURS["named"]] == [
        f"{slow.src_rank}→{slow.dst_rank}"
    ]
    assert "1 link finding" in busbw_figure(rep, found).layout.title.text


def test_the_reports_own_findings_are_the_default():
    rep = two_nodes(slow=5)
    p = rep.links[0].pairs[5]
    rep = dataclasses.replace(rep, findings=(slow_pair(p.src_rank, p.dst_rank),))
    assert PAIR_COLOURS["named"] in pairs_figure(rep).data[0].marker.color
    assert "1 link finding" in busbw_figure(rep).layout.title.text
    view = show_links(rep)
    assert "link_slow_pair" in view.static_html() and "1 link finding" in view.text


def test_many_pairs_show_the_named_and_the_slowest():
    rep = two_nodes()
    hosts = ("h100-node0", "h100-node1")
    pairs = tuple(
        PairMeasurement(i, i + 1, hosts[i % 2], hosts[(i + 1) % 2], 1 << 20, 100.0 + i, 10.0 - i * 1e-3) for i in range(300)
    )
    rep = dataclasses.replace(rep, links=(dataclasses.replace(rep.links[0], pairs=pairs),))
    fig = pairs_figure(rep, [slow_pair(10, 11)])
    shown = [tuple(p) for p in fig.layout.meta["pairs"]]
    assert len(shown) == PAIRS_SHOWN and (10, 11) in shown
    assert shown == sorted(shown)  # ring order
    assert (299, 300) in shown and (20, 21) not in shown  # the slowest (highest i), and the named one
    assert f"showing {PAIRS_SHOWN}" in fig.layout.title.text


def test_hostile_hostnames_are_escaped():
    rep = two_nodes()
    pairs = tuple(dataclasses.replace(p, src_host=HOSTILE) for p in rep.links[0].pairs)
    rep = dataclasses.replace(rep, links=(dataclasses.replace(rep.links[0], pairs=pairs, env={"NCCL_X": HOSTILE}),))
    for fig in (busbw_figure(rep, ()), pairs_figure(rep, ())):
        blob = json.dumps(fig.to_plotly_json(), default=str)
        assert "<script>" not in blob and "<img" not in blob
        assert "<script>" not in figure_svg(fig)
    html = show_links(rep, ()).static_html()
    assert "<script>" not in html and "<img" not in html


# --- the widget ---------------------------------------------------------------------------


def test_the_widget_switches_between_link_tests():
    rep = two_nodes()
    gloo = LinkTest("gloo", "cpu", 16, 2, 5, measurements(16, 1.0, collectives=("all_reduce",)))
    rep = dataclasses.replace(rep, links=rep.links + (gloo,))
    view = show_links(rep, ())
    picker, summary, busbw, pairs, detail = view.widget.children
    assert "ncclnb-links" in view.widget._dom_classes
    assert len(view.parts) == 1 and view.parts[0].figure is not None  # the pairs' static copy
    pytest.importorskip("anywidget")
    from tests._shown import browser_click, drawn

    assert {t.name for t in drawn(busbw).data} == {"all_reduce", "all_gather"}
    picker.value = 1
    assert [t.name for t in drawn(busbw).data] == ["all_reduce"] and "gloo on cpu" in drawn(busbw).layout.title.text
    assert "gloo on cpu" in summary.value
    line = drawn(busbw).data[0]
    browser_click(busbw, 0, line.x[2], line.y[2], 2)
    assert "busbw" in detail.value and "all_reduce" in detail.value
