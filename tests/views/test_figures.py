"""The pure figure builders: shapes, labels, colours for anomalies, escaping."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys

import pytest

import ncclnb
from ncclnb.model import ClusterReport, Diagnosis, Evidence, Finding, RankStatus
from ncclnb.views import (
    analyse_ranks,
    diagnosis_html,
    numa_figure,
    rank_map_figure,
    topology_figure,
    version_table,
)
from ncclnb.model.cpulist import parse_cpulist
from ncclnb.views._common import LINK_ORDER, gpus_in_use
from ncclnb.views.numa import numa_summary, rank_placements
from ncclnb.views.ranks import KINDS
from viewdata import HOSTILE, a10g_node, a10g_report, l40s_node, l40s_report


def test_import_ncclnb_stays_light():
    code = (
        "import sys, ncclnb, ncclnb.views, ncclnb.magics; "
        "print([m for m in ('plotly', 'pandas', 'ipywidgets', 'torch', 'pynvml') if m in sys.modules])"
    )
    # ncclnb.magics needs IPython, which is fine; the heavy view libraries load only when drawing
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


# --- topology ---------------------------------------------------------------


def test_topology_matrix_follows_topo_m_and_colours_by_class():
    fig = topology_figure(l40s_node())
    heat = fig.data[0]
    assert list(heat.y) == ["GPU0", "GPU1", "GPU2", "GPU3"]
    assert list(heat.x) == ["GPU0", "GPU1", "GPU2", "GPU3", "NIC0", "NIC1"]
    z = [list(r) for r in heat.z]
    code = {c: LINK_ORDER.index(c) for c in LINK_ORDER}
    assert z[0] == [code["X"], code["NODE"], code["SYS"], code["SYS"], code["SYS"], code["SYS"]]
    assert z[2][4] == code["NODE"] and z[3][2] == code["NODE"]
    # P2P status that is not OK is drawn in the cell, OK is not
    assert "✗CNS" in heat.text[0][2] and "✗" not in heat.text[0][1]
    assert "00000000:17:00.0" in heat.hovertext[0][1] and "NUMA 0" in heat.hovertext[0][1]
    assert "mlx5_0" in heat.hovertext[0][4]


def test_nvlink_counts_are_shown():
    snap = ncclnb.load("hgx-h100")
    heat = topology_figure(snap).data[0]
    assert "NV18" in heat.text[0][1]
    assert heat.z[0][1] == LINK_ORDER.index("NV#")


def test_gpus_in_use_from_env_and_rank_table():
    assert gpus_in_use(l40s_node()) is None
    assert gpus_in_use(l40s_node(env={"CUDA_VISIBLE_DEVICES": "2,3"})) == [2, 3]
    assert gpus_in_use(l40s_node(env={"CUDA_VISIBLE_DEVICES": "GPU-l40s-1"})) == [1]
    rep = l40s_report()
    assert gpus_in_use(rep.snapshots[0], rep.ranks) == [0, 1, 2, 3]
    one = dataclasses.replace(rep, ranks=rep.ranks[:1])
    assert gpus_in_use(one.snapshots[0], one.ranks) == [0]


def test_gpus_in_use_stand_out_and_others_are_dimmed():
    fig = topology_figure(l40s_node(env={"CUDA_VISIBLE_DEVICES": "2,3"}))
    ticks = list(fig.layout.yaxis.ticktext)
    assert ticks[2].startswith("<b>GPU2") and ticks[3].startswith("<b>GPU3")
    assert not ticks[0].startswith("<b>")
    dimmed = [s for s in fig.layout.shapes if s.type == "rect"]
    assert len(dimmed) == 4  # a row and a column for each of GPU0 and GPU1
    assert "GPUs in use: GPU2, GPU3" in fig.layout.title.text
    everything = topology_figure(l40s_node())
    assert not [s for s in everything.layout.shapes if s.type == "rect"]


def test_topology_escapes_hostile_names():
    fig = topology_figure(l40s_node(hostname=HOSTILE, gpu_name=HOSTILE))
    blob = fig.to_json()
    assert "<script>" not in blob and "<img" not in blob
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in fig.layout.title.text
    assert '&lt;img src=x onerror="window.__pwned=2"&gt;' in fig.layout.title.text
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;&lt;img s" in fig.data[0].hovertext[0][1]


def test_72_gpus_drop_cell_text_but_keep_hover():
    from synthetic import nvl72_node  # noqa: E402  (bench's synthetic node)

    fig = topology_figure(nvl72_node())
    assert len(fig.data[0].z) == 72 and fig.data[0].texttemplate is None
    assert "NV18" in fig.data[0].hovertext[5][7]


# --- NUMA -------------------------------------------------------------------


def test_parse_cpulist():
    assert parse_cpulist("0-3,8,10-11") == {0, 1, 2, 3, 8, 10, 11}
    assert parse_cpulist("") == set() and parse_cpulist("zz") == set()


def test_rank_affinity_against_gpu_node():
    rep = l40s_report()
    places = {p.rank.rank: p for p in rank_placements(rep.snapshots[0], rep.ranks)}
    assert places[0].status == "local" and places[0].gpu_node == 0
    assert places[1].status == "local" and places[1].gpu_node == 1
    # allowed every CPU of the host: not pinned, which rank_affinity_numa does not flag (it was "spans" here)
    assert places[2].status == "unpinned" and places[2].covers == (0, 1)
    assert places[3].status == "remote" and places[3].gpu_node == 1 and places[3].covers == (0,)


def test_numa_figure_columns_and_rank_colours():
    rep = l40s_report()
    fig = numa_figure(rep.snapshots[0], rep.ranks)
    heads = [a.text for a in fig.layout.annotations if "NUMA" in a.text]
    assert heads[0].startswith("<b>NUMA 0</b>") and heads[1].startswith("<b>NUMA 1</b>")
    traces = {t.name: t for t in fig.data}
    assert list(traces["GPUs"].text) == ["0", "1", "2", "3"]
    ranks = traces["ranks"]
    colour = dict(zip(ranks.text, ranks.marker.color))
    assert colour["3"] == "#d73027" and colour["0"] == "#1a9850" and colour["2"] == "#4575b4"
    # and a shape per status, so the colour is never the only thing that tells them apart
    shape = dict(zip(ranks.text, ranks.marker.symbol))
    assert shape == {"0": "circle", "1": "circle", "2": "circle-open", "3": "square"}
    keys = [t.name for t in fig.data if t.name and t.name.startswith("rank: ")]
    assert keys == ["rank: local", "rank: remote", "rank: unpinned"]
    # the summary table marks each rank's status with a sign as well as a colour
    table = numa_summary(rep.snapshots[0], rep.ranks)
    assert "●0" in table and "○2" in table and "■3" in table
    # a dashed line for each NUMA node an affinity covers besides its GPU's
    line = traces["affinity off the GPU's node"]
    assert sum(1 for v in line.x if v is None) == 2  # rank 2 -> node 1, rank 3 -> node 0
    assert "2 local, 1 unpinned, 1 remote" in fig.layout.title.text


def test_numa_figure_without_ranks_or_numa_info():
    snap = ncclnb.load("rtx2080ti-2x")
    fig = numa_figure(snap)
    assert [t.name for t in fig.data] == ["GPUs", "NICs"]
    assert len(fig.data[0].x) == len(snap.gpus)


# --- rank map ---------------------------------------------------------------


def test_rank_map_classifies_anomalies():
    """A cell's kind is the check whose finding names its rank (the worst one)."""
    rm = analyse_ranks(a10g_report())
    kinds = {(c.entry.rank if c.entry else ("missing", c.missing_rank)): c.kind for c in list(rm.cells.values()) + rm.unplaced}
    assert kinds[13] == "rank_out_of_range"
    assert kinds[5] == "rank_table_gaps"  # started twice
    assert kinds[4] == "ranks_share_gpu"  # rank 4 and rank 13 both on cuda:0 of node-b
    assert kinds[("missing", 6)] == "rank_table_gaps" and kinds[("missing", 7)] == "rank_table_gaps"  # never started
    assert kinds[0] == "ok" and kinds[11] == "ok"
    assert rm.world_size == 12 and rm.anomalous_nodes == [1]


