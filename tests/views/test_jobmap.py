"""The job map: every node a row, its GPUs (by NUMA node), NICs and ranks;
marks come from findings only. Reports are built from the recorded
two-node-h100 and L40S machines; findings from ncclnb.check or written here
for rules the view has never heard of. Work is counted, never timed."""

from __future__ import annotations

import dataclasses
import json
import xml.etree.ElementTree as ET

import pytest
from _work import work

import ncclnb
from ncclnb.model import ClusterReport, Finding, RankEntry
from ncclnb.views import analyse_job, job_map_figure, show_job_map
from ncclnb.views.jobmap import CLASSES, GPU_COLUMNS, MARK_LABELS, PAGE_SIZE
from ncclnb.views.static import figure_svg
from viewdata import HOSTILE, l40s_node

go = pytest.importorskip("plotly.graph_objects")


def h100() -> ClusterReport:
    return ncclnb.load("two-node-h100")


def marks(fig) -> dict[str, list[str]]:
    """Severity label -> the hover texts of its diamonds."""
    return {t.name: list(t.hovertext) for t in fig.data if t.name in MARK_LABELS.values() and t.x and t.x[0] is not None}


def cell(fig, host: str, column: str):
    """(class, text, hover) of one cell: ``column`` as the x tick names it."""
    heat = fig.data[0]
    y = fig.layout.meta["nodes"].index(host)
    x = fig.layout.meta["columns"].index(column)
    return CLASSES[heat.z[y][x]], heat.text[y][x], heat.hovertext[y][x]


def finding(rule, ranks=(), hosts=(), severity="warning", title=None) -> Finding:
    return Finding(
        rule=rule,
        category="device_mapping",
        severity=severity,
        confidence=0.7,
        title=title or f"{rule} names ranks {list(ranks)} on {list(hosts)}",
        ranks=tuple(ranks),
        hosts=tuple(hosts),
    )


# --- what is drawn ------------------------------------------------------------------


def test_each_node_is_a_row_with_its_gpus_by_numa_node_and_each_rank_on_its_gpu():
    rep = h100()
    fig = job_map_figure(rep, findings=())
    assert fig.layout.meta["nodes"] == ["h100-node0", "h100-node1"]  # NODE_RANK order when nothing is named
    for entry in rep.ranks:
        snap = rep.snapshot(entry.host)
        cls, text, hover = cell(fig, entry.host, f"GPU{entry.cuda_index}")
        assert cls == f"numa{snap.gpus[entry.cuda_index].numa_node}"
        assert text.split("<br>")[0] == str(entry.rank)
        # the NUMA nodes its CPU affinity covers, read against the node's cpulists
        covered = [n.id for n in snap.host.numa_nodes if n.cpus == entry.cpu_affinity]
        assert f"cpu N{covered[0]}" in text and f"rank {entry.rank}</b>" in hover
    legend = {t.name for t in fig.data if t.type == "scatter"}
    assert {"NUMA 0", "NUMA 1"} <= legend


def test_no_findings_marks_nothing():
    fig = job_map_figure(h100(), findings=())
    assert marks(fig) == {}
    assert all(CLASSES[row[0]] == "node_ok" for row in fig.data[0].z)
    assert "no findings given" in fig.layout.title.text
    assert not any("⚠" in t for t in fig.layout.yaxis.ticktext)


def test_rank_out_of_range_marks_that_rank_and_its_node_first():
    rep = h100()
    bad = dataclasses.replace(rep.ranks[13], rank=19)  # h100-node1, LOCAL_RANK 5: RANK 19 of WORLD_SIZE 16
    rep = dataclasses.replace(rep, ranks=rep.ranks[:13] + (bad,) + rep.ranks[14:])
    found = ncclnb.check(rep, only="rank_out_of_range")
    assert [f.ranks for f in found] == [(19,)]
    fig = job_map_figure(rep, found)
    assert fig.layout.meta["nodes"][0] == "h100-node1"
    (hovers,) = marks(fig).values()
    assert len(hovers) == 1 and "rank 19</b>" in hovers[0] and found[0].title.split(":")[0] in hovers[0]
    cls, text, hover = cell(fig, "h100-node1", "GPU5")
    assert text.startswith("19") and "rank_out_of_range" in hover
    assert cell(fig, "h100-node1", "node")[0] == "node_error"
    assert cell(fig, "h100-node0", "node")[0] == "node_ok"


