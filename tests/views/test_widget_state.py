"""The views' widget classes: their traitlets are the state a person
changes, the controls only set them, and a change redraws the live figure
with exactly the figure the pure builder makes for that state. Clicks go in
as the browser sends them (tests/_shown.py)."""

from __future__ import annotations

import re

import pytest
import traitlets

import ncclnb
from ncclnb.views.live import figure_json
from tests._shown import browser_click, drawn

pytest.importorskip("ipywidgets")


def test_topology_gpus_in_use_entry_says_what_it_ignored():
    from ncclnb.views import show_topology, topology_figure

    node = ncclnb.load("l40s-2socket")
    widget = show_topology(node).widget
    assert widget.gpus_note.value == ""
    widget.gpus.value = "2, 9,x"
    positions = [p for p, g in enumerate(node.gpus) if g.index == 2]
    assert widget.highlight == positions
    note = widget.gpus_note.value
    assert "ignored 9, x" in note and "not a GPU index of" in note and "0, 1, 2, 3" in note
    assert widget.live.figure == figure_json(topology_figure(node, positions))
    widget.gpus.value = "3"
    assert widget.gpus_note.value == "" and "GPU3" in drawn(widget.live).layout.title.text
    widget.gpus.value = ""  # empty: every GPU, nothing ignored
    assert widget.highlight is None and widget.gpus_note.value == ""


def test_topology_host_is_state_and_the_picker_sets_it():
    from ncclnb.views import show_topology, topology_figure

    report = ncclnb.load("two-node-h100")
    other = report.snapshots[1]
    widget = show_topology(report).widget
    picker = next(c for c in widget.children[0].children if "ncclnb-host" in c._dom_classes)
    picker.value = other.hostname
    assert widget.host == other.hostname and widget.snapshot is other
    assert widget.live.figure == figure_json(topology_figure(other, None, report.ranks))
    widget.gpus.value = "1"
    widget.host = report.snapshots[0].hostname  # the trait alone redraws too, with that host's own GPU set
    assert widget.snapshot is report.snapshots[0] and widget.highlight is None
    assert widget.live.figure == figure_json(topology_figure(report.snapshots[0], None, report.ranks))
    with pytest.raises(traitlets.TraitError, match="not a host"):
        widget.host = "no-such-host"
    assert widget.host == report.snapshots[0].hostname


def test_numa_picker_clears_the_previous_hosts_details_and_keeps_the_legend():
    from ncclnb.views import numa_figure, show_numa
    from ncclnb.views.numa import NUMA_HINT, affinity_findings

    report = ncclnb.load("two-node-h100")
    view = show_numa(report)
    widget = view.widget
    first = drawn(widget.live)
    trace = next(i for i, t in enumerate(first.data) if t.hovertext is not None and len(t.hovertext))
    browser_click(widget.live, trace, first.data[trace].x[0], first.data[trace].y[0], 0)
    assert widget.detail.value != NUMA_HINT  # the clicked element's details
    picker = widget.children[0]
    picker.value = report.snapshots[1].hostname
    assert widget.detail.value == NUMA_HINT
    fresh = numa_figure(report.snapshots[1], report.ranks, affinity_findings(report))
    assert widget.live.figure == figure_json(fresh)  # the whole figure, legend included
    assert [t.name for t in drawn(widget.live).data if t.showlegend is not False] == [
        t.name for t in fresh.data if t.showlegend is not False
    ]


def test_paged_maps_clamp_their_page_and_the_filter_redraws():
    from ncclnb.views import rank_map_figure, show_ranks

    report = ncclnb.load("seed000-2node-a10g")
    widget = show_ranks(report, page_size=1).widget
    assert widget.page_count() == 2 and widget.pager.max == 2
    widget.page = 1
    assert widget.live.figure == figure_json(rank_map_figure(report, 1, 1, rank_map=widget.rank_map))
    assert widget.pager.value == 2  # the page box follows the state
    widget.only_marked = True  # one node has anomalies: one page, and page 1 is gone
    assert widget.pager.max == 1 and widget.page == 0 and widget.pager.value == 1
    assert widget.live.figure == figure_json(rank_map_figure(report, 0, 1, True, rank_map=widget.rank_map))


def test_versions_toggle_is_state():
    from ncclnb.views import show_versions, version_table

    report = ncclnb.load("seed002-version-mismatch")
    widget = show_versions(report).widget
    widget.only.value = True
    assert widget.only_differing is True
    same_ids = lambda html: re.sub(r"T_[0-9a-f]+", "T_", html)  # noqa: E731 - pandas names each table anew
    assert same_ids(widget.table.value) == same_ids(version_table(report, only_differing=True).to_html())
    assert same_ids(widget.table.value) != same_ids(version_table(report).to_html())