def test_rank_map_wrong_device_and_unset_device():
    """The words are the check's: the finding's title, its severity's sign."""
    rep = l40s_report()
    rm = analyse_ranks(rep)
    by_rank = {c.entry.rank: c for c in rm.cells.values()}
    assert by_rank[1].kind == "local_rank_device" and by_rank[1].problems[0] == "2 ranks use a GPU other than cuda:LOCAL_RANK"
    assert by_rank[1].sign == "⚠"
    # rank 3 is pinned to NUMA 0 while its GPU3 sits on NUMA 1: the affinity check says so, and so does the map
    assert by_rank[3].kind == "rank_affinity_numa"
    unset = dataclasses.replace(rep, ranks=tuple(dataclasses.replace(r, cuda_index=None, gpu_uuid=None) for r in rep.ranks))
    cells = {c.entry.rank: c for c in analyse_ranks(unset).cells.values()}
    assert cells[3].kind == "local_rank_device" and cells[3].severity == "info" and cells[3].sign == "ℹ"
    assert "barrier guess happens to be their LOCAL_RANK" in cells[3].problems[0]


def test_rank_map_figure_colours_and_hover():
    fig = rank_map_figure(a10g_report())
    heat = fig.data[0]
    assert list(heat.x) == ["slot 0", "slot 1", "slot 2", "slot 3"]
    # node-b (the anomalous one) is drawn first
    assert fig.layout.yaxis.ticktext[0].startswith("1: node-b")
    assert heat.z[0][3] == KINDS.index("rank_out_of_range")
    assert "Invalid rank requested : 13/12" in heat.hovertext[0][3]
    # an anomalous cell carries its finding's severity as a sign besides its colour, an ok one none
    assert heat.text[0][3].startswith("13 ✖") and all(not set("✖⚠ℹ") & set(t) for t in heat.text[1])
    assert heat.z[1] == (KINDS.index("ok"),) * 4 or list(heat.z[1]) == [KINDS.index("ok")] * 4
    assert "missing" in fig.layout.title.text and "6, 7" in fig.layout.title.text
    legend = [t.name for t in fig.data[1:]]
    assert "rank at or above the world size" in legend and "duplicate or missing rank" in legend


