"""Views of large machines and jobs stay within a budget: at most 5 MB of
static HTML per view, never one cell or marker per GPU pair or per rank at
that size, anomalies first, and the detail of a block on a click.

Sizes are measured (bytes of HTML, cells of a heatmap, markers), work is
counted (lines executed in ncclnb and Python calls, at n and 4n), nothing is
timed. The large builds run in a child process under a memory limit, so a
view that grows with the square of the input fails there instead of taking
the test machine's memory; its deadline only catches a hang.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from _work import work

from tests._shown import browser_click, drawn

from ncclnb.views._common import LINK_ORDER

REPO = Path(__file__).resolve().parents[2]
BENCH = str(REPO / "bench")
BUDGET = 5 * 1024 * 1024
CHILD_MEMORY = 3 << 30

from large_inputs import huge_node, huge_report, many_ranks_report  # noqa: E402  (bench/ is on the path: conftest)


# --- helpers -------------------------------------------------------------------


def child(body: str, timeout: int = 600) -> dict:
    """Run ``body`` (which sets ``out``) in a child Python with RLIMIT_AS; its JSON."""
    code = (
        textwrap.dedent("""
        import json, resource, sys
        resource.setrlimit(resource.RLIMIT_AS, ({mem}, {mem}))
        sys.path.insert(0, {bench!r})
        from large_inputs import huge_node, huge_report, many_ranks_report
        from ncclnb.views import dashboard, show_numa, show_ranks, show_topology, show_versions
        out = {{}}
    """).format(mem=CHILD_MEMORY, bench=BENCH)
        + textwrap.dedent(body)
        + "\nprint(json.dumps(out))\n"
    )
    env = dict(os.environ, PYTHONHASHSEED="0")
    try:
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the views did not finish in {timeout} s")
    assert proc.returncode == 0, f"child failed (out of {CHILD_MEMORY >> 30} GiB?): {proc.stderr[-2000:]}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


class Name(str):
    """A hostname whose comparisons are Python calls, so the tracer counts a
    `host in list_of_hosts` scan that C would otherwise do unseen."""

    def __eq__(self, other):
        return str.__eq__(self, other)

    def __hash__(self):
        return str.__hash__(self)


def counted_names(report):
    names = {s.hostname: Name(s.hostname) for s in report.snapshots}
    snaps = tuple(dataclasses.replace(s, host=dataclasses.replace(s.host, hostname=names[s.hostname])) for s in report.snapshots)
    ranks = tuple(dataclasses.replace(r, host=Name(r.host)) for r in report.ranks)  # other objects, equal text
    return dataclasses.replace(report, snapshots=snaps, ranks=ranks)


def assert_linear(name, fn_of_n, n=400, factor=4, per_item=2_000):
    small = work(lambda: fn_of_n(n), budget=per_item * n)
    assert small <= per_item * n, f"{name}: more than {per_item} steps per item at n={n}"
    ceiling = 1.5 * factor * small + 20_000
    large = work(lambda: fn_of_n(n * factor), budget=ceiling)
    assert large <= ceiling, f"{name}: {small} steps at n={n}, more than {large} at n={n * factor}: not linear"


# --- topology ------------------------------------------------------------------


@pytest.mark.parametrize("gpus, matrix", [(500, 500), (2000, 2000), (20_000, 64)])
def test_topology_of_a_large_node_is_blocks_under_budget(gpus, matrix):
    out = child(f"""
        snap = huge_node({gpus}, matrix={matrix})
        view = show_topology(snap)
        heat = view.figure.data[0]
        out = dict(bytes=len(view.static_html().encode()), rows=len(heat.z), cols=len(heat.z[0]),
                   meta=view.figure.layout.meta, title=view.figure.layout.title.text, hover=heat.hovertext[0][1])
    """)
    assert out["bytes"] < BUDGET, f"{gpus} GPUs: {out['bytes'] / 1e6:.1f} MB of static HTML"
    assert out["rows"] <= 64 and out["cols"] <= 64 + 16, (out["rows"], out["cols"])
    assert out["meta"]["mode"] == "blocks" and "click a block" in out["title"]
    assert "links known" in out["hover"] and "click to zoom in" in out["hover"]


def test_topology_blocks_say_most_common_and_worst_class():
    from ncclnb.views.topology import topology_figure

    # boards of 8 on NVLink, NODE between boards of a NUMA node (250 GPUs each), SYS across NUMA nodes
    snap = huge_node(2_000, matrix=288)
    fig = topology_figure(snap)
    meta = fig.layout.meta
    assert meta["mode"] == "blocks" and len(meta["row_blocks"]) <= 48
    heat = fig.data[0]
    a, b = meta["row_blocks"][0]
    assert b - a == 48
    # a block with itself: 6 boards on NVLink, NODE between them
    diag = heat.hovertext[0][0]
    assert f"{48 * 47} of {48 * 47} links known: NV# {6 * 8 * 7} · NODE {48 * 47 - 6 * 8 * 7}" in diag
    assert "most common: <b>NODE</b> · worst: <b>NODE</b>" in diag
    # the block across the NUMA boundary at GPU 250: NODE most common, SYS the worst, marked in the cell
    k = next(i for i, (a, b) in enumerate(meta["row_blocks"]) if a < 250 < b)
    assert "most common: <b>NODE</b> · worst: <b>SYS</b>" in heat.hovertext[k][k]
    assert heat.z[k][k] == LINK_ORDER.index("NODE") and "▲SYS" in heat.text[k][k]
    # past the 288 GPUs the matrix holds, nothing is known, and the block says so
    last = len(meta["col_blocks"]) - 1
    assert heat.z[-1][last] == LINK_ORDER.index("?") and "0 of " in heat.hovertext[-1][last]
    assert heat.z[-1][last + 1] != LINK_ORDER.index("?")  # its GPU x NIC rows are there
    # small machines keep one cell per GPU pair (the 72-GPU NVL72 domain included)
    assert topology_figure(huge_node(72, matrix=72)).layout.meta["mode"] == "cells"


def test_topology_block_click_shows_its_gpus():
    pytest.importorskip("anywidget")
    from ncclnb.views import show_topology

    snap = huge_node(2_000, matrix=128)
    view = show_topology(snap)
    fw = view.widget.children[1]
    detail = view.widget.children[2]
    heat = drawn(fw).data[0]
    meta = drawn(fw).layout.meta
    assert meta["mode"] == "blocks"
    x, y = heat.x[1], heat.y[0]
    browser_click(fw, 0, x, y)
    fw = view.widget.children[1]
    zoomed = drawn(fw).layout.meta
    (r0, r1), (c0, c1) = meta["row_blocks"][0], meta["col_blocks"][1]
    assert zoomed["rows"] == [r0, r1] and zoomed["cols"] == [c0, c1]
    assert zoomed["mode"] == "cells"  # a block of at most 48 GPUs by 48 is drawn cell by cell
    assert len(drawn(fw).data[0].z) == r1 - r0 and f"GPU{c0}" in drawn(fw).data[0].x
    assert f"GPU{r0}–" in detail.value and "links known" in detail.value
    # a cell of the zoomed matrix: the detail of one pair, computed without the whole matrix
    cell = drawn(fw).data[0]
    browser_click(fw, 0, cell.x[0], cell.y[0])
    assert "↔" in detail.value and f"GPU{r0}" in detail.value
    # back to the whole node
    back = [c for c in view.widget.children[0].children if getattr(c, "description", "") == "whole node"]
    assert back, "a 'whole node' button once zoomed in"
    back[0].click()
    assert drawn(view.widget.children[1]).layout.meta["mode"] == "blocks"


def test_topology_work_is_linear_in_gpus():
    from ncclnb.views.topology import topology_figure

    assert_linear("topology_figure", lambda n: topology_figure(huge_node(n, matrix=64)))


# --- ranks, NUMA, versions, findings at 50,000 ranks ---------------------------------


def test_views_of_a_50000_rank_report_stay_under_budget():
    out = child("""
        report = huge_report(50_000)
        out["rank_count"] = len(report.ranks)
        for name, show in (("topology", show_topology), ("numa", show_numa), ("ranks", show_ranks),
                           ("versions", show_versions), ("dashboard", dashboard)):
            view = show(report)
            html = view.static_html()
            out[name] = dict(bytes=len(html.encode()), cards=html.count('class="ncclnb-finding"'),
                             more=html.count("ncclnb-findings-more"), anomalies=html.find("anomal"))
            if name == "ranks":
                heat = view.figure.data[0]
                out[name]["cells"] = len(heat.z) * len(heat.z[0])
    """)
    assert out["rank_count"] >= 50_000
    for name in ("topology", "numa", "ranks", "versions", "dashboard"):
        assert out[name]["bytes"] < BUDGET, f"{name}: {out[name]['bytes'] / 1e6:.1f} MB"
    assert out["ranks"]["cells"] <= 32 * 64
    # over a thousand findings (one per node whose ranks straddle NUMA nodes): the first ones as cards, the rest counted
    assert out["dashboard"]["cards"] <= 40 and out["dashboard"]["more"] == 1


def test_views_of_20000_ranks_on_one_node_stay_under_budget():
    out = child("""
        report = many_ranks_report(20_000)
        out["ranks"] = len(report.ranks)
        for name, show in (("numa", show_numa), ("ranks", show_ranks)):
            view = show(report)
            fig = view.figure
            out[name] = dict(bytes=len(view.static_html().encode()),
                             points=sum(len(t.x or ()) for t in fig.data if t.type == "scatter"),
                             cells=sum(len(t.z) * len(t.z[0]) for t in fig.data if t.type == "heatmap"),
                             title=fig.layout.title.text)
    """)
    for name in ("numa", "ranks"):
        assert out[name]["bytes"] < BUDGET, f"{name}: {out[name]['bytes'] / 1e6:.1f} MB"
    assert out["numa"]["points"] <= 8 * 12  # a marker per NUMA node and kind, not one per GPU or rank
    assert out["ranks"]["cells"] <= 64  # one node: its 20,000 slots folded into at most 64 blocks
    assert "duplicate" in out["ranks"]["title"]


def test_rank_map_blocks_put_the_worst_kind_first_and_click_lists_them():
    from ncclnb.views.ranks import KINDS, analyse_ranks, rank_map_figure, slot_block_html

    rep = many_ranks_report(2_000)
    rm = analyse_ranks(rep)
    fig = rank_map_figure(rep, rank_map=rm)
    heat = fig.data[0]
    blocks = fig.layout.meta["slot_blocks"]
    assert len(blocks) <= 64 and blocks[0][0] == 0 and blocks[-1][1] >= 2_000
    # every block holds a duplicate rank (one in 7): the worst finding's check colours it
    assert heat.z[0][0] == KINDS.index("rank_table_gaps")
    html = slot_block_html(rm, fig.layout.meta["nodes"][0], *blocks[0])
    assert "duplicate" in html and html.count("<li>") <= 21


def test_numa_of_20000_gpus_counts_per_node():
    from ncclnb.views.numa import numa_figure, numa_summary

    rep = many_ranks_report(20_000)
    snap = rep.snapshots[0]
    fig = numa_figure(snap, rep.ranks)
    gpus = next(t for t in fig.data if t.name == "GPUs")
    assert len(gpus.x) == 8 and "2500 GPUs" in " ".join(gpus.text)
    summary = numa_summary(snap, rep.ranks)
    assert len(summary) < 50_000 and "0-2499" in summary


def test_view_analyses_are_linear_in_ranks_and_hosts():
    from ncclnb.views._common import gpus_in_use
    from ncclnb.views.numa import rank_placements
    from ncclnb.views.ranks import analyse_ranks
    from ncclnb.views.versions import version_frame

    reports = {}

    def report(n):
        if n not in reports:
            reports[n] = counted_names(huge_report(n))
        return reports[n]

    def node(n):
        key = ("node", n)
        if key not in reports:
            reports[key] = many_ranks_report(n)
        return reports[key]

    assert_linear("analyse_ranks", lambda n: analyse_ranks(report(n)))
    assert_linear("version_frame", lambda n: version_frame(report(n)))
    assert_linear("rank_placements", lambda n: rank_placements(node(n).snapshots[0], node(n).ranks))
    assert_linear("gpus_in_use", lambda n: gpus_in_use(node(n).snapshots[0], node(n).ranks))


def test_findings_beyond_the_first_are_counted_not_drawn():
    from ncclnb.model import Evidence, Finding
    from ncclnb.views import findings_html

    findings = [
        Finding(
            rule="shm_too_small",
            category="shm_too_small",
            severity="error",
            confidence=0.8,
            title=f"/dev/shm too small on node-{i}",
            evidence=(Evidence("s", None, "x" * 5000),),
            hosts=(f"node-{i}",),
        )
        for i in range(5000)
    ]
    html = findings_html(findings)
    assert html.count('class="ncclnb-finding"') <= 40
    assert "4960 more" in html and "shm_too_small" in html
    assert len(html) < 400_000


def test_version_table_of_many_configurations_is_capped():
    from ncclnb.model import ClusterReport
    from ncclnb.views import version_table
    from viewdata import a10g_node

    snaps = tuple(a10g_node(f"n{i:04d}") for i in range(300))
    snaps += tuple(a10g_node(f"odd{i:04d}", env={"NCCL_ALGO": f"Ring{i}"}) for i in range(500))
    styler = version_table(ClusterReport(snapshots=snaps))
    assert len(styler.data) <= 48
    assert styler.data.index[0].startswith("300 nodes")
    html = styler.to_html()
    assert "453 more configurations (453 nodes) not shown" in html


def test_odd_digits_in_cuda_visible_devices_do_not_break_a_view():
    from ncclnb.views import show_topology
    from ncclnb.views._common import gpus_in_use

    snap = huge_node(16, matrix=16, env={"CUDA_VISIBLE_DEVICES": "1,¹,١"})
    assert gpus_in_use(snap) == [1]
    assert "GPUs in use: GPU1" in show_topology(snap).figure.layout.title.text


def test_host_picker_of_a_large_report_lists_a_few_and_takes_any_typed_host():
    from ncclnb.views import show_numa, show_topology

    report = huge_report(ranks=8 * 250)  # 250 nodes
    for show in (show_topology, show_numa):
        view = show(report)
        picker = (
            next(w for w in view.widget.children[0].children if "ncclnb-host" in w._dom_classes)
            if show is show_topology
            else view.widget.children[0]
        )
        assert type(picker).__name__ == "Combobox" and len(picker.options) == 200
        title = lambda: drawn(view.widget.children[1]).layout.title.text  # noqa: E731
        picker.value = "gpu-node-00249"  # past the suggestions
        assert "gpu-node-00249" in title()
        picker.value = "no-such-host"  # a typo changes nothing
        assert "gpu-node-00249" in title()