def test_any_rule_naming_ranks_or_hosts_is_drawn_without_a_view_change():
    rep = h100()
    found = [
        finding("rank_affinity_numa", ranks=(3,), hosts=("h100-node0",), title="rank 3's CPUs are far"),
        finding("rank_nic_far", hosts=("h100-node1",), severity="info", title="node1's NIC is far"),
        finding("rank_affinity_numa", ranks=(12,), hosts=("h100-node0",)),
    ]  # rank 12 is on node1: not it
    fig = job_map_figure(rep, found)
    got = marks(fig)
    assert list(got) == [MARK_LABELS["warning"]] and len(got[MARK_LABELS["warning"]]) == 1
    assert "rank 3's CPUs are far" in got[MARK_LABELS["warning"]][0]
    assert cell(fig, "h100-node1", "node")[0] == "node_info"
    assert "node1's NIC is far" in cell(fig, "h100-node1", "node")[2]
    assert "rank_nic_far" not in cell(fig, "h100-node1", "GPU4")[2]  # a host finding marks the node, not its ranks
    assert fig.layout.meta["nodes"] == ["h100-node0", "h100-node1"]  # warning before info


def test_report_findings_are_the_default():
    rep = dataclasses.replace(h100(), findings=(finding("rank_nic_far", ranks=(9,), severity="error"),))
    fig = job_map_figure(rep)
    assert MARK_LABELS["error"] in marks(fig)
    assert fig.layout.meta["nodes"][0] == "h100-node1"


def test_ranks_named_but_absent_and_hosts_without_snapshot_are_said():
    rep = h100()
    ghost = tuple(
        RankEntry(rank=16 + k, host="ghost-node", local_rank=k, world_size=18, cuda_index=k if k else None) for k in range(2)
    )
    rep = dataclasses.replace(rep, ranks=rep.ranks + ghost)
    found = [finding("rank_table_gaps", ranks=(40, 41), severity="error")]
    fig = job_map_figure(rep, found)
    title = fig.layout.title.text
    assert "not in the table: 40-41" in title and "no snapshot of 1 host" in title
    assert "(no snapshot)" in fig.layout.yaxis.ticktext[fig.layout.meta["nodes"].index("ghost-node")]
    cls, text, hover = cell(fig, "ghost-node", "GPU1")
    assert cls == "no_snapshot" and text.startswith("17") and "physical GPU is not known" in hover
    cls, text, hover = cell(fig, "ghost-node", "no GPU")  # no CUDA index: nowhere to put it but here
    assert text.startswith("16") and "not known" in hover
    assert "no snapshot of this host" in cell(fig, "ghost-node", "node")[2]


def test_missing_numa_facts_are_said_not_guessed():
    snap = l40s_node()
    snap = dataclasses.replace(
        snap,
        gpus=tuple(dataclasses.replace(g, numa_node=None) for g in snap.gpus),
        host=dataclasses.replace(snap.host, numa_nodes=()),
    )
    rep = ClusterReport(snapshots=(snap,), ranks=(RankEntry(0, snap.hostname, 0, 1, cuda_index=0, cpu_affinity="0-3"),))
    fig = job_map_figure(rep, ())
    cls, text, _ = cell(fig, snap.hostname, "GPU0")
    assert cls == "numa?" and "cpu not known" in text and "cpu N" not in text
    assert "NUMA node not known for 4 GPUs" in fig.layout.title.text
    assert "NUMA nodes" in cell(fig, snap.hostname, "node")[2]