def test_rank_map_world_size_layout_note():
    rep = ncclnb.load("seed000-2node-a10g")
    rm = analyse_ranks(rep)
    assert "WORLD_SIZE=4 but 2 nodes x 4 ranks per node = 8" in rm.layout_note  # world_size_vs_nodes' title
    assert rm.counts["rank_out_of_range"] == 4


def test_rank_map_1024_nodes_is_paginated_with_anomalies_first():
    from synthetic import big_report

    rep = big_report()
    rm = analyse_ranks(rep)
    fig = rank_map_figure(rep, rank_map=rm)
    assert len(fig.data[0].y) == 32  # one page of 32 nodes, not 1024 rows
    assert "page 1/32" in fig.layout.title.text
    first_nodes = fig.layout.meta["nodes"][: len(rm.anomalous_nodes)]
    assert first_nodes == rm.anomalous_nodes and len(rm.anomalous_nodes) >= 3
    only_bad = rank_map_figure(rep, only_anomalous=True, rank_map=rm)
    assert len(only_bad.data[0].y) == len(rm.anomalous_nodes)


def test_rank_map_escapes_hostnames():
    rep = a10g_report(third_host=HOSTILE)
    fig = rank_map_figure(rep)
    blob = fig.to_json()
    assert "<script>" not in blob and "<img" not in blob


# --- versions ---------------------------------------------------------------


def _cell_style(styler):
    styler._compute()
    return {(r, c): "".join(f"{k}:{v};" for k, v in props) for (r, c), props in styler.ctx.items() if props}


def test_version_table_highlights_the_minority():
    styler = version_table(a10g_report())
    frame = styler.data
    assert list(frame.index) == ["node-a", "node-b", "node-c"]
    columns = set(frame.columns)
    assert {"NVIDIA driver", "NCCL (used by torch)", "NCCL (torch)", "CUDA (torch build)", "NCCL_SOCKET_IFNAME"} <= columns
    styles = _cell_style(styler)
    col = list(frame.columns).index("NCCL (used by torch)")
    assert "#f8d7da" in styles[(2, col)]  # node-c, NCCL 2.14.3 against 2.19.3 twice
    assert (0, col) not in styles and (1, col) not in styles
    assert not any(c == list(frame.columns).index("NVIDIA driver") for (_, c) in styles)
    # what torch reported is a fact shown; the verdict is on the NCCL used (versions_differ's component)
    assert not any(c == list(frame.columns).index("NCCL (torch)") for (_, c) in styles)


def test_version_table_tie_is_amber_and_only_differing():
    rep = ncclnb.load("seed002-version-mismatch")
    styles = _cell_style(version_table(rep))
    assert styles and all("#fff3cd" in s for s in styles.values())
    slim = version_table(rep, only_differing=True).data
    assert "NCCL (used by torch)" in slim.columns and "NCCL_DEBUG" not in slim.columns


def test_version_table_groups_many_nodes():
    snaps = tuple(a10g_node(f"n{i:04d}") for i in range(40)) + (a10g_node("odd", nccl="2.14.3"),)
    styler = version_table(ClusterReport(snapshots=snaps))
    assert len(styler.data) == 2
    assert styler.data.index[0].startswith("40 nodes: n0000")
    styles = _cell_style(styler)
    assert any(r == 1 and "#f8d7da" in s for (r, _), s in styles.items())


def test_version_table_escapes_html():
    snap = a10g_node(HOSTILE, env={"NCCL_SOCKET_IFNAME": "<img src=x onerror=alert(1)>"})
    html = version_table(ClusterReport(snapshots=(snap, a10g_node("b")))).to_html()
    assert "<script>" not in html and "<img" not in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html


# --- diagnosis --------------------------------------------------------------


def _diagnosis(text=HOSTILE, docs="notebooks/guided/000-rank-world-size.ipynb"):
    f = Finding(
        rule="rank.invalid",
        category="rank_world_size_mismatch",
        severity="error",
        confidence=0.9,
        title="Rank 7 is beyond WORLD_SIZE 4",
        evidence=(Evidence("rank7.log", 12, text),),
        cause="two nodes x 4 ranks but WORLD_SIZE=4",
        fix="export WORLD_SIZE=8",
        docs=docs,
        ranks=(7,),
        hosts=("node-b",),
    )
    w = Finding(
        rule="net.plugin",
        category="net_plugin_missing",
        severity="info",
        confidence=0.3,
        title="libnccl-net.so not found (benign)",
    )
    return Diagnosis(
        findings=(f, w), ranks=(RankStatus(rank=7, host="node-b", first_error=text),), sources=("rank7.log",), lines_read=40
    )


def test_diagnosis_html_ranks_findings_and_escapes():
    html = diagnosis_html(_diagnosis())
    assert html.index("Rank 7 is beyond") < html.index("libnccl-net.so")
    assert "rank7.log:12" in html and "export WORLD_SIZE=8" in html
    assert 'href="notebooks/guided/000-rank-world-size.ipynb"' in html
    assert "<script>" not in html and "<img" not in html
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in html


def test_diagnosis_docs_link_refuses_javascript_urls():
    html = diagnosis_html(_diagnosis(docs="javascript:alert(1)"))
    assert "href" not in html and "javascript:alert(1)" in html


def test_diagnosis_from_the_doctor():
    diagnose = pytest.importorskip("ncclnb.doctor").diagnose
    d = diagnose("[rank7]: ncclInvalidUsage: Invalid rank requested : 7/4\n" + HOSTILE)
    html = diagnosis_html(d)
    assert "<script>" not in html and "<img" not in html
    assert d.findings and json.dumps(d.to_dict())