def test_hostile_hostnames_and_titles_are_escaped_everywhere():
    snap = l40s_node(hostname=HOSTILE)
    rep = ClusterReport(
        snapshots=(snap,),
        ranks=tuple(RankEntry(r, HOSTILE, r, 4, cuda_index=r, cpu_affinity="0,2", nic=HOSTILE) for r in range(4)),
    )
    found = [finding("rank_nic_far", ranks=(1,), hosts=(HOSTILE,), title=f"NIC far on {HOSTILE}")]
    fig = job_map_figure(rep, found)
    shown = fig.to_plotly_json()
    assert shown["layout"].pop("meta")["nodes"] == [HOSTILE]  # data for the click handler, never rendered
    blob = json.dumps(shown, default=str)
    assert "<script>" not in blob and "<img" not in blob and "&lt;script&gt;" in blob
    view = show_job_map(rep, found)
    html = view.static_html()
    assert "<script>" not in html and "<img" not in html
    root = ET.fromstring(figure_svg(fig))
    assert not [el for el in root.iter() if el.tag.endswith(("script", "foreignObject", "image"))]


# --- scale -----------------------------------------------------------------------------


def test_1024_nodes_of_8_are_paged_with_the_named_nodes_first():
    from synthetic import big_report

    rep = big_report()
    found = ncclnb.check(rep)
    named = {h for f in found for h in f.hosts} | {r.host for f in found for r in rep.ranks if r.rank in f.ranks}
    assert 0 < len(named) < PAGE_SIZE
    jm = analyse_job(rep, found)
    fig = job_map_figure(rep, page_size=PAGE_SIZE, job_map=jm)
    meta = fig.layout.meta
    assert meta["pages"] == 1024 // PAGE_SIZE and len(meta["nodes"]) == PAGE_SIZE
    assert set(meta["nodes"][: len(named)]) == named
    heat = fig.data[0]
    assert len(heat.z) == PAGE_SIZE and len(heat.z[0]) <= 1 + 8 + 8 + 1
    last = job_map_figure(rep, page=meta["pages"] - 1, job_map=jm).layout.meta
    assert last["page"] == meta["pages"] - 1 and not set(last["nodes"]) & named
    only = job_map_figure(rep, only_marked=True, job_map=jm).layout.meta
    assert only["pages"] == 1 and set(only["nodes"]) == named


def test_the_widget_pages_and_click_shows_a_cell():
    from synthetic import big_report

    from tests._shown import browser_click, drawn

    rep = big_report()
    view = show_job_map(rep, ncclnb.check(rep), page_size=16)
    summary, controls, fw, detail = view.widget.children
    pager, only = controls.children
    assert pager.max == 64 and "ncclnb-jobmap-page" in pager._dom_classes
    pytest.importorskip("anywidget")
    first = list(drawn(fw).layout.meta["nodes"])
    pager.value = 3
    assert drawn(fw).layout.meta["page"] == 2 and list(drawn(fw).layout.meta["nodes"]) != first
    only.value = True
    assert pager.max == 1 and drawn(fw).layout.meta["pages"] == 1
    heat = drawn(fw).data[0]
    browser_click(fw, 0, heat.x[1], heat.y[0])
    assert "rank" in detail.value and drawn(fw).layout.meta["nodes"][0] in detail.value


def test_wide_nodes_fold_their_gpus_past_the_column_limit():
    from large_inputs import huge_node

    snap = huge_node(GPU_COLUMNS + 40, matrix=8)
    rep = ClusterReport(snapshots=(snap,), ranks=(RankEntry(0, snap.hostname, 0, 1, gpu_uuid=snap.gpus[-1].uuid),))
    fig = job_map_figure(rep, ())
    cols = fig.layout.meta["columns"]
    assert cols.count(f"GPU{GPU_COLUMNS}+") == 1 and len([c for c in cols if c.startswith("GPU")]) == GPU_COLUMNS + 1
    assert cell(fig, snap.hostname, f"GPU{GPU_COLUMNS}+")[1].startswith("0")


def test_job_map_work_is_linear_in_ranks():
    from large_inputs import huge_report
    from test_large import assert_linear, counted_names

    cases = {}

    def case(n):
        if n not in cases:
            rep = counted_names(huge_report(n))
            cases[n] = (rep, ncclnb.check(rep))
        return cases[n]

    def build(n):
        rep, found = case(n)
        job_map_figure(rep, job_map=analyse_job(rep, found))

    assert_linear("job map", build)
    # once analysed, a page costs its own nodes, not the job: page 0 of a job 4x larger costs about the same
    pages = {}
    for n in (400, 1600):
        jm = analyse_job(*case(n))
        pages[n] = work(lambda: job_map_figure(case(n)[0], job_map=jm))
    assert pages[1600] <= 1.5 * pages[400], pages


def test_rank_affinity_numa_from_the_real_check_marks_the_pinned_rank():
    rep = h100()
    far = rep.snapshot("h100-node0").host.numa_nodes[1].cpus
    moved = dataclasses.replace(rep.ranks[3], cpu_affinity=far)  # GPU3 is on NUMA 0, its CPUs on NUMA 1
    rep = dataclasses.replace(rep, ranks=rep.ranks[:3] + (moved,) + rep.ranks[4:])
    found = ncclnb.check(rep, only="rank_affinity_numa")
    assert [f.ranks for f in found] == [(3,)]
    fig = job_map_figure(rep, found)
    (hovers,) = marks(fig).values()
    assert len(hovers) == 1 and "rank 3</b>" in hovers[0]
    cls, text, hover = cell(fig, "h100-node0", "GPU3")
    assert cls == "numa0" and "cpu N1" in text and "rank_affinity_numa" in hover


def test_a_rank_is_placed_by_its_bus_id_as_the_checks_read_it():
    snap = l40s_node()
    sysfs_form = snap.gpus[2].pci_bus_id.lower()[4:]  # "0000:57:00.0", as sysfs writes it
    rank = RankEntry(0, snap.hostname, 0, 1, bus_id=sysfs_form, numa_node=1)
    fig = job_map_figure(ClusterReport(snapshots=(snap,), ranks=(rank,)), ())
    cls, text, hover = cell(fig, snap.hostname, "GPU2")
    assert text.startswith("0") and cls == "numa1" and "NUMA 1" in hover
    assert "no GPU" not in fig.layout.meta["columns"]


def test_a_severity_is_a_shape_and_a_sign_not_only_a_colour():
    from ncclnb.views.jobmap import MARK_COLOURS, SEVERITY_SIGNS

    rep = h100()
    found = [
        finding("rank_affinity_numa", ranks=(3,), hosts=(), severity="error", title="rank 3 errs"),
        finding("rank_affinity_numa", ranks=(12,), hosts=(), severity="warning", title="rank 12 warns"),
        finding("rank_nic_far", hosts=("h100-node1",), severity="info", title="node1's NIC is far"),
    ]
    fig = job_map_figure(rep, found)
    drawn = {t.name: t.marker for t in fig.data if t.name in MARK_LABELS.values() and t.x and t.x[0] is not None}
    assert set(drawn) == {MARK_LABELS["error"], MARK_LABELS["warning"]}
    assert len({m.symbol for m in drawn.values()}) == len({m.color for m in drawn.values()}) == 2
    assert {m.color for m in drawn.values()} == {MARK_COLOURS["error"], MARK_COLOURS["warning"]}
    # the node cell and the row label carry the worst severity's sign beside its colour
    signs = {cell(fig, h, "node")[1][-1] for h in ("h100-node0", "h100-node1")}
    assert signs == {SEVERITY_SIGNS["error"], SEVERITY_SIGNS["warning"]}
    ticks = list(fig.layout.yaxis.ticktext)
    assert any(SEVERITY_SIGNS["error"] in t for t in ticks) and any(SEVERITY_SIGNS["warning"] in t for t in ticks)
